"""Checks for lesson 03 · Autograd's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

import dis
from collections.abc import Callable
from typing import Any

import torch

from helpers.exercises import close, filled, report, tensor_close, true


def exercise_1(
    X: torch.Tensor, y: torch.Tensor, v: torch.Tensor, sq_loss: Any, by_formula: Any
) -> None:
    """The mean squared error of ``X @ v`` against ``y``, its gradient in ``v.grad`` by
    ``backward()``, and the same gradient by the formula ``2 X^T (X v - y) / N``."""
    v0 = v.detach()
    residual = X @ v0 - y
    expected_loss = (residual**2).mean().item()
    expected_grad = 2 * X.T @ residual / len(X)

    def grad_problem() -> str | None:
        if v.grad is None:
            return "v.grad is None: call backward() on sq_loss (once)"
        for times in (2, 3, 4):
            if torch.allclose(v.grad, times * expected_grad, atol=1e-5):
                return (
                    f"v.grad is {times} times the gradient: backward() ran {times} times and "
                    "added up. Set v.grad = None, then run your cell once"
                )
        return tensor_close("v.grad", v.grad, expected_grad, atol=1e-5)

    report(
        filled(sq_loss=sq_loss, by_formula=by_formula),
        lambda: true(
            isinstance(sq_loss, torch.Tensor) and sq_loss.numel() == 1,
            "sq_loss should be a tensor holding one number (the mean over the rows)",
        ),
        lambda: close(
            "sq_loss",
            sq_loss,
            expected_loss,
            hint="square the differences between X @ v and y, then take their mean",
        ),
        lambda: true(
            sq_loss.grad_fn is not None,
            "sq_loss has no grad_fn: compute it from v, which requires grad",
        ),
        grad_problem,
        lambda: tensor_close(
            "by_formula",
            by_formula,
            expected_grad,
            atol=1e-5,
            hint="X.T @ (the residuals X @ v - y), times 2, divided by the number of rows",
        ),
        done="v.grad from backward() equals 2 X^T (X v - y) / N, the gradient by the formula",
    )


def _empty(params: Any, lr: Any) -> None:
    """A function whose body is only a docstring or `...`, as the starter is."""
    ...


def _steps(fn: Any) -> list[tuple[str, Any]]:
    """The instructions ``fn`` compiles to, by name and value (not by index)."""
    return [(i.opname, i.argval) for i in dis.get_instructions(fn) if i.opname != "RESUME"]


def _does_nothing(fn: Any) -> bool:
    """Whether ``fn``'s body compiles to nothing but ``return None`` (a starter left as it is)."""
    return hasattr(fn, "__code__") and _steps(fn) == _steps(_empty)


def exercise_2(sgd_step: Callable[..., Any] | Any) -> None:
    """``sgd_step(params, lr)`` moves each tensor against its gradient by ``lr`` times it, in
    place under ``no_grad``, and resets its gradient."""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(20, 3, generator=gen)
    y = torch.randn(20, generator=gen)
    w = torch.randn(3, generator=gen).requires_grad_()
    b = torch.zeros((), requires_grad=True)
    ((X @ w + b - y) ** 2).mean().backward()
    start = {"w": w.detach().clone(), "b": b.detach().clone()}
    grads = {"w": w.grad.clone(), "b": b.grad.clone()}
    lr = 0.1
    outcome: dict[str, Any] = {}

    def run() -> str | None:
        try:
            outcome["returned"] = sgd_step([w, b], lr)
        except RuntimeError as err:
            if "leaf Variable" in str(err):
                return (
                    "updating w in place raised 'a leaf Variable that requires grad is being "
                    "used in an in-place operation': do the update under torch.no_grad()"
                )
            raise
        return None

    def moved() -> str | None:
        if torch.equal(w.detach(), start["w"]):
            if _does_nothing(sgd_step):
                return "fill in `sgd_step` (it changed nothing)"
            return (
                "w did not change: change the tensors in params in place (`-=`); "
                "`p = p - ...` only rebinds the name p inside your function"
            )
        for name, p in (("w", w), ("b", b)):
            problem = tensor_close(
                f"{name} after the step",
                p.detach(),
                start[name] - lr * grads[name],
                atol=1e-6,
                hint="subtract lr times the gradient",
            )
            if problem:
                return problem
        return None

    report(
        filled(sgd_step=sgd_step),
        lambda: true(callable(sgd_step), "sgd_step should be a function of (params, lr)"),
        run,
        moved,
        lambda: true(
            w.is_leaf and b.is_leaf and w.requires_grad,
            "after the step w is no longer a leaf that requires grad: the update was recorded",
        ),
        lambda: true(
            (w.grad is None or not w.grad.any()) and (b.grad is None or not b.grad.any()),
            "the gradients are still there: reset them (set .grad to None), or the next "
            "backward() adds to them",
        ),
        done="sgd_step moves each parameter by -lr × its gradient, in place, and resets it",
    )
