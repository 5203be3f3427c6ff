"""Lesson 06's exercise checkers: each accepts the right answer and rejects typical wrong ones."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from helpers.exercises import lesson06


@pytest.fixture
def batch():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(64, 2, generator=gen) * 2, torch.randint(0, 2, (64,), generator=gen)


def first_line(capsys) -> str:
    return capsys.readouterr().out.splitlines()[0]


# ----------------------------------------------------------------------------- exercise 1


def from_logsumexp(logits, y):
    return (torch.logsumexp(logits, dim=1) - logits[torch.arange(len(y)), y]).mean()


def max_subtracted(logits, y):
    shifted = logits - logits.max(dim=1, keepdim=True).values
    return (shifted.exp().sum(dim=1).log() - shifted[torch.arange(len(y)), y]).mean()


@pytest.mark.parametrize("answer", [from_logsumexp, max_subtracted])
def test_exercise_1_accepts_stable_cross_entropies(capsys, batch, answer):
    lesson06.exercise_1(answer, *batch)
    assert first_line(capsys).startswith("✓ ")


def naive(logits, y):  # exp of a large logit overflows
    return (logits.exp().sum(dim=1).log() - logits[torch.arange(len(y)), y]).mean()


def summed(logits, y):
    return (torch.logsumexp(logits, dim=1) - logits[torch.arange(len(y)), y]).sum()


def ready_made(logits, y):
    return F.cross_entropy(logits, y)


def via_softmax(logits, y):
    return -logits.softmax(dim=1).log()[torch.arange(len(y)), y].mean()


def hidden_in_a_comprehension(logits, y):
    rows = [F.log_softmax(row, dim=0)[k] for row, k in zip(logits, y, strict=True)]
    return -torch.stack(rows).mean()


def starter(logits, y):
    loss = ...
    return loss


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (..., "fill in `my_cross_entropy`"),
        (starter, "fill in the body of `starter`"),
        (naive, "logits * 1000"),
        (summed, "`my_cross_entropy(logits, y)` differs"),
        (ready_made, "calls cross_entropy"),
        (via_softmax, "calls softmax"),
        (hidden_in_a_comprehension, "calls log_softmax"),
    ],
)
def test_exercise_1_rejects_wrong_or_unstable_losses(capsys, batch, answer, says):
    lesson06.exercise_1(answer, *batch)
    line = first_line(capsys)
    assert line.startswith("✗ ") and says in line


def test_exercise_1_does_not_change_the_learner_s_logits(capsys, batch):
    logits, y = batch
    before = logits.clone()
    lesson06.exercise_1(from_logsumexp, logits, y)
    assert torch.equal(logits, before)


# ----------------------------------------------------------------------------- exercise 2


def test_exercise_2_accepts_the_reference(capsys, batch):
    lesson06.exercise_2(lesson06.reference_smooth_targets, *batch)
    assert first_line(capsys).startswith("✓ ")


def others_only(y, num_classes, eps):  # the older ε/(C-1) on the other classes
    t = torch.full((len(y), num_classes), eps / (num_classes - 1))
    return t.scatter(1, y.unsqueeze(1), 1 - eps)


def no_share_for_the_true_class(y, num_classes, eps):
    t = torch.full((len(y), num_classes), eps / num_classes)
    return t.scatter(1, y.unsqueeze(1), 1 - eps)


def transposed(y, num_classes, eps):
    return lesson06.reference_smooth_targets(y, num_classes, eps).T


def by_pair_indexing(y, num_classes, eps):  # the lesson's solution
    t = torch.zeros(len(y), num_classes) + eps / num_classes
    t[torch.arange(len(y)), y] += 1 - eps
    return t


def test_exercise_2_accepts_the_lesson_s_solution(capsys, batch):
    lesson06.exercise_2(by_pair_indexing, *batch)
    assert first_line(capsys).startswith("✓ ")


def two_classes_only(y, num_classes, eps):  # the lesson's 0.05 / 0.95, hard-coded
    t = torch.zeros(len(y), num_classes) + 0.05
    t[torch.arange(len(y)), y] = 0.95
    return t


def starter_2(y, num_classes, eps):
    targets = ...
    return targets


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (..., "fill in `smooth_targets`"),
        (starter_2, "fill in the body of `starter_2`"),
        (no_share_for_the_true_class, "smooth_targets for 2 classes, eps=0.1"),
        (others_only, "smooth_targets for 2 classes, eps=0.1"),
        (transposed, "has shape (2, 64), expected (64, 2)"),
        (two_classes_only, "smooth_targets for 10 classes, eps=0.2"),
    ],
)
def test_exercise_2_rejects_other_targets(capsys, batch, answer, says):
    lesson06.exercise_2(answer, *batch)
    line = first_line(capsys)
    assert line.startswith("✗ ") and says in line
