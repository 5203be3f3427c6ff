"""Lesson 03's exercise checkers accept the right answer and reject the wrong ones a learner
typically writes; its autograd-graph diagram draws a real graph and rejects a tensor without one."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure

from helpers.diagrams.graph import data_inputs, draw_graph, graph_nodes
from helpers.exercises import lesson03


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def small_data() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return torch.randn(8, 3, generator=gen), torch.randn(8, generator=gen)


def fresh_v() -> torch.Tensor:
    return torch.tensor([0.5, -1.0, 2.0], requires_grad=True)


def right_answer(X, y, v) -> tuple[torch.Tensor, torch.Tensor]:
    loss = ((X @ v - y) ** 2).mean()
    loss.backward()
    return loss, 2 * X.T @ (X @ v.detach() - y) / len(X)


def test_exercise_1_accepts_the_right_answer(capsys):
    X, y = small_data()
    v = fresh_v()
    loss, formula = right_answer(X, y, v)
    assert verdict(capsys, lambda: lesson03.exercise_1(X, y, v, loss, formula)).startswith("✓")


def test_exercise_1_rejects_the_starter_and_a_missing_backward(capsys):
    X, y = small_data()
    v = fresh_v()
    out = verdict(capsys, lambda: lesson03.exercise_1(X, y, v, ..., ...))
    assert out.startswith("✗ fill in `sq_loss`")
    loss = ((X @ v - y) ** 2).mean()  # no backward()
    formula = 2 * X.T @ (X @ v.detach() - y) / len(X)
    out = verdict(capsys, lambda: lesson03.exercise_1(X, y, v, loss, formula))
    assert out.startswith("✗ v.grad is None")


def test_exercise_1_names_a_gradient_accumulated_twice(capsys):
    X, y = small_data()
    v = fresh_v()
    loss, formula = right_answer(X, y, v)
    ((X @ v - y) ** 2).mean().backward()  # the learner ran the cell again
    out = verdict(capsys, lambda: lesson03.exercise_1(X, y, v, loss, formula))
    assert out.startswith("✗ v.grad is 2 times the gradient")


def test_exercise_1_rejects_a_formula_without_the_factor_2_and_a_sum_loss(capsys):
    X, y = small_data()
    v = fresh_v()
    loss, formula = right_answer(X, y, v)
    out = verdict(capsys, lambda: lesson03.exercise_1(X, y, v, loss, formula / 2))
    assert out.startswith("✗ `by_formula` differs")
    v = fresh_v()
    summed = ((X @ v - y) ** 2).sum()
    summed.backward()
    out = verdict(capsys, lambda: lesson03.exercise_1(X, y, v, summed, formula))
    assert out.startswith("✗ `sq_loss` is")


def right_step(params, lr):
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


def test_exercise_2_accepts_the_update_with_grad_set_to_none_or_zeroed(capsys):
    assert verdict(capsys, lambda: lesson03.exercise_2(right_step)).startswith("✓")

    def zeroing(params, lr):
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad.zero_()

    assert verdict(capsys, lambda: lesson03.exercise_2(zeroing)).startswith("✓")


def test_exercise_2_rejects_the_typical_wrong_steps(capsys):
    def starter(params, lr):
        """Move each tensor in params against its gradient; reset its gradient."""
        ...

    def passing(params, lr):
        pass

    def outside_no_grad(params, lr):
        for p in params:
            p -= lr * p.grad

    def rebinding(params, lr):
        for p in params:
            p = p - lr * p.grad  # rebinds the name: the bug on purpose

    def no_reset(params, lr):
        with torch.no_grad():
            for p in params:
                p -= lr * p.grad

    def uphill(params, lr):
        with torch.no_grad():
            for p in params:
                p += lr * p.grad
                p.grad = None

    cases = {
        starter: "✗ fill in `sgd_step` (it changed nothing)",
        outside_no_grad: "✗ updating w in place raised",
        passing: "✗ fill in `sgd_step` (it changed nothing)",
        rebinding: "✗ w did not change: change the tensors in params in place",
        no_reset: "✗ the gradients are still there",
        uphill: "✗ `w after the step` differs",
    }
    for step, start in cases.items():
        out = verdict(capsys, lambda step=step: lesson03.exercise_2(step))
        assert out.startswith(start), (step.__name__, out)
    assert verdict(capsys, lambda: lesson03.exercise_2(...)).startswith("✗ fill in")


def logistic_loss() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    X, y = torch.randn(6, 4, generator=gen), (torch.rand(6, generator=gen) > 0.5).float()
    w = torch.zeros(4, requires_grad=True)
    b = torch.zeros((), requires_grad=True)
    z = X @ w + b
    return {"X": X, "y": y, "w": w, "b": b, "z": z, "loss": (F.softplus(z) - y * z).mean()}


def test_graph_nodes_walks_from_the_loss_to_the_leaves():
    t = logistic_loss()
    nodes, edges = graph_nodes(t["loss"])
    names = [n.name().removeprefix("torch::autograd::") for n in nodes]
    assert names[0] == "MeanBackward0"
    assert sorted(names) == sorted(
        [
            "MeanBackward0",
            "SubBackward0",
            "SoftplusBackward0",
            "MulBackward0",
            "AddBackward0",
            "MvBackward0",
            "AccumulateGrad",
            "AccumulateGrad",
        ]
    )
    leaves = {id(n.variable) for n in nodes if hasattr(n, "variable")}
    assert leaves == {id(t["w"]), id(t["b"])}
    assert len(edges) == 8  # z feeds two nodes: softplus and the product with y


def test_data_inputs_names_the_data_before_backward_and_not_after():
    t = logistic_loss()
    nodes, _ = graph_nodes(t["loss"])
    found = {(label, node.name(), slot) for label, node, slot in data_inputs(nodes, t)}
    assert found == {("X (6, 4)", "MvBackward0", 0), ("y (6,)", "MulBackward0", 0)}
    t["loss"].backward()  # frees what the nodes saved: the data can no longer be named
    found = {(label, node.name(), slot) for label, node, slot in data_inputs(nodes, t)}
    assert found == {("input", "MvBackward0", 0), ("input", "MulBackward0", 0)}


def box_texts(fig: Figure) -> dict[str, tuple[float, float]]:
    """Each box's text and where it sits (the arrows are texts without words)."""
    return {t.get_text(): t.get_position() for t in fig.axes[0].texts if t.get_text()}


def test_draw_graph_draws_every_node_the_data_and_the_names_top_to_bottom():
    t = logistic_loss()
    fig = draw_graph(t["loss"], t)
    try:
        assert isinstance(fig, Figure)
        texts = box_texts(fig)
        assert len(texts) == 10  # 8 nodes and 2 data inputs
        assert len(fig.axes[0].texts) - len(texts) == 10  # one arrow per input
        assert texts.keys() >= {
            "w (4,)\nAccumulateGrad",
            "b ()\nAccumulateGrad",
            "X (6, 4)\nno gradient",
            "y (6,)\nno gradient",
            "AddBackward0\n→ z",
            "MeanBackward0\n→ loss",
            "MvBackward0",
        }
        # The forward pass runs down: inputs above their users, the loss at the bottom.
        y_of = {text: xy[1] for text, xy in texts.items()}
        assert y_of["X (6, 4)\nno gradient"] > y_of["MvBackward0"] > y_of["AddBackward0\n→ z"]
        assert min(y_of.values()) == y_of["MeanBackward0\n→ loss"]
        # In X @ w, X (the first input) sits left of w.
        x_of = {text: xy[0] for text, xy in texts.items()}
        assert x_of["X (6, 4)\nno gradient"] < x_of["w (4,)\nAccumulateGrad"]
        # Narrow enough for a web page's text column at 10-point text.
        assert fig.get_size_inches()[0] <= 6.8
    finally:
        plt.close(fig)


def test_draw_graph_after_backward_still_draws_the_graph():
    t = logistic_loss()
    t["loss"].backward()  # the graph's structure outlives backward()
    fig = draw_graph(t["loss"], t)
    try:
        texts = [t.get_text() for t in fig.axes[0].texts if t.get_text()]
        assert len(texts) == 10
        assert texts.count("input\nno gradient") == 2  # the data, no longer named
    finally:
        plt.close(fig)


def test_draw_graph_rejects_tensors_without_a_graph_and_bad_names():
    t = logistic_loss()
    with pytest.raises(ValueError, match="it is a leaf"):
        draw_graph(t["w"])
    with torch.no_grad():
        untracked = t["w"] * 2
    with pytest.raises(ValueError, match="does not require grad"):
        draw_graph(untracked)
    with pytest.raises(TypeError, match="expected a tensor"):
        draw_graph([1.0, 2.0])
    with pytest.raises(TypeError, match="names"):
        draw_graph(t["loss"], {"w": [0.0]})
