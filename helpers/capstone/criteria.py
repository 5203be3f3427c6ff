"""The capstones' grades: criteria judged one at a time, each printed as ✓, or ✗ with what is
wrong and a hint."""

from __future__ import annotations

from collections.abc import Callable


class Criterion:
    """One line of the grade: a name, and a function returning a problem (str) or None."""

    def __init__(self, name: str, judge: Callable[[], str | None]) -> None:
        self.name, self.judge = name, judge


def _print(ok: bool, name: str, problem: str | None) -> None:
    print(f"✓ {name}" if ok else f"✗ {name}\n    {problem}")


def run_criteria(criteria: list[Criterion]) -> dict[str, str | None]:
    """Judge each criterion in order; print ✓ or ✗ with its problem; return ``{name: problem}``.

    A criterion that needs an earlier one (the model must load before it is tested) says so
    instead of crashing; a crash in the learner's code is reported as the problem.
    """
    results: dict[str, str | None] = {}
    for criterion in criteria:
        try:
            problem = criterion.judge()
        except Blocked as blocked:
            problem = f"not checked: {blocked}"
        except Exception as err:  # the learner's model or files made the check fail
            problem = f"checking it raised {type(err).__name__}: {err}"
        results[criterion.name] = problem
        _print(problem is None, criterion.name, problem)
    met = sum(p is None for p in results.values())
    print(f"{met} of {len(results)} criteria met" + (": done" if met == len(results) else ""))
    return results


class Blocked(Exception):
    """A criterion cannot be judged because an earlier one failed."""
