"""The picture of where a training loop's time goes: the phases of each profiled step (waiting
for data, forward, backward, optimizer) drawn along one time axis, one row per run, so that a run
before a fix and the same run after it can be compared at a glance.

The phases are the ``torch.profiler.record_function`` blocks the loop labelled; :func:`phase_spans`
reads them from a profile, :func:`draw_timeline` draws them.

>>> spans = [("data", 0.0, 30.0), ("forward", 30.0, 40.0), ("data", 40.0, 70.0)]
>>> fig = draw_timeline({"a run": spans}, phases=["data", "forward"])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch

PHASES = ("data", "forward", "backward", "optimizer")
# Waiting for data stands out in orange; the model's own phases are blues and a green.
COLOURS = ("#e6550d", "#3182bd", "#9ecae1", "#31a354", "#756bb1", "#969696")
WIDTH = 7.0  # inches: about the text column of the course's site

Span = tuple[str, float, float]


def phase_spans(prof: Any, phases: Sequence[str] = PHASES) -> list[Span]:
    """Return ``(phase, start ms, end ms)`` for every block named in ``phases`` that the
    profile ``prof`` recorded on the CPU, in time order, in milliseconds from the first one's
    start.

    ``prof`` is a finished ``torch.profiler.profile`` (anything with ``.events()``). Raises
    ``ValueError`` when it recorded none of the phases.
    """
    if not hasattr(prof, "events"):
        raise ValueError(f"phase_spans needs a torch profiler profile, got {type(prof).__name__}")
    from torch.autograd import DeviceType

    wanted = set(phases)
    events = [
        e
        for e in prof.events()
        if e.name in wanted and getattr(e, "device_type", DeviceType.CPU) == DeviceType.CPU
    ]
    if not events:
        raise ValueError(
            f"the profile holds none of the phases {list(phases)}: label them with "
            "record_function(name) inside the profiled loop"
        )
    events.sort(key=lambda e: e.time_range.start)
    zero = events[0].time_range.start
    return [
        (e.name, (e.time_range.start - zero) / 1000, (e.time_range.end - zero) / 1000)
        for e in events
    ]


def _spans(run: Any, phases: Sequence[str]) -> list[Span]:
    """A run's spans: read from a profile, or checked when given as a list."""
    if hasattr(run, "events"):
        return phase_spans(run, phases)
    try:
        spans = [(str(name), float(start), float(end)) for name, start, end in run]
    except (TypeError, ValueError) as err:
        raise ValueError(
            "each run should be a profile or a list of (phase, start ms, end ms)"
        ) from err
    if not spans:
        raise ValueError("a run has no spans to draw")
    for name, start, end in spans:
        if end < start:
            raise ValueError(f"the span {name!r} ends ({end}) before it starts ({start})")
        if name not in phases:
            raise ValueError(f"the span {name!r} is not one of the phases {list(phases)}")
    return spans


def draw_timeline(runs: Mapping[str, Any], phases: Sequence[str] = PHASES) -> Figure:
    """Return a figure with one row per run (top to bottom in the order given): each phase of
    each step a coloured bar along a shared time axis in milliseconds, and at the right of each
    row its total time and the share of it spent in the first phase (``data`` by default).

    Each run is a finished ``torch.profiler.profile`` whose loop labelled its phases with
    ``record_function``, or a list of ``(phase, start ms, end ms)``. Raises ``ValueError`` for
    no runs, more phases than colours, or a run without spans of the phases.
    """
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("draw_timeline needs a dict of at least one run: {name: profile}")
    if not phases or len(phases) > len(COLOURS):
        raise ValueError(f"give between 1 and {len(COLOURS)} phases, got {len(phases)}")
    colour = dict(zip(phases, COLOURS, strict=False))
    drawn = {name: _spans(run, phases) for name, run in runs.items()}
    longest = max(end for spans in drawn.values() for _, _, end in spans)

    fig = plt.figure(figsize=(WIDTH, 1.2 + 0.55 * len(drawn)), layout="constrained")
    ax = fig.add_subplot()
    for row, spans in enumerate(drawn.values()):
        y = len(drawn) - 1 - row  # the first run on top
        for phase, start, end in spans:
            ax.barh(y, end - start, left=start, height=0.6, color=colour[phase], linewidth=0)
        total = spans[-1][2] - spans[0][1]
        first = sum(end - start for phase, start, end in spans if phase == phases[0])
        share = first / total if total > 0 else 0.0
        ax.text(
            longest * 1.02,
            y,
            f"{total:.0f} ms\n{share:.0%} {phases[0]}",
            va="center",
            fontsize=10,
        )
    ax.set_yticks(range(len(drawn)), list(drawn)[::-1])
    ax.set_xlim(0, longest * 1.2)
    ax.set_xlabel("milliseconds from the first profiled step")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(
        handles=[Patch(color=colour[p], label=p) for p in phases],
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=len(phases),
        frameon=False,
    )
    return fig
