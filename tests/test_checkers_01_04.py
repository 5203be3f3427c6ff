"""The exercise checkers of notebooks 01-04 reject the wrong answers a review found passing.

Each checker is a function of helpers.exercises.chNN that takes the learner's names, so a wrong
answer is tried without executing the notebook.
"""

from __future__ import annotations

import ast

import torch
from torch import nn

from helpers.authoring import course
from helpers.exercises import ch01, ch02, ch03, ch04


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def unclamped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * a).sum(dim=1, keepdim=True) + (b * b).sum(dim=1) - 2 * a @ b.T


def exercise_data(notebook: str, names: tuple[str, ...]) -> dict:
    """The values of ``names`` as the notebook's own cells assign them (the exercise's data)."""
    namespace: dict = {"torch": torch}
    for cell in course.read(course.COOKBOOK / notebook).cells:
        if cell.cell_type != "code" or cell.source.startswith("%"):
            continue
        tree = ast.parse(cell.source)
        assigned = {
            t.id
            for n in tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        if set(names) <= assigned:
            exec(cell.source.replace("...", "None"), namespace)
            return {name: namespace[name] for name in names}
    raise AssertionError(f"{notebook} has no cell assigning {names}")


def test_01_ex2_rejects_top_2_and_top_4_on_the_notebook_s_data(capsys):
    data = exercise_data("01_tensors_recipes.ipynb", ("logits", "targets"))
    logits, targets = data["logits"], data["targets"]

    def top(k: int) -> float:
        return (logits.topk(k, dim=1).indices == targets[:, None]).any(dim=1).float().mean().item()

    for k in (1, 2, 4):  # the off-by-one answers the review tried
        out = verdict(capsys, lambda k=k: ch01.exercise_2(logits, targets, top(k)))
        assert out.startswith("✗"), (k, out)
    assert verdict(capsys, lambda: ch01.exercise_2(logits, targets, top(3))).startswith("✓")


def test_01_ex3_rejects_squared_distances_that_go_negative(capsys):
    assert verdict(capsys, lambda: ch01.exercise_3(...)).startswith("✗ fill in")
    out = verdict(capsys, lambda: ch01.exercise_3(unclamped))
    assert out.startswith("✗ sq_dists(c, c) has negative values")
    right = lambda a, b: unclamped(a, b).clamp(min=0)  # noqa: E731
    assert verdict(capsys, lambda: ch01.exercise_3(right)).startswith("✓")


def test_01_ex3_unclamped_goes_negative_on_every_seed():
    """The (100, 4) input makes the unclamped formula negative whatever the seed (and BLAS)."""
    for seed in range(20):
        c = torch.randn(100, 4, generator=torch.Generator().manual_seed(seed))
        assert (unclamped(c, c) < 0).any(), seed


SIGNAL = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0])


def test_02_ex2_names_the_reduction_that_returns_indices(capsys):
    both = verdict(capsys, lambda: ch02.exercise_2(SIGNAL, SIGNAL.unfold(0, 4, 1).max(dim=1)))
    assert both.startswith("✗ moving_max should be a tensor, got torch.return_types.max: ")
    assert verdict(capsys, lambda: ch02.exercise_2(SIGNAL, [9.0])) == (
        "✗ moving_max should be a tensor, got list\n"
    )
    across = verdict(capsys, lambda: ch02.exercise_2(SIGNAL, SIGNAL.unfold(0, 4, 1).amax(dim=0)))
    assert across.startswith("✗ `moving_max.shape` is (4,)")
    right = SIGNAL.unfold(0, 4, 1).amax(dim=1)
    assert verdict(capsys, lambda: ch02.exercise_2(SIGNAL, right)).startswith("✓")


def test_02_ex3_rejects_a_function_that_writes_into_its_input(capsys):
    def in_place(t: torch.Tensor) -> torch.Tensor:
        t[0] /= t[0].sum()
        return t

    assert verdict(capsys, lambda: ch02.exercise_3(in_place)).startswith(
        "✗ the result is right but t changed"
    )
    assert verdict(capsys, lambda: ch02.exercise_3(lambda t: t)).startswith("✗ `normalise_")

    def copied(t: torch.Tensor) -> torch.Tensor:
        return torch.cat([t[:1] / t[0].sum(), t[1:]])

    assert verdict(capsys, lambda: ch02.exercise_3(copied)).startswith("✓")


def hooked_net(hook):
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    handles = [p.register_hook(hook) for p in net.parameters()] if hook else ...
    return lambda: ch03.exercise_3(net, handles)


def test_03_ex3_rejects_hooks_that_do_not_clamp(capsys):
    assert verdict(capsys, hooked_net(None)).startswith("✗ fill in")
    zeros = verdict(capsys, hooked_net(torch.zeros_like))
    assert zeros.startswith("✗ `0.weight's gradient with the hook` differs")
    narrower = verdict(capsys, hooked_net(lambda g: g.clamp(-0.001, 0.001)))
    assert narrower.startswith("✗")
    assert verdict(capsys, hooked_net(lambda g: g)).startswith("✗")
    assert verdict(capsys, hooked_net(lambda g: g.clamp(-0.01, 0.01))).startswith("✓")


def test_03_ex1_names_accumulated_gradients(capsys):
    x = torch.tensor(1.5, requires_grad=True)
    y = torch.tensor(-0.5, requires_grad=True)
    assert verdict(capsys, lambda: ch03.exercise_1(x, y, ...)).startswith("✗ fill in `f`")
    f = x**2 * y + torch.sin(y)
    assert verdict(capsys, lambda: ch03.exercise_1(x, y, f)).startswith("✗ x.grad is still None")
    f.backward(retain_graph=True)
    assert verdict(capsys, lambda: ch03.exercise_1(x, y, f)).startswith("✓")
    f.backward()
    twice = verdict(capsys, lambda: ch03.exercise_1(x, y, f))
    assert twice.startswith("✗ `x.grad` is -3, expected -1.5: gradients accumulate")


def five_layers() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 3)
    )


def test_04_ex2_wants_the_head_alone_trainable_and_in_the_optimizer(capsys):
    model = five_layers()
    everything = torch.optim.SGD(model.parameters(), lr=0.1)
    out = verdict(capsys, lambda: ch04.exercise_2(model, everything))
    assert out.startswith("✗ `the trainable parameters` is ['0.weight'")
    model = five_layers().requires_grad_(False)
    model[-1].requires_grad_(True)
    still_all = torch.optim.SGD(model.parameters(), lr=0.1)
    out = verdict(capsys, lambda: ch04.exercise_2(model, still_all))
    assert out.startswith("✗ `the parameters in opt` is ['0.weight'")
    right = torch.optim.SGD(model[-1].parameters(), lr=0.1)
    assert verdict(capsys, lambda: ch04.exercise_2(model, right)).startswith("✓")


def test_04_ex3_rejects_hooks_made_with_a_late_bound_name(capsys):
    from torchvision.models import resnet18

    def run(late: bool) -> str:
        net = resnet18().eval()
        shapes = {}
        convs = [(n, m) for n, m in net.named_modules() if isinstance(m, nn.Conv2d)]
        if late:
            hooks = [
                m.register_forward_hook(lambda m, i, o: shapes.update({n: o.shape}))  # noqa: B023
                for n, m in convs
            ]
        else:
            hooks = [
                m.register_forward_hook(lambda m, i, o, n=n: shapes.update({n: o.shape}))
                for n, m in convs
            ]
        with torch.inference_mode():
            net(torch.randn(1, 3, 64, 64))
        sides = min(min(s[-2:]) for s in shapes.values())
        return verdict(capsys, lambda: ch04.exercise_3(net, shapes, hooks, len(shapes), sides))

    assert run(late=True).startswith("✗ shapes has 1 of the 20 convolutions")
    assert run(late=False).startswith("✓")
