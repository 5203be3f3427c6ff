"""Lesson 07's exercise checkers accept the right answers and reject the usual wrong ones."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from helpers.exercises import lesson07
from helpers.models import small_cnn


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def epoch(
    *,
    train_mode: bool = True,
    zero_grad: bool = True,
    per_batch_schedule: bool = True,
    weighted: bool = True,
    answer: bool = True,
):
    """A train_one_epoch, right by default; each flag off is one mistake a learner makes."""

    def train_one_epoch(model, loader, loss_fn, optimizer, scheduler, device):
        if train_mode:
            model.train()
        total, count, means = 0.0, 0, []
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            loss = loss_fn(model(images), labels)
            if zero_grad:
                optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if per_batch_schedule:
                scheduler.step()
            total += loss.item() * len(labels)
            count += len(labels)
            means.append(loss.item())
        if not per_batch_schedule:
            scheduler.step()
        if not answer:
            return None
        return total / count if weighted else sum(means) / len(means)

    return train_one_epoch


def test_exercise_1_accepts_the_lesson_s_epoch(capsys):
    assert verdict(capsys, lambda: lesson07.exercise_1(epoch(), "cpu")).startswith("✓")


def test_exercise_1_accepts_a_loss_returned_as_a_tensor(capsys):
    right = epoch()

    def as_tensor(*args):
        return torch.tensor(right(*args))

    assert verdict(capsys, lambda: lesson07.exercise_1(as_tensor, "cpu")).startswith("✓")


def test_exercise_1_names_each_usual_mistake(capsys):
    cases = {
        "returned None": epoch(answer=False),
        "evaluation mode": epoch(train_mode=False),
        "once after each": epoch(per_batch_schedule=False),
        "the weights after your epoch": epoch(zero_grad=False),
        "mean of the batch losses": epoch(weighted=False),
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson07.exercise_1(answer, "cpu"))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_exercise_1_rejects_the_starter_and_a_non_function(capsys):
    def starter(model, loader, loss_fn, optimizer, scheduler, device): ...

    assert "returned None" in verdict(capsys, lambda: lesson07.exercise_1(starter, "cpu"))
    assert "fill in" in verdict(capsys, lambda: lesson07.exercise_1(..., "cpu"))
    assert "should be a function" in verdict(capsys, lambda: lesson07.exercise_1(3, "cpu"))


def test_exercise_1_rejects_an_epoch_that_does_not_step(capsys):
    def no_step(model, loader, loss_fn, optimizer, scheduler, device):
        model.train()
        return 0.5

    out = verdict(capsys, lambda: lesson07.exercise_1(no_step, "cpu"))
    assert out.startswith("✗") and "did not change" in out


def test_the_checkers_leave_the_global_random_numbers_alone(capsys):
    torch.manual_seed(0)
    state = torch.get_rng_state()
    lesson07.exercise_1(epoch(), "cpu")
    assert torch.equal(torch.get_rng_state(), state)
    model, loader, right, _ = per_class_setup()
    state = torch.get_rng_state()
    lesson07.exercise_2(model, loader, right)
    assert torch.equal(torch.get_rng_state(), state)


def per_class_setup():
    torch.manual_seed(1)
    model = small_cnn([0.5] * 3, [0.25] * 3, width=4).eval()
    images = torch.randint(0, 256, (200, 3, 32, 32), dtype=torch.uint8)
    labels = torch.arange(200) % 2
    loader = DataLoader(TensorDataset(images, labels), batch_size=64)
    with torch.inference_mode():
        predicted = model(images).argmax(dim=1)
    right = [(predicted[labels == c] == c).float().mean().item() for c in (0, 1)]
    overall = (predicted == labels).float().mean().item()
    return model, loader, right, overall


def test_exercise_2_accepts_a_list_or_a_tensor(capsys):
    model, loader, right, _ = per_class_setup()
    assert verdict(capsys, lambda: lesson07.exercise_2(model, loader, right)).startswith("✓")
    as_tensor = torch.tensor(right)
    assert verdict(capsys, lambda: lesson07.exercise_2(model, loader, as_tensor)).startswith("✓")


def test_exercise_2_names_each_usual_mistake(capsys):
    model, loader, right, overall = per_class_setup()
    assert right[0] != right[1]  # the data must tell the mistakes apart
    cases = {
        "swapped": right[::-1],
        "over all images": [overall, overall],
        "list of two numbers": right[:1],
        "fill in": ...,
        "per_class": [right[0], right[1] + 0.01],
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson07.exercise_2(model, loader, answer))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_exercise_2_evaluates_in_eval_mode(capsys):
    """A model left in training mode is switched to eval mode for the reference: batch norm's
    running statistics, not the batch's, decide the right answer."""
    model, loader, right, _ = per_class_setup()
    model.train()
    assert verdict(capsys, lambda: lesson07.exercise_2(model, loader, right)).startswith("✓")
    assert not model.training
