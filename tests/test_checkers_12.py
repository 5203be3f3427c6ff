"""The exercise checkers of chapter 12's second cookbook notebook: right answers pass, the likely
wrong ones are told what is wrong (tried without executing the notebook)."""

from __future__ import annotations

import pandas as pd
import torch

from helpers.authoring import course
from helpers.exercises import ch12_routes


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def test_the_module_is_named_after_the_notebook():
    names = {p.name: course.exercise_module(p) for p in course.cookbook_paths()}
    assert names["12_deployment_routes_recipes.ipynb"] == "ch12_routes"


def right_guard(x: object) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError("not a tensor")
    if x.dtype != torch.uint8 or x.dim() != 4 or x.shape[1:] != (3, 32, 32):
        raise ValueError(f"wrong images: {x.dtype} {tuple(x.shape)}")
    if not 1 <= len(x) <= 2048:
        raise ValueError(f"{len(x)} images")
    return x.contiguous()


def test_input_guard_right_and_wrong(capsys):
    assert verdict(capsys, lambda: ch12_routes.exercise_1(right_guard)).startswith("✓")
    assert verdict(capsys, lambda: ch12_routes.exercise_1(...)).startswith("✗ fill in")

    def no_upper_bound(x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.uint8 or x.shape[1:] != (3, 32, 32) or len(x) < 1:
            raise ValueError("wrong")
        return x.contiguous()

    out = verdict(capsys, lambda: ch12_routes.exercise_1(no_upper_bound))
    assert out.startswith("✗") and "2049 images" in out

    def shape_only(x: torch.Tensor) -> torch.Tensor:  # forgets the dtype
        if x.dim() != 4 or x.shape[1:] != (3, 32, 32) or not 1 <= len(x) <= 2048:
            raise ValueError("wrong shape")
        return x.contiguous()

    out = verdict(capsys, lambda: ch12_routes.exercise_1(shape_only))
    assert out.startswith("✗") and "float images" in out

    def no_channel_check(x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.uint8 or x.dim() != 4 or x.shape[-2:] != (32, 32):
            raise ValueError("wrong")
        if not 1 <= len(x) <= 2048:
            raise ValueError("wrong size")
        return x.contiguous()

    out = verdict(capsys, lambda: ch12_routes.exercise_1(no_channel_check))
    assert out.startswith("✗") and "grey images" in out

    def keeps_the_layout(x: object) -> object:
        right_guard(x)
        return x

    out = verdict(capsys, lambda: ch12_routes.exercise_1(keeps_the_layout))
    assert out.startswith("✗") and "channels-last" in out and "in order" in out

    def returns_nothing(x: object) -> None:
        right_guard(x)

    out = verdict(capsys, lambda: ch12_routes.exercise_1(returns_nothing))
    assert out.startswith("✗") and "NoneType" in out

    def with_assert(x: torch.Tensor) -> torch.Tensor:
        assert isinstance(x, torch.Tensor) and x.dtype == torch.uint8, "wrong"
        return right_guard(x)

    out = verdict(capsys, lambda: ch12_routes.exercise_1(with_assert))
    assert out.startswith("✗") and "python -O" in out

    def too_strict(x: torch.Tensor) -> torch.Tensor:  # a batch of exactly 8, as exported
        if len(x) != 8:
            raise ValueError("expected 8 images")
        return right_guard(x)

    out = verdict(capsys, lambda: ch12_routes.exercise_1(too_strict))
    assert out.startswith("✗") and "refused a batch of 1" in out

    def silent(x: object) -> torch.Tensor:
        try:
            return right_guard(x)
        except (TypeError, ValueError):
            raise ValueError from None  # no message

    out = verdict(capsys, lambda: ch12_routes.exercise_1(silent))
    assert out.startswith("✗") and "without a message" in out


def right_choice(table: pd.DataFrame, batch: int, min_same_class: float) -> str:
    return str(table[table["same class"] >= min_same_class][f"ms, batch {batch}"].idxmin())


def test_route_choice_right_and_wrong(capsys):
    assert verdict(capsys, lambda: ch12_routes.exercise_2(right_choice)).startswith("✓")

    def ignores_agreement(table: pd.DataFrame, batch: int, floor: float) -> str:
        return str(table[f"ms, batch {batch}"].idxmin())

    out = verdict(capsys, lambda: ch12_routes.exercise_2(ignores_agreement))
    assert out.startswith("✗") and "floor" in out and "int8" in out

    def always_one_image(table: pd.DataFrame, batch: int, floor: float) -> str:
        return right_choice(table, 1, floor)

    out = verdict(capsys, lambda: ch12_routes.exercise_2(always_one_image))
    assert out.startswith("✗") and "batch of 256" in out

    def slowest(table: pd.DataFrame, batch: int, floor: float) -> str:
        return str(table[table["same class"] >= floor][f"ms, batch {batch}"].idxmax())

    out = verdict(capsys, lambda: ch12_routes.exercise_2(slowest))
    assert out.startswith("✗") and "a faster route also reaches the floor" in out

    def fixed_floor(table: pd.DataFrame, batch: int, floor: float) -> str:
        return right_choice(table, batch, 0.99)

    out = verdict(capsys, lambda: ch12_routes.exercise_2(fixed_floor))
    assert out.startswith("✗") and "at least `min_same_class`" in out

    def strictly_above(table: pd.DataFrame, batch: int, floor: float) -> str:
        return str(table[table["same class"] > floor][f"ms, batch {batch}"].idxmin())

    out = verdict(capsys, lambda: ch12_routes.exercise_2(strictly_above))
    assert out.startswith("✗") and "at least" in out

    def position(table: pd.DataFrame, batch: int, floor: float) -> int:
        return int(table[f"ms, batch {batch}"].argmin())

    out = verdict(capsys, lambda: ch12_routes.exercise_2(position))
    assert out.startswith("✗") and "route's name" in out


def test_the_example_tables_hold_their_traps():
    first, second = ch12_routes.example_tables()
    for table in (first, second):
        fastest = table["ms, batch 1"].idxmin()
        assert table.loc[fastest, "same class"] < 0.99  # ignoring agreement is caught
    assert ch12_routes.fastest_agreeing(first, 1, 0.99) != ch12_routes.fastest_agreeing(
        first, 256, 0.99
    )
