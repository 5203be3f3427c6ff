"""Chapter 13's debugging demos and exercise checks: small Datasets that DataLoader workers can
import under every start method (a stalled item, per-worker thread counts, noise seeded per
worker or per sample, a copy to a device), and the functions that find what is wrong with an
exercise's answer.

The Datasets live in a module, not in the notebook, for the reason ``helpers.datasets`` gives:
``spawn`` and ``forkserver`` workers re-import classes by name.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

# ---------------------------------------------------------------------------------------------
# Datasets for the DataLoader demos


class Stalls(Dataset):
    """Items ``0..n-1``; item ``stall_at`` blocks until :meth:`release` is called (at most
    ``limit`` seconds), like a worker stuck on a lock or a dead network share. A worker stops
    stalling when the process that made the data set dies, so a killed kernel leaves none behind.

    The event it waits on is shared with worker processes (inherited by ``fork``, passed at
    start by ``spawn``), so the notebook can free a stalled worker and leave no process behind.
    ``context`` must be the start method of the DataLoader's workers (None: the default one,
    which is also DataLoader's default).

    >>> ds = Stalls(4, stall_at=3)
    >>> [ds[i] for i in range(3)], len(ds)
    ([0, 1, 2], 4)
    """

    def __init__(
        self, n: int, stall_at: int, limit: float = 60.0, context: str | None = None
    ) -> None:
        if not 0 <= stall_at < n:
            raise ValueError(f"stall_at must be in [0, {n}), got {stall_at}")
        if limit <= 0:
            raise ValueError(f"limit must be positive seconds, got {limit}")
        self.n, self.stall_at, self.limit = n, stall_at, limit
        self.released = multiprocessing.get_context(context).Event()
        self.owner = os.getpid()  # the process that made the loader (a notebook's kernel)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        if i == self.stall_at:  # stall, but not past the owner's death (a killed kernel)
            parent = os.getppid()  # a worker's: the owner, or forkserver's server, which ends
            deadline = time.monotonic() + self.limit  # with the owner
            while not self.released.wait(timeout=0.2) and time.monotonic() < deadline:
                if os.getpid() != self.owner and os.getppid() != parent:
                    break
        return i

    def release(self) -> None:
        """Let a stalled ``__getitem__`` return, in every process."""
        self.released.set()


def blas_threads() -> int:
    """Return the threads NumPy's BLAS (OpenBLAS, MKL, ...) may use in this process, or -1 when
    ``threadpoolctl`` (a scikit-learn dependency) is missing.

    >>> blas_threads() >= 1 or blas_threads() == -1
    True
    """
    try:
        import threadpoolctl
    except ImportError:
        return -1
    counts = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    return max(counts, default=-1)


class ThreadCounts(Dataset):
    """``n`` items; item ``i`` is ``(torch's intra-op threads, NumPy's BLAS threads)`` in the
    process that loads it: shows what DataLoader limits in its workers and what it does not."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, int]:
        return torch.get_num_threads(), blas_threads()


def one_thread_per_worker(worker_id: int) -> None:
    """A ``worker_init_fn`` that limits the libraries DataLoader does not limit to one thread in
    each worker: NumPy's BLAS and OpenMP through ``threadpoolctl``, and OpenCV when loaded
    (``cv2.setNumThreads(0)`` runs OpenCV sequentially). Torch itself is already at one thread.
    """
    try:
        import threadpoolctl
    except ImportError:
        pass
    else:
        threadpoolctl.threadpool_limits(1)  # stays in force for the worker's lifetime
    cv2 = sys.modules.get("cv2")
    if cv2 is not None:
        cv2.setNumThreads(0)


class WorkerNoise(Dataset):
    """``n`` items; item ``i`` is ``(i, a draw from torch's global generator)``: random
    augmentation as usually written. In a worker the global generator is that worker's, seeded
    ``base_seed + worker_id``, so the draws depend on which worker loads which item."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, float]:
        return i, torch.rand(()).item()


class SampleNoise(Dataset):
    """``n`` items; item ``i`` is ``(i, a draw from a generator seeded by (seed, epoch, i))``:
    the same augmentation for a sample whichever process loads it. Call :meth:`set_epoch`
    before each epoch (as with ``DistributedSampler``) to draw new noise per epoch.

    >>> ds = SampleNoise(3, seed=0)
    >>> ds[1] == ds[1], ds[1] != ds[2]
    (True, True)
    """

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, float]:
        # SeedSequence mixes the three numbers into a well-spread 64-bit seed.
        seed = np.random.SeedSequence([self.seed, self.epoch, i]).generate_state(1, np.uint64)
        generator = torch.Generator().manual_seed(int(seed[0]))
        return i, torch.rand((), generator=generator).item()


class OnDevice(Dataset):
    """Rows of ``data`` moved to ``device`` in ``__getitem__``: a Dataset that touches CUDA in
    DataLoader workers, which fails in forked workers once the main process has used CUDA.

    >>> OnDevice(torch.zeros(2, 3), "cpu")[0].device.type
    'cpu'
    """

    def __init__(self, data: torch.Tensor, device: torch.device | str) -> None:
        self.data, self.device = data, torch.device(device)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.data[i].to(self.device)


# ---------------------------------------------------------------------------------------------
# Chapter 13's exercise checks: each returns what is wrong with an answer (one helpful line) or
# None, as helpers.exercises.report expects; they never raise at the learner.


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def _finite_model(broken: str | None) -> nn.Sequential:
    """A small model whose layer ``broken`` ("body.0" or "head") has infinite weights."""
    torch.manual_seed(0)
    model = nn.Sequential(
        OrderedDict(
            body=nn.Sequential(nn.Linear(4, 8), nn.ReLU()),
            head=nn.Linear(8, 2),
        )
    )
    if broken is not None:
        with torch.no_grad():
            model.get_submodule(broken).weight.fill_(math.inf)
    return model


def finite_checks_problem(add_finite_checks: Callable[[nn.Module], Any]) -> str | None:
    """Chapter 13, exercise 1: what is wrong with ``add_finite_checks(model)``, or ``None`` when
    it registers hooks that raise an error naming the first module (by its name in
    ``named_modules()``) whose output is not finite, and returns the handles, whose
    ``remove()`` turns the checks off. For ``helpers.exercises.report``.

    >>> finite_checks_problem(lambda model: None)
    'add_finite_checks returned None: return the list of hook handles'
    """
    if not callable(add_finite_checks):
        return f"add_finite_checks should be a function, got {type(add_finite_checks).__name__}"
    x = torch.ones(3, 4)
    for broken in ("body.0", "head"):
        model = _finite_model(broken)
        handles = add_finite_checks(model)
        if handles is None:
            return "add_finite_checks returned None: return the list of hook handles"
        try:
            model(x)
        except Exception as err:  # the learner chooses the exception type
            if broken not in str(err):
                return (
                    f"the error should name the layer {broken!r} (its name in named_modules()), "
                    f"got {_first_line(err)}"
                )
        else:
            return f"layer {broken!r} output Inf and no hook raised an error"
        for handle in handles:
            handle.remove()
        try:
            model(x)
        except Exception as err:
            return f"after handle.remove() the model still raised {_first_line(err)}"
    healthy = _finite_model(None)
    add_finite_checks(healthy)
    try:
        healthy(x)
    except Exception as err:
        return f"a model with finite outputs raised {_first_line(err)}"
    return None


def safe_step_problem(safe_step: Callable[..., Any]) -> str | None:
    """Chapter 13, exercise 2: what is wrong with ``safe_step(model, optimizer, loss)``, or
    ``None`` when it backpropagates ``loss`` and steps only when the loss and the gradient norm
    are finite, returns True when it stepped, and otherwise leaves the weights unchanged and the
    gradients cleared and returns False. For ``helpers.exercises.report``.

    >>> safe_step_problem(lambda model, optimizer, loss: None)
    'safe_step returned None: return True when it stepped, False when it skipped'
    """
    if not callable(safe_step):
        return f"safe_step should be a function, got {type(safe_step).__name__}"

    def trial(kind: str) -> tuple[Any, bool, bool]:
        torch.manual_seed(0)
        model = nn.Linear(3, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        before = [p.detach().clone() for p in model.parameters()]
        if kind == "finite":
            loss = model(torch.ones(2, 3)).pow(2).mean()
        elif kind == "an infinite loss":
            loss = model(torch.tensor([[math.inf, 0.0, 0.0]])).sum()
        else:  # finite loss, NaN gradient: sqrt at 0 has an infinite slope, times 0
            gap = (model.weight - model.weight.detach()).pow(2).sum()
            loss = torch.sqrt(gap) + 0 * model.bias.sum()  # every parameter gets a gradient
        stepped = safe_step(model, optimizer, loss)
        changed = any(
            not torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True)
        )
        cleared = all(p.grad is None or not p.grad.any() for p in model.parameters())
        return stepped, changed, cleared

    try:
        results = {kind: trial(kind) for kind in ("finite", "an infinite loss", "a NaN gradient")}
    except Exception as err:
        return f"safe_step raised {_first_line(err)}"
    stepped, changed, _ = results["finite"]
    if stepped is None:
        return "safe_step returned None: return True when it stepped, False when it skipped"
    if not (stepped is True and changed):
        return "with a finite loss safe_step should step the optimizer and return True"
    hints = {
        "an infinite loss": "look at the loss before you backpropagate it",
        "a NaN gradient": "the loss was finite but a gradient was NaN: look at the gradient norm "
        "too, after backward",
    }
    for kind, hint in hints.items():
        stepped, changed, cleared = results[kind]
        if stepped is not False or changed:
            return f"with {kind} safe_step stepped anyway: {hint}"
        if not cleared:
            return (
                f"with {kind} safe_step skipped but left the bad gradients: clear them (zero_grad)"
            )
    return None


def sample_noise_problem(noise: Callable[[int, int, int], Any]) -> str | None:
    """Chapter 13, exercise 3: what is wrong with ``noise(seed, epoch, index)``, or ``None``
    when it returns 4 floats that depend only on its three arguments (not on NumPy's or torch's
    global generators), leaves those generators as they were, and gives different values for
    every different (seed, epoch, index) of a small grid. For ``helpers.exercises.report``.

    >>> sample_noise_problem(lambda seed, epoch, index: None)
    'noise returned None: return an array of 4 floats'
    >>> sample_noise_problem(lambda s, e, i: np.random.default_rng(s + e + i).random(4))[:33]
    'noise(0, 0, 1) and noise(0, 1, 0)'
    """
    if not callable(noise):
        return f"noise should be a function, got {type(noise).__name__}"
    grid = [(s, e, i) for s in range(3) for e in range(3) for i in range(3)]
    grid += [(0, 0, i) for i in (3, 9, 27, 1000)] + [(0, e, 0) for e in (3, 9, 27)]
    grid += [(s, 0, 0) for s in (3, 9, 27, 1000)]  # beyond the box: s*9 + e*3 + i collides
    # and far beyond it, where folds with wider multipliers (s*10**5 + e*10**4 + i) collide
    large = [10**k for k in range(4, 9)] + [2**k for k in (16, 20, 24, 31)]
    grid += [(0, 0, n) for n in large] + [(0, n, 0) for n in large] + [(n, 0, 0) for n in large]
    try:
        first = noise(0, 0, 5)
        np.random.rand(7)  # move the global generators on (without reseeding them)
        torch.rand(7)
        numpy_state, torch_state = np.random.get_state()[1].copy(), torch.get_rng_state()
        again = noise(0, 0, 5)
        values = {key: noise(*key) for key in grid}
        numpy_moved = not np.array_equal(np.random.get_state()[1], numpy_state)
        torch_moved = not torch.equal(torch.get_rng_state(), torch_state)
    except Exception as err:
        return f"noise raised {_first_line(err)}"
    if first is None:
        return "noise returned None: return an array of 4 floats"
    first, again = np.asarray(first, dtype=float), np.asarray(again, dtype=float)
    if first.shape != (4,):
        return f"noise should return 4 values, got shape {first.shape}"
    if not np.array_equal(first, again):
        return (
            "the same (seed, epoch, index) gave other values after the global generators moved: "
            "draw from a generator of your own, made from the three numbers only"
        )
    if numpy_moved or torch_moved:
        which = "NumPy's" if numpy_moved else "torch's"
        return (
            f"noise changed {which} global generator (a reseed or a draw from it): the rest of "
            "the program's randomness now depends on it; use a generator of your own"
        )
    base = np.asarray(values[0, 0, 0], dtype=float)
    for key in ((0, 0, 1), (0, 1, 0), (1, 0, 0)):
        shift = np.asarray(values[key], dtype=float) - base
        if np.ptp(shift) < 1e-9 < abs(shift[0]):  # one draw moved by a constant: not random
            return (
                f"noise{key} is noise(0, 0, 0) shifted by {shift[0]:g}: each (seed, epoch, index) "
                "should draw 4 random values of its own, not move one draw"
            )
    seen: dict[tuple, tuple] = {}
    for key, value in values.items():
        fingerprint = tuple(np.asarray(value, dtype=float).round(12))
        if fingerprint in seen:
            return (
                f"noise{seen[fingerprint]} and noise{key} gave the same values: combine the "
                "three numbers so that no two triples collide (arithmetic on them can always "
                "collide; a seed can be more than one number)"
            )
        seen[fingerprint] = key
    return None
