"""Where the memory of a training step goes: a calculator, and the meters that check it.

- :func:`estimate` adds up parameters, gradients, optimizer state and the activations each layer
  saves for backward (:data:`LAYER_SAVES` lists the rules), from one forward pass without
  autograd.
- :class:`SavedTensors` counts what autograd really saves, with
  ``torch.autograd.graph.saved_tensors_hooks``: exact, deterministic, and the same on every
  device for the layers of :data:`LAYER_SAVES` except ``Dropout`` (its mask is a float tensor
  on a CPU, a 1-byte bool tensor on a GPU). :func:`saved_bytes` is the one-call form.
- :class:`AllocatedBytes` follows every tensor allocated while it is active, like
  ``torch.cuda.memory_allocated``/``max_memory_allocated`` but on any device;
  :func:`cuda_peak_bytes` reads the CUDA allocator itself.

Bytes are counted per *storage*: a view (``x.t()``, ``x.flatten()``) shares its base's memory,
so tensors that are views of one storage count once, with the whole storage.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import checkpoint

# Copies of the trainable parameters an optimizer keeps as state (Adam: exp_avg, exp_avg_sq).
OPTIMIZER_COPIES = {"sgd": 0, "sgd-momentum": 1, "adam": 2, "adamw": 2}

# What each layer saves for backward, besides its parameters (autograd's rules, measured).
LAYER_SAVES = {
    "Conv1d/2d/3d, Linear": "its input",
    "BatchNorm1d/2d/3d": "its input (+ the batch mean and 1/std per channel in training)",
    "ReLU, Sigmoid, Tanh, Softmax, LogSoftmax": "its output",
    "LeakyReLU, GELU, SiLU, AvgPool1d/2d/3d": "its input",
    "MaxPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d": "its input + int64 indices of its output",
    "AdaptiveAvgPool1d/2d/3d": "its input (nothing when it pools to size 1: a mean)",
    "Dropout (training, 0 < p < 1)": "its mask: input's dtype on CPU, 1-byte bool on CUDA",
    "Flatten, Unflatten, Identity; Dropout in eval mode": "nothing",
}

_SAVES_INPUT = (nn.LeakyReLU, nn.GELU, nn.SiLU, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
_SAVES_OUTPUT = (nn.ReLU, nn.Sigmoid, nn.Tanh, nn.Softmax, nn.LogSoftmax)
_MAX_POOLS = (
    nn.MaxPool1d,
    nn.MaxPool2d,
    nn.MaxPool3d,
    nn.AdaptiveMaxPool1d,
    nn.AdaptiveMaxPool2d,
    nn.AdaptiveMaxPool3d,
)
_ADAPTIVE_AVG_POOLS = (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)
_SAVES_NOTHING = (nn.Flatten, nn.Unflatten, nn.Identity)
# Devices where dropout runs as one fused kernel that keeps a bool mask (ATen's Dropout.cpp);
# elsewhere it multiplies by a noise tensor of the input's dtype and saves that.
_FUSED_DROPOUT_DEVICES = {"cuda", "xpu", "lazy", "privateuseone"}


def dropout_mask_bytes(x: torch.Tensor, p: float, training: bool = True) -> int:
    """Return the bytes ``F.dropout(x, p, training)`` saves for backward: its mask.

    A 1-byte bool per element on CUDA (and XPU), a tensor of ``x``'s dtype on a CPU; nothing in
    evaluation mode or for ``p == 0``; a scalar for ``p == 1`` (the output is ``x * 0``).

    >>> dropout_mask_bytes(torch.zeros(8, 16), 0.5)  # on a CPU: float32 noise
    512
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, got {p}")
    if not training or p == 0 or x.numel() == 0:
        return 0
    if p == 1:
        return x.element_size()
    if x.device.type in _FUSED_DROPOUT_DEVICES:
        return x.numel()
    return x.numel() * x.element_size()


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Return the bytes of the distinct storages behind ``tensors`` (views count once).

    >>> x = torch.zeros(10, 10)
    >>> storage_bytes([x, x.t(), x[0]])
    400
    """
    sizes = {}
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected tensors, got {type(t).__name__}")
        storage = t.untyped_storage()
        sizes[(t.device, storage.data_ptr())] = storage.nbytes()
    return sum(sizes.values())


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Return the bytes of the tensors an optimizer keeps as state (empty before its first step).

    >>> w = nn.Parameter(torch.zeros(100))
    >>> opt = torch.optim.Adam([w])
    >>> w.grad = torch.ones(100); opt.step()
    >>> optimizer_state_bytes(opt)  # exp_avg + exp_avg_sq + a 4-byte step counter
    804
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"expected a torch.optim.Optimizer, got {type(optimizer).__name__}")
    tensors = [v for state in optimizer.state.values() for v in state.values()]
    return storage_bytes(t for t in tensors if isinstance(t, torch.Tensor))


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes a training step needs, by kind; ``total`` adds them up."""

    parameters: int
    gradients: int
    optimizer_state: int
    activations: int

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer_state + self.activations

    def rows(self) -> dict[str, int]:
        """Return ``{kind: bytes}``, total included, for a table."""
        return {
            "parameters": self.parameters,
            "gradients": self.gradients,
            "optimizer state": self.optimizer_state,
            "activations": self.activations,
            "total": self.total,
        }


def _trainable(module: nn.Module) -> bool:
    return any(p.requires_grad for p in module.parameters(recurse=False))


def _layer_saves(
    module: nn.Module, x: torch.Tensor, out: torch.Tensor, grad_in: bool
) -> tuple[list[torch.Tensor], int]:
    """Return (tensors it keeps, bytes of new tensors it saves) by the rules of LAYER_SAVES."""
    if isinstance(module, nn.Linear):
        return ([x] if _trainable(module) else []), 0
    if isinstance(module, nn.modules.conv._ConvNd):
        return ([x] if grad_in or _trainable(module) else []), 0
    if not (grad_in or _trainable(module)):
        return [], 0  # nothing upstream needs a gradient: autograd records nothing
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        stats = 2 * module.num_features * 4 if module.training else 0  # float32 mean, 1/std
        return [x], stats
    if isinstance(module, _SAVES_OUTPUT):
        return [out], 0
    if isinstance(module, _SAVES_INPUT):
        return [x], 0
    if isinstance(module, _MAX_POOLS):
        return [x], out.numel() * 8  # int64 indices of the maxima
    if isinstance(module, _ADAPTIVE_AVG_POOLS):
        return ([] if all(size == 1 for size in out.shape[2:]) else [x]), 0
    if isinstance(module, _SAVES_NOTHING):
        return [], 0
    if type(module) is nn.Dropout:  # not Dropout1d/2d/3d: their noise is per channel
        return [], dropout_mask_bytes(x, module.p, module.training)
    raise ValueError(f"no rule for {type(module).__name__}: see helpers.memory.LAYER_SAVES")


def activation_bytes_by_layer(model: nn.Module, x: torch.Tensor) -> dict[str, int]:
    """Return the bytes each layer of ``model`` saves for backward on input ``x``.

    Computed from the rules of :data:`LAYER_SAVES` and the shapes of one forward pass without
    autograd, not measured. A tensor that two layers save (a ReLU's output is the next max
    pool's input) counts once, for the first layer. Layers without a rule raise ``ValueError``;
    functional calls inside a custom ``forward`` are not seen.

    >>> net = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 1))
    >>> activation_bytes_by_layer(net, torch.zeros(8, 10))
    {'0': 320, '1': 640, '2': 0}
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected an input tensor, got {type(x).__name__}")
    counted: dict[tuple, int] = {}  # (device, data pointer) of storages already counted
    with_grad = {x.untyped_storage().data_ptr()} if x.requires_grad else set()
    keep: list[torch.Tensor] = []  # keeps tensors alive, so no pointer is reused meanwhile
    per_layer: dict[str, int] = {}
    names = {module: name for name, module in model.named_modules()}

    def hook(module: nn.Module, inputs: tuple, out: Any) -> None:
        if not inputs or not isinstance(inputs[0], torch.Tensor):
            raise ValueError(f"{type(module).__name__} takes no tensor input: no rule for it")
        x = inputs[0]
        grad_in = x.untyped_storage().data_ptr() in with_grad
        tensors, extra = _layer_saves(module, x, out, grad_in)
        total = extra
        for t in tensors:
            key = (t.device, t.untyped_storage().data_ptr())
            if key not in counted:
                counted[key] = t.untyped_storage().nbytes()
                total += counted[key]
        keep.extend([x, out])
        if grad_in or _trainable(module):
            with_grad.add(out.untyped_storage().data_ptr())
        per_layer[names[module]] = per_layer.get(names[module], 0) + total

    leaves = [m for m in model.modules() if not list(m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return per_layer


def estimate(model: nn.Module, x: torch.Tensor, optimizer: str = "adam") -> TrainingMemory:
    """Return the bytes one training step of ``model`` on batch ``x`` needs, by kind.

    Parameters and buffers; one gradient per trainable parameter; the optimizer's state
    (:data:`OPTIMIZER_COPIES` copies of the trainable parameters, plus Adam's 4-byte step counter
    per parameter tensor); the activations saved for backward (:func:`activation_bytes_by_layer`).
    Temporaries (a layer's output before the next layer consumes it, gradients flowing back)
    come on top and are not estimated.

    >>> net = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 1))
    >>> estimate(net, torch.zeros(8, 10), "sgd").rows()["total"]
    2888
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    if optimizer not in OPTIMIZER_COPIES:
        raise ValueError(f"optimizer is one of {sorted(OPTIMIZER_COPIES)}, got {optimizer!r}")
    trainable = [p for p in model.parameters() if p.requires_grad]
    gradients = sum(p.numel() * p.element_size() for p in trainable)
    state = OPTIMIZER_COPIES[optimizer] * gradients
    if optimizer in ("adam", "adamw"):
        state += 4 * len(trainable)  # the step counter: a float32 scalar per parameter tensor
    return TrainingMemory(
        parameters=storage_bytes([*model.parameters(), *model.buffers()]),
        gradients=gradients,
        optimizer_state=state,
        activations=sum(activation_bytes_by_layer(model, x).values()),
    )


class _Saved:
    """What the pack hook stores in the graph instead of the tensor itself."""

    __slots__ = ("__weakref__", "tensor", "version")

    def __init__(self, tensor: torch.Tensor, version: int) -> None:
        # detach: the same storage (and version counter) without the autograd history; keeping
        # the tensor itself would make a cycle (output → its grad_fn → saved output) never freed.
        self.tensor = tensor.detach()
        self.version = version


def _excluded_storages(exclude: nn.Module | Iterable[torch.Tensor]) -> set[tuple]:
    if isinstance(exclude, nn.Module):
        exclude = [*exclude.parameters(), *exclude.buffers()]
    return {(t.device, t.untyped_storage().data_ptr()) for t in exclude}


class SavedTensors:
    """Count the bytes autograd saves for backward while the ``with`` block runs.

    ``saved_bytes``: bytes of the distinct storages saved (views of one storage count once);
    ``alive_bytes``: of those, the bytes still held by a graph now (a graph lets go of them
    when ``backward`` has run or when nothing refers to it any more); ``by_dtype``: the saved
    bytes per dtype. Storages of ``exclude`` (a model's parameters and buffers, which exist
    anyway) are not counted. Autograd skips its check for in-place changes of saved tensors
    when hooks are installed, so the meter does that check itself: a wrong gradient still
    raises ``RuntimeError``.

    >>> w = nn.Parameter(torch.ones(3))
    >>> with SavedTensors(exclude=[w]) as saved:
    ...     y = (w * torch.arange(3.0)).exp().sum()
    >>> saved.saved_bytes, saved.alive_bytes  # arange(3) for mul, and exp's output
    (24, 24)
    >>> y.backward(); saved.alive_bytes
    0
    """

    def __init__(self, exclude: nn.Module | Iterable[torch.Tensor] = ()) -> None:
        self._exclude = _excluded_storages(exclude)
        self._holders: dict[tuple, int] = {}  # storage → number of graph entries holding it
        self._sizes: dict[tuple, int] = {}
        self.saved_bytes = 0
        self.by_dtype: dict[torch.dtype, int] = {}
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _pack(self, tensor: torch.Tensor) -> _Saved:
        held = _Saved(tensor, tensor._version)
        storage = tensor.untyped_storage()
        key = (tensor.device, storage.data_ptr())
        if key not in self._exclude:
            if key not in self._holders:
                self._holders[key] = 0
                self._sizes[key] = storage.nbytes()
                self.saved_bytes += storage.nbytes()
                self.by_dtype[tensor.dtype] = self.by_dtype.get(tensor.dtype, 0) + storage.nbytes()
            self._holders[key] += 1
            weakref.finalize(held, self._release, key)
        return held

    @staticmethod
    def _unpack(held: _Saved) -> torch.Tensor:
        # With hooks autograd skips its own check that a saved tensor was not changed in place
        # since it was saved; do it here, so that a wrong gradient still raises.
        if held.tensor._version != held.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: {held.tensor.dtype} {tuple(held.tensor.shape)} is at version "
                f"{held.tensor._version}; expected version {held.version} instead"
            )
        return held.tensor

    def _release(self, key: tuple) -> None:
        self._holders[key] -= 1
        if self._holders[key] == 0:
            del self._holders[key], self._sizes[key]

    @property
    def alive_bytes(self) -> int:
        return sum(self._sizes.values())

    def __enter__(self) -> SavedTensors:
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._hooks.__exit__(*exc)


def saved_bytes(fn: Callable[[], object], exclude: nn.Module | Iterable[torch.Tensor] = ()) -> int:
    """Run ``fn()`` and return the bytes autograd saved for backward while its result lived.

    >>> net = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 1))
    >>> saved_bytes(lambda: net(torch.zeros(8, 10)), exclude=net)  # input 320 + ReLU out 640
    960
    """
    if not callable(fn):
        raise TypeError(f"saved_bytes needs a callable, got {type(fn).__name__}")
    with SavedTensors(exclude) as meter:
        result = fn()
    del result
    return meter.saved_bytes


class AllocatedBytes(TorchDispatchMode):
    """Follow the bytes of every tensor storage allocated while the ``with`` block runs.

    A ``TorchDispatchMode``: it sees every operator PyTorch runs, backward included.

    ``allocated``: bytes of those storages still alive (it keeps falling after the block, as
    they are freed); ``max_allocated``: the peak inside the block. The counterpart of
    ``torch.cuda.memory_allocated``/``max_memory_allocated`` counted from the block's start, on
    any device: it sees the tensors PyTorch's operators return (views and in-place results are
    not new memory), not an allocator's rounding and caching or a kernel's scratch space, and
    not the process's resident memory.

    >>> with AllocatedBytes() as mem:
    ...     a = torch.zeros(1000)
    ...     b = a + 1
    ...     del b
    >>> mem.max_allocated, mem.allocated
    (8000, 4000)
    """

    def __init__(self) -> None:
        super().__init__()
        self.allocated = 0
        self.max_allocated = 0
        self._followed: set[int] = set()

    def _free(self, key: int, nbytes: int) -> None:
        self.allocated -= nbytes
        self._followed.discard(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {
            id(t.untyped_storage())
            for t in tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor)
        }
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = id(storage)
            if key in self._followed or key in inputs:  # counted already, or a view/in-place
                continue
            self._followed.add(key)
            self.allocated += storage.nbytes()
            self.max_allocated = max(self.max_allocated, self.allocated)
            weakref.finalize(storage, self._free, key, storage.nbytes())
        return out


def cuda_peak_bytes(fn: Callable[[], object], device: torch.device | str = "cuda") -> int:
    """Run ``fn()`` on a CUDA device; return the peak bytes the CUDA allocator handed out
    meanwhile, above what was allocated before (``torch.cuda.max_memory_allocated``)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        raise RuntimeError("cuda_peak_bytes needs a CUDA device")
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    result = fn()
    torch.cuda.synchronize(device)
    del result
    return torch.cuda.max_memory_allocated(device) - before


def graph_nodes(tensor: torch.Tensor) -> int:
    """Return how many autograd nodes a tensor's graph holds (0 for a tensor without history).

    >>> x = torch.ones(2, requires_grad=True)
    >>> graph_nodes((x * 2).sum())  # SumBackward0, MulBackward0, AccumulateGrad
    3
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(tensor).__name__}")
    seen: set[int] = set()
    stack = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return len(seen)


def mib(nbytes: int) -> str:
    """Format bytes as MiB with 2 decimals: ``"21.10 MiB"``.

    >>> mib(22_120_320)
    '21.10 MiB'
    """
    return f"{nbytes / 2**20:.2f} MiB"


def peak_bytes(fn: Callable[[], object]) -> int:
    """Run ``fn()`` under :class:`AllocatedBytes`; return the peak bytes allocated meanwhile.

    >>> peak_bytes(lambda: torch.zeros(1000) + 1)  # the zeros and the sum, alive together
    8000
    """
    if not callable(fn):
        raise TypeError(f"peak_bytes needs a callable, got {type(fn).__name__}")
    with AllocatedBytes() as mem:
        fn()
    return mem.max_allocated


# Exercise checks, for ``helpers.exercises.report``: each returns the first problem it finds
# in a learner's answer as one helpful line, or None when the answer is right.


def evaluation_problem(
    mean_loss: Callable[[nn.Module, list], object],
    model: nn.Module,
    batches: list[tuple[torch.Tensor, torch.Tensor]],
) -> str | None:
    """The problem with ``mean_loss(model, batches)``, if any: it must return the mean of the
    batches' cross-entropy losses as a Python float, without autograd recording anything. The
    model is in evaluation mode meanwhile.

    >>> net = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    >>> data = [(torch.ones(3, 4), torch.tensor([0, 1, 1]))]
    >>> evaluation_problem(lambda model, batches: ..., net, data)
    'mean_loss returns nothing yet: return the mean loss as a Python float'
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            losses = [F.cross_entropy(model(x), y).item() for x, y in batches]
        expected = sum(losses) / len(losses)
        with SavedTensors(exclude=model) as saved:
            result = mean_loss(model, batches)
    finally:
        model.train(was_training)
    if result is None or result is Ellipsis:
        return "mean_loss returns nothing yet: return the mean loss as a Python float"
    if isinstance(result, torch.Tensor):
        return (
            "mean_loss returns a tensor: return a Python float; a tensor with a grad_fn "
            "keeps its whole graph alive"
        )
    if not isinstance(result, float):
        return f"mean_loss returns {type(result).__name__}: return a float"
    if saved.saved_bytes > 0:
        return (
            f"autograd saved {mib(saved.saved_bytes)} for a backward that never comes: "
            "evaluate in a mode where autograd records nothing"
        )
    if abs(result - expected) > 1e-4 * max(1.0, abs(expected)):
        return f"expected a mean loss of {expected:.4f}, got {result:.4f}"
    return None


def checkpointing_problem(
    forward: Callable[[nn.Module, torch.Tensor], object],
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    at_most: float = 0.25,
) -> str | None:
    """The problem with ``forward(model, x)``, if any: it must return the model's logits, give
    the gradients of ``model(x)``, save at most ``at_most`` of the bytes the plain forward
    saves for backward, and save exactly the bytes of one checkpoint per conv block (an
    ``nn.Sequential``) with the pooling layer after it, the other layers run as usual: a
    checkpoint around the whole model, or around several blocks at once, saves fewer."""
    plain = saved_bytes(lambda: model(x), exclude=model)
    wanted = saved_bytes(lambda: _blocks_with_pools(model, x), exclude=model)
    model.zero_grad(set_to_none=True)
    expected_out = model(x)
    F.cross_entropy(expected_out, y).backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    with SavedTensors(exclude=model) as saved:
        out = forward(model, x)
    if not isinstance(out, torch.Tensor):
        return f"the forward returns {type(out).__name__}: return the model's output (logits)"
    if out.shape != expected_out.shape or not torch.allclose(out, expected_out, atol=1e-5):
        return "the output differs from model(x): run every layer of the model, in order"
    if out.grad_fn is None:
        return "the output has no graph: do not run the forward under no_grad, it must train"
    F.cross_entropy(out, y).backward()
    grads = [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    pairs = zip(grads, expected, strict=True)
    if any(g is None or not torch.allclose(g, e, atol=1e-6) for g, e in pairs):
        return "the gradients differ from those of the plain forward"
    ratio = saved.saved_bytes / plain
    if ratio > at_most:
        return (
            f"it saves {ratio:.0%} of the plain forward's bytes, more than {at_most:.0%}: "
            "a layer outside the checkpointed parts still saves its input (a pool saves its "
            "indices too)"
        )
    found = f"it saves {saved.saved_bytes:,} bytes, where one checkpoint per conv block with"
    found += f" its pool saves {wanted:,}"
    if saved.saved_bytes < wanted:
        return (
            f"{found}: a checkpoint covers more than one block and its pool, or other layers "
            "too; give each block and its pool a checkpoint of their own, and run the other "
            "layers as usual"
        )
    if saved.saved_bytes > wanted:
        return f"{found}: a layer outside the checkpoints still saves its input"
    return None


def _blocks_with_pools(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The course CNN's forward with each conv block checkpointed together with the layer
    after it (its pooling layer): the answer :func:`checkpointing_problem` compares with."""
    layers, i = list(model), 0
    while i < len(layers):
        if isinstance(layers[i], nn.Sequential):
            pair = nn.Sequential(layers[i], layers[i + 1])
            x = checkpoint(pair, x, use_reentrant=False)
            i += 2
        else:
            x, i = layers[i](x), i + 1
    return x
