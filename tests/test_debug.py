"""helpers.debug: chapter 13's demo Datasets and its exercise checkers."""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from helpers import debug


def test_stalls_times_out_and_leaves_no_worker_after_release():
    ds = debug.Stalls(6, stall_at=3)
    batches = iter(DataLoader(ds, batch_size=2, num_workers=1, timeout=1))
    got = []
    began = time.perf_counter()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 1 seconds"):
        for batch in batches:
            got.append(batch.tolist())
    ds.release()
    assert [b.tolist() for b in batches] == [[2, 3], [4, 5]]  # the epoch ends, workers stop
    assert got == [[0, 1]]
    assert time.perf_counter() - began < 5
    assert multiprocessing.active_children() == []


def test_stalls_is_released_in_a_spawned_worker():
    ds = debug.Stalls(2, stall_at=1, context="spawn")
    ds.release()  # set before the worker starts: the event travels with the dataset
    loader = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert [b.tolist() for b in loader] == [[0, 1]]


@pytest.mark.parametrize("args", [(3, 3), (3, -1), (3, 0, 0.0)])
def test_stalls_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        debug.Stalls(*args)


def test_thread_counts_show_one_torch_thread_in_workers_and_the_limit_applies():
    loader = DataLoader(debug.ThreadCounts(2), batch_size=None, num_workers=1)
    torch_threads, _ = next(iter(loader))
    assert torch_threads == 1
    limited = DataLoader(
        debug.ThreadCounts(2),
        batch_size=None,
        num_workers=1,
        worker_init_fn=debug.one_thread_per_worker,
    )
    _, blas = next(iter(limited))
    assert blas in (1, -1)  # -1: threadpoolctl missing


def test_worker_noise_depends_on_the_worker_count_and_sample_noise_does_not():
    def run(ds, workers):
        loader = DataLoader(
            ds,
            batch_size=2,
            shuffle=True,
            num_workers=workers,
            generator=torch.Generator().manual_seed(0),
        )
        return [(int(i), float(v)) for idx, val in loader for i, v in zip(idx, val, strict=True)]

    torch.manual_seed(0)
    plain = [run(debug.WorkerNoise(6), w) for w in (0, 2)]
    assert [i for i, _ in plain[0]] == [i for i, _ in plain[1]]
    assert plain[0] != plain[1]
    seeded = debug.SampleNoise(6, seed=0)
    assert run(seeded, 0) == run(seeded, 2)
    epoch0 = run(seeded, 0)
    seeded.set_epoch(1)
    assert run(seeded, 0) != epoch0


def test_on_device_moves_rows():
    ds = debug.OnDevice(torch.arange(6.0).view(3, 2), "cpu")
    assert len(ds) == 3 and torch.equal(ds[2], torch.tensor([4.0, 5.0]))
    with pytest.raises(RuntimeError):
        debug.OnDevice(torch.zeros(1), "nonsense")


def test_blas_threads_reports_a_count():
    assert debug.blas_threads() >= 1 or debug.blas_threads() == -1


# --- exercise checks: each wrong answer gets its hint, the solution None ------------------


def test_problem_functions_run_their_doctests():
    import doctest

    assert doctest.testmod(debug).failed == 0


def good_finite_checks(model):
    def hook(name):
        def check(module, args, output):
            if not torch.isfinite(output).all():
                raise FloatingPointError(f"non-finite output from {name!r}")

        return check

    return [m.register_forward_hook(hook(name)) for name, m in model.named_modules() if name]


def test_finite_checks_problem():
    assert debug.finite_checks_problem(good_finite_checks) is None

    def starter(model): ...

    def by_class(model):
        def check(module, args, output):
            if not torch.isfinite(output).all():
                raise FloatingPointError(type(module).__name__)

        return [m.register_forward_hook(check) for m in model.modules()]

    def no_handles(model):
        good_finite_checks(model)
        return []

    for wrong, hint in (
        (None, "should be a function"),
        (starter, "returned None"),
        (lambda model: [], "no hook raised"),
        (by_class, "should name the layer 'body.0'"),
        (no_handles, "still raised"),
    ):
        assert hint in debug.finite_checks_problem(wrong)


def good_safe_step(model, optimizer, loss):
    optimizer.zero_grad()
    if not torch.isfinite(loss):
        return False
    loss.backward()
    if not torch.isfinite(nn.utils.get_total_norm([p.grad for p in model.parameters()])):
        optimizer.zero_grad()
        return False
    optimizer.step()
    return True


def test_safe_step_problem():
    assert debug.safe_step_problem(good_safe_step) is None

    def starter(model, optimizer, loss): ...

    def always(model, optimizer, loss):
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return True

    def loss_only(model, optimizer, loss):
        optimizer.zero_grad()
        if not torch.isfinite(loss):
            return False
        loss.backward()
        optimizer.step()
        return True

    def leaves_grads(model, optimizer, loss):
        optimizer.zero_grad()
        loss.backward()
        if not torch.isfinite(nn.utils.get_total_norm([p.grad for p in model.parameters()])):
            return False
        optimizer.step()
        return True

    def never(model, optimizer, loss):
        return False

    def crashes(model, optimizer, loss):
        raise KeyError("oops")

    for wrong, hint in (
        (None, "should be a function"),
        (starter, "returned None"),
        (always, "with an infinite loss safe_step stepped anyway"),
        (loss_only, "gradient norm"),
        (leaves_grads, "zero_grad"),
        (never, "with a finite loss"),
        (crashes, "KeyError"),
    ):
        assert hint in debug.safe_step_problem(wrong)


def test_sample_noise_problem():
    assert (
        debug.sample_noise_problem(lambda s, e, i: np.random.default_rng([s, e, i]).random(4))
        is None
    )
    for wrong, hint in (
        (None, "should be a function"),
        (lambda s, e, i: None, "returned None"),
        (lambda s, e, i: np.random.rand(4), "global generators"),
        (lambda s, e, i: np.random.default_rng([s, i]).random(4), "gave the same values"),
        (lambda s, e, i: np.random.default_rng([s, e, i]).random(3), "4 values"),
        (lambda s, e: None, "TypeError"),
        # the review's wrong answers: a summed seed collides, a reseeded global generator leaks
        (lambda s, e, i: np.random.default_rng(s + e + i).random(4), "gave the same values"),
        (lambda s, e, i: np.random.default_rng(1000 * s + e + i).random(4), "same values"),
        # the second review's: a fold with wider multipliers, and one draw shifted per sample
        (lambda s, e, i: np.random.default_rng(s * 100_000 + e * 10_000 + i).random(4), "same"),
        (lambda s, e, i: np.random.default_rng(s).random(4) + 10 * e + i, "shifted by"),
        (lambda s, e, i: np.random.default_rng(s * 9 + e * 3 + i).random(4), "same values"),
        (reseeds_numpy, "NumPy's global generator"),
        (reseeds_torch, "torch's global generator"),
    ):
        assert hint in debug.sample_noise_problem(wrong)


def reseeds_numpy(seed, epoch, index):
    np.random.seed([seed, epoch, index])
    return np.random.rand(4)


def reseeds_torch(seed, epoch, index):
    torch.manual_seed(seed * 10_000 + epoch * 100 + index)
    return torch.rand(4).numpy()
