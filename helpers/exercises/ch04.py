"""Checks for 04 · nn.Module and nn.functional's exercises: the reference answers live here, not
in the notebook."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import equal, filled, report, tensor_close, true


def exercise_1(mlp: nn.Module, sizes: list[int]) -> None:
    """``MLP(sizes)`` registers one Linear layer per pair of consecutive sizes in an
    ``nn.ModuleList`` and applies ReLU between them, not after the last."""
    x = torch.randn(4, sizes[0], generator=torch.Generator().manual_seed(0))

    def layer_by_layer() -> torch.Tensor:
        h = x
        for layer in mlp.layers[:-1]:
            h = F.relu(layer(h))
        return mlp.layers[-1](h)

    report(
        filled(**{"self.layers": mlp.layers}),
        lambda: true(
            isinstance(mlp.layers, nn.ModuleList),
            f"self.layers should be an nn.ModuleList, got {type(mlp.layers).__name__} "
            "(a plain list hides its layers from mlp.parameters())",
        ),
        lambda: equal(
            "the parameter count",
            sum(p.numel() for p in mlp.parameters()),
            sum((n_in + 1) * n_out for n_in, n_out in pairwise(sizes)),
            hint="one Linear layer, with its bias, between each two consecutive sizes",
        ),
        lambda: filled(**{"the result of forward": mlp(x)}),
        lambda: tensor_close(
            "mlp(x)", mlp(x), layer_by_layer(), atol=1e-6, hint="ReLU after each layer but the last"
        ),
        done="MLP registers one Linear per pair of sizes, with ReLU only between them",
    )


def _last_layer(model: nn.Module) -> nn.Module:
    """The last sub-module that holds parameters of its own."""
    return [m for m in model.modules() if list(m.parameters(recurse=False))][-1]


def exercise_2(model: nn.Module, opt: torch.optim.Optimizer | Any) -> None:
    """Only the last layer of ``model`` requires gradients, only it is in ``opt``, and only it
    changes in one step."""
    n_inputs = next(model.parameters()).shape[1]

    def names_in(params: Iterable[torch.Tensor]) -> list[str]:
        ids = {id(p) for p in params}
        return [name for name, p in model.named_parameters() if id(p) in ids]

    def changed_by_one_step() -> list[str]:
        before = copy.deepcopy(model.state_dict())
        opt.zero_grad()
        batch = torch.randn(8, n_inputs, generator=torch.Generator().manual_seed(0))
        model(batch).pow(2).mean().backward()
        opt.step()
        return [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]

    def head() -> list[str]:
        return names_in(_last_layer(model).parameters())

    report(
        filled(opt=opt),
        lambda: equal(
            "the trainable parameters",
            names_in(p for p in model.parameters() if p.requires_grad),
            head(),
            hint="requires_grad decides what is trainable, and a whole module can be switched "
            "at once",
        ),
        lambda: equal(
            "the parameters in opt",
            names_in(p for group in opt.param_groups for p in group["params"]),
            head(),
            hint="the optimizer should hold exactly the parameters that still require gradients",
        ),
        lambda: equal("the parameters a step changed", changed_by_one_step(), head()),
        done="only the last layer is trainable, in the optimizer, and changed by a step",
    )


def exercise_3(
    net: nn.Module,
    shapes: dict[str, Any],
    hooks: list[Any] | Any,
    n_convolutions: int | Any,
    smallest_side: int | Any,
) -> None:
    """Forward hooks recorded the output shape of every ``nn.Conv2d`` of ``net`` by name, as
    ``torch.fx``'s ShapeProp finds them, and the two numbers read from ``shapes``."""
    from torch.fx.passes.shape_prop import ShapeProp

    expected: dict[str, tuple[int, ...]] = {}  # name -> output shape, found by tracing

    def remove_hooks_and_trace() -> None:
        for hook in hooks:
            hook.remove()  # the traced copy shares net's modules: keep the hooks out of it
        traced = torch.fx.symbolic_trace(net)
        with torch.inference_mode():
            ShapeProp(traced).propagate(torch.randn(1, 3, 64, 64))
        convs = {name for name, m in net.named_modules() if isinstance(m, nn.Conv2d)}
        for node in traced.graph.nodes:
            if node.op == "call_module" and node.target in convs:
                expected[node.target] = tuple(node.meta["tensor_meta"].shape)

    def shapes_problem() -> str | None:
        missing = [name for name in expected if name not in shapes]
        if missing:
            return (
                f"shapes has {len(expected) - len(missing)} of the {len(expected)} convolutions "
                f"(not {missing[0]!r}): every nn.Conv2d of net needs a hook, and each hook must "
                "know its own module's name (remember the pitfall of hooks made in a loop, 03)"
            )
        extra = [name for name in shapes if name not in expected]
        if extra:
            return f"shapes has modules that are not convolutions, e.g. {extra[0]!r}"
        wrong = [name for name in expected if tuple(shapes[name]) != expected[name]]
        if wrong:
            name = wrong[0]
            return (
                f"shapes[{name!r}] is {shapes[name]}, expected {expected[name]}: record the "
                "shape of what the module returned (which of the hook's arguments is that?)"
            )
        return None

    report(
        filled(hooks=hooks, n_convolutions=n_convolutions, smallest_side=smallest_side),
        remove_hooks_and_trace,  # finds no problem: it fills `expected`
        shapes_problem,
        lambda: equal("n_convolutions", n_convolutions, len(expected)),
        lambda: equal("smallest_side", smallest_side, min(min(s[-2:]) for s in expected.values())),
        done="the hooks saw every convolution's output shape, as tracing does",
    )
