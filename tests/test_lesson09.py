"""Lesson 09's helpers: the data parallel diagram, the exercise checkers, and the sync BN file the
lesson writes (checked in one process, without a launch)."""

from __future__ import annotations

import importlib.util
import math
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
import torch.distributed as dist
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from torch import nn

from helpers.authoring import course
from helpers.diagrams.ddp import MATCH, MISMATCH, draw_ddp, matches, shard_text
from helpers.exercises import lesson09
from helpers.models import small_cnn

LESSON = course.NOTEBOOKS / "09_ddp_syncbn.ipynb"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


# The diagram


def test_the_diagram_shows_each_rank_s_shard_and_the_averaged_gradient():
    fig = draw_ddp([list(range(0, 16, 2)), list(range(1, 16, 2))], grads=[0.25, -0.05])
    assert isinstance(fig, Figure)
    shown = texts(fig)
    assert "on 2 ranks" in shown
    assert "rank 0\nimages 0, 2, 4, 6, …, 14 (8)" in shown
    assert "rank 1\nimages 1, 3, 5, 7, …, 15 (8)" in shown
    assert "g₀ = +0.25" in shown and "g₁ = -0.05" in shown
    assert "(g₀ + g₁) / 2 = +0.1" in shown  # the mean, computed


def test_the_diagram_shows_the_value_the_all_reduce_returned_when_given():
    fig = draw_ddp([[0, 1], [2, 3], [4, 5]], grads=[1, 2, 3], averaged=2.5, what="w[0]")
    shown = texts(fig)
    assert "(g₀ + g₁ + g₂) / 3 = +2.5" in shown and "w[0]" in shown
    symbolic = texts(draw_ddp([[0, 1]]))
    assert "on 1 rank\n" in symbolic and "(g₀) / 1" in symbolic and "=" not in symbolic
    alone = texts(draw_ddp([[0], [1]], averaged=0.5, title="plain"))
    assert alone.startswith("plain") and "(g₀ + g₁) / 2 = +0.5" in alone


def reduce_box_colour(fig: Figure) -> str:
    """The face colour of the all-reduce box, the widest box of the figure."""
    boxes = [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]
    widest = max(boxes, key=lambda p: p.get_width())
    return matplotlib.colors.to_hex(widest.get_facecolor())


def test_the_diagram_says_whether_the_all_reduce_matches_one_process():
    shards = [list(range(0, 16, 2)), list(range(1, 16, 2))]
    mismatch = draw_ddp(shards, averaged=0.01963, target=0.04811, what="2.1.weight, entry 0")
    shown = texts(mismatch)
    assert "(g₀ + g₁) / 2 = +0.01963" in shown
    assert "one process on all 16 images: +0.04811, does NOT match" in shown
    assert reduce_box_colour(mismatch) == MISMATCH
    match = draw_ddp(shards, averaged=0.048112, target=0.048111)
    assert "+0.04811, matches" in texts(match) and reduce_box_colour(match) == MATCH
    assert matches(1.0, 1.0 + 1e-6) and not matches(1.0, 1.01)


def test_the_diagram_s_text_is_large_enough_to_read_on_the_site():
    fig = draw_ddp([[0, 2], [1, 3]], averaged=0.1, target=0.2)
    sizes = [t.get_fontsize() for t in fig.axes[0].texts]
    assert min(sizes) >= 12 and fig.get_figwidth() <= 7.5


def test_shard_text_shortens_long_shards():
    assert shard_text([3, 1]) == "images 3, 1"
    assert shard_text(range(10), shown=4) == "images 0, 1, …, 9 (10)"
    assert shard_text(torch.tensor([5, 6])) == "images 5, 6"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(shards=[]), "1 to 4 ranks"),
        (dict(shards=[[0]] * 5), "1 to 4 ranks"),
        (dict(shards="0123"), "one list of sample indices"),
        (dict(shards=[[0, 1], []]), "rank 1 is empty"),
        (dict(shards=[[0, "a"]]), "list of indices"),
        (dict(shards=[[0], [1]], grads=[1.0]), "1 values for 2 ranks"),
        (dict(shards=[[0], [1]], grads=[1.0, math.nan]), "not finite"),
        (dict(shards=[[0], [1]], grads="12"), "list of numbers"),
        (dict(shards=[[0], [1]], averaged="a"), "averaged should be a number"),
        (dict(shards=[[0], [1]], averaged=math.inf), "averaged is not finite"),
        (dict(shards=[[0], [1]], target=1.0), "give averaged"),
        (dict(shards=[[0], [1]], averaged=1.0, target=None, what=""), None),
    ],
)
def test_the_diagram_rejects_bad_input(arguments, message):
    if message is None:  # a valid call, for contrast
        assert isinstance(draw_ddp(**arguments), Figure)
        return
    with pytest.raises(ValueError, match=message):
        draw_ddp(**arguments)


# Exercise 1: ranks with shards of different sizes


def right(grads, sizes):
    return {
        n: sum(k * g[n] for k, g in zip(sizes, grads, strict=True)) / sum(sizes) for n in grads[0]
    }


def test_exercise_1_accepts_the_weighted_combination(capsys):
    out = verdict(capsys, lambda: lesson09.exercise_1(right))
    assert out.startswith("✓") and "5, 3, 9 and 1" in out and "2 and 12" in out, out


def test_exercise_1_checks_on_ranks_it_makes_itself():
    """The check's reference: the right combination of the ranks' gradients is the gradient
    on all samples, and the ranks are uneven, so a plain mean is far from it."""
    for sizes, seed in lesson09.PROBLEMS:
        own, whole = lesson09.ranks_problem(sizes, seed)
        assert len(own) == len(sizes) and len(set(sizes)) > 1
        for name in whole:
            assert torch.allclose(right(own, sizes)[name], whole[name], atol=1e-6)
        plain = torch.cat([(sum(g[n] for g in own) / len(own)).flatten() for n in whole])
        target = torch.cat([whole[n].flatten() for n in whole])
        assert (plain - target).norm() > 0.05 * target.norm()


def the_lesson_s_whole_gradient() -> dict:
    """What a learner who closes over the notebook's `whole` would return: the CNN's gradient."""
    torch.manual_seed(0)
    model = small_cnn([0.5] * 3, [0.25] * 3, width=2).eval()
    images = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    nn.functional.cross_entropy(model(images), torch.tensor([0, 1, 0, 1])).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def test_exercise_1_cannot_be_fooled_by_a_gradient_from_elsewhere(capsys):
    lesson_whole = the_lesson_s_whole_gradient()
    out = verdict(capsys, lambda: lesson09.exercise_1(lambda grads, sizes: lesson_whole))
    assert out.startswith("✗") and "build the dict from `grads` alone" in out, out
    # the whole-batch gradient of the check's own model, but of other samples: same names
    _, other_whole = lesson09.ranks_problem((4, 4), seed=99)
    out = verdict(capsys, lambda: lesson09.exercise_1(lambda grads, sizes: other_whole))
    assert out.startswith("✗") and "off from the gradient on all 18 samples" in out, out


def test_exercise_1_names_each_usual_mistake(capsys):
    cases = {
        "plain mean of the ranks' gradients": lambda grads, sizes: {
            n: sum(g[n] for g in grads) / len(grads) for n in grads[0]
        },
        "the sum of the ranks' gradients": lambda grads, sizes: {
            n: sum(g[n] for g in grads) for n in grads[0]
        },
        "The loss is their mean": lambda grads, sizes: {
            n: sum(k * g[n] for k, g in zip(sizes, grads, strict=True)) for n in grads[0]
        },
        "off from the gradient": lambda grads, sizes: grads[0],
        "missing": lambda grads, sizes: dict(list(right(grads, sizes).items())[:-1]),
        "shape": lambda grads, sizes: {n: g.flatten() for n, g in right(grads, sizes).items()},
        "should return a dict": lambda grads, sizes: list(right(grads, sizes).values()),
        "combine returned None": lambda grads, sizes: None,
        "it still returns `...`": lambda grads, sizes: ...,
        "should be a function": {"0.weight": torch.zeros(5, 6)},
        "fill in `combine`": ...,
        "raised ZeroDivisionError": lambda grads, sizes: 1 / 0,
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda a=answer: lesson09.exercise_1(a))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_exercise_1_gives_the_learner_s_function_copies(capsys):
    """A combine that scales the gradients it is given in place still gets checked against
    the untouched reference."""

    def in_place(grads, sizes):
        for g, k in zip(grads, sizes, strict=True):
            for n in g:
                g[n] *= k
        return {n: sum(g[n] for g in grads) / sum(sizes) for n in grads[0]}

    out = verdict(capsys, lambda: lesson09.exercise_1(in_place))
    assert out.startswith("✓"), out


# The sync BN file the lesson writes, as the lesson shows it


@pytest.fixture(scope="module")
def sync_bn(tmp_path_factory):
    """The lesson's runs/09_lesson/sync_bn.py, imported from a copy of its cell."""
    files = course.written_files(course.read(LESSON))
    path = tmp_path_factory.mktemp("lesson09") / "sync_bn.py"
    path.write_text(files["runs/09_lesson/sync_bn.py"])
    spec = importlib.util.spec_from_file_location("lesson09_sync_bn", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def compare_with_batch_norm(sync_bn) -> dict[str, float]:
    """Largest differences between the lesson's SyncBatchNorm2d and nn.BatchNorm2d on one batch,
    in training mode (outputs, input and weight gradients, running statistics) and then in
    evaluation mode."""
    torch.manual_seed(0)
    reference = nn.BatchNorm2d(3)
    with torch.no_grad():
        reference.weight.uniform_(0.5, 1.5)
        reference.bias.uniform_(-0.5, 0.5)
    ours = sync_bn.convert_to_sync_bn(nn.Sequential(nn.BatchNorm2d(3)))[0]
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(6, 3, 5, 5) * 2 + 1
    upstream = torch.randn_like(x)
    found = {}
    results = []
    for layer in (reference, ours):
        inputs = x.clone().requires_grad_()
        y = layer(inputs)
        (y * upstream).sum().backward()
        layer.eval()
        results.append((y, inputs.grad, layer.weight.grad, layer.running_var, layer(x)))
    for name, a, b in zip(["output", "grad", "weight", "running", "eval"], *results, strict=True):
        found[name] = (a - b).abs().max().item()
    return found


def test_the_lesson_s_sync_bn_is_batch_norm_in_one_process(sync_bn):
    assert max(compare_with_batch_norm(sync_bn).values()) < 1e-5
    model = sync_bn.convert_to_sync_bn(
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.BatchNorm2d(4), nn.ReLU()))
    )
    assert type(model[1][0]).__name__ == "SyncBatchNorm2d"


def test_the_lesson_s_sync_bn_runs_its_all_reduce_in_a_process_group(sync_bn):
    """A group of one rank: the all-reduce path, forward and backward, changes nothing."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert max(compare_with_batch_norm(sync_bn).values()) < 1e-5
    finally:
        dist.destroy_process_group()
