"""The exercise checkers of notebooks 01-04 reject the wrong answers a review found passing.

Each checker is defined in its notebook's twin (notebooks/src); the test runs that one cell with
the names it reads, so a wrong answer is tried without executing the notebook.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from helpers import exercises

SRC = Path(__file__).resolve().parents[1] / "notebooks" / "src"


def checker(notebook: str, number: int, **names):
    """The notebook's ``check_exercise_<number>``, bound to ``names``; it returns the ✓/✗ line."""
    cells = (SRC / notebook).read_text().split("# %%")
    source = next(c for c in cells if f"def check_exercise_{number}():" in c)
    space = {"torch": torch, "nn": nn, "exercises": exercises, **names}
    exec(compile(source.split(f"\ncheck_exercise_{number}()")[0], notebook, "exec"), space)
    return space[f"check_exercise_{number}"]


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def unclamped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * a).sum(dim=1, keepdim=True) + (b * b).sum(dim=1) - 2 * a @ b.T


def test_01_ex3_rejects_squared_distances_that_go_negative(capsys):
    assert verdict(capsys, checker("01_tensors.py", 3, sq_dists=...)).startswith("✗ fill in")
    out = verdict(capsys, checker("01_tensors.py", 3, sq_dists=unclamped))
    assert out.startswith("✗ sq_dists(c, c) has negative values")
    right = lambda a, b: unclamped(a, b).clamp(min=0)  # noqa: E731
    assert verdict(capsys, checker("01_tensors.py", 3, sq_dists=right)).startswith("✓")


def test_01_ex3_unclamped_goes_negative_on_every_seed():
    """The (100, 4) input makes the unclamped formula negative whatever the seed (and BLAS)."""
    for seed in range(20):
        c = torch.randn(100, 4, generator=torch.Generator().manual_seed(seed))
        assert (unclamped(c, c) < 0).any(), seed


def hooked_net(hook):
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    handles = [p.register_hook(hook) for p in net.parameters()] if hook else ...
    return checker("03_autograd.py", 3, net=net, handles=handles)


def test_03_ex3_rejects_hooks_that_do_not_clamp(capsys):
    assert verdict(capsys, hooked_net(None)).startswith("✗ fill in")
    zeros = verdict(capsys, hooked_net(torch.zeros_like))
    assert zeros.startswith("✗ `0.weight's gradient with the hook` differs")
    narrower = verdict(capsys, hooked_net(lambda g: g.clamp(-0.001, 0.001)))
    assert narrower.startswith("✗")
    assert verdict(capsys, hooked_net(lambda g: g)).startswith("✗")
    assert verdict(capsys, hooked_net(lambda g: g.clamp(-0.01, 0.01))).startswith("✓")
