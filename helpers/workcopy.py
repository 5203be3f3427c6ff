"""The learner's working copy: `make lab` opens the course from `work/`, never from `notebooks/`.

JupyterLab saves a notebook a learner runs (autosave, every two minutes): opened from
`notebooks/`, that overwrote the stored reference outputs and filled `git status` with changes.
`work/` (git-ignored) is seeded from `notebooks/` the first time and gains notebooks added
later; a learner's copy is never overwritten, except on request. Command line::

    python -m helpers.workcopy sync              # copy what work/ lacks (make lab does this)
    python -m helpers.workcopy restore 01 [03]   # put back the stored lessons 01 (and 03)
    python -m helpers.workcopy restore cookbook/01  # ... the cookbook notebook of chapter 01
    python -m helpers.workcopy restore --all     # ... of every notebook
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"  # the stored notebooks (no import of the authors' tools)
WORK = ROOT / "work"
# Documents the notebooks link to: not edited by a learner, so always brought up to date.
DOCUMENTS = ("RECIPES.md", "ERRORS.md", "MODERN_APIS.md", "WORKSHOP.md")


def _copy(source: Path, target: Path) -> None:
    """Copy through a temporary file, so a copy is whole or absent."""
    partial = target.with_name(f".{target.name}.partial")
    shutil.copy2(source, partial)
    partial.replace(target)


def stored(source: Path = NOTEBOOKS) -> list[Path]:
    """Return the course's notebooks relative to ``source``: the lessons, the cookbook, then the
    projects' briefs (not their reference solutions)."""
    found = (
        sorted(source.glob("[0-9][0-9]_*.ipynb"))
        + sorted(source.glob("cookbook/[0-9][0-9]_*.ipynb"))
        + sorted(source.glob("projects/[0-9][0-9]_*.ipynb"))
    )
    return [p.relative_to(source) for p in found]


def sync(work: Path = WORK, source: Path = NOTEBOOKS) -> list[Path]:
    """Copy into ``work`` each course notebook it does not have yet, and refresh the indexes;
    return the notebooks copied. A notebook already there is left as the learner saved it."""
    work.mkdir(parents=True, exist_ok=True)
    copied = []
    for rel in stored(source):
        target = work / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy(source / rel, target)
            copied.append(target)
    for name in DOCUMENTS:
        if (source / name).is_file():
            _copy(source / name, work / name)
    return copied


def outdated(work: Path = WORK, source: Path = NOTEBOOKS) -> list[Path]:
    """Return the working copies whose stored notebook changed after the copy was made (a
    `git pull` brought a new version); the learner's copy is kept, ``restore`` takes the new."""
    return [
        work / rel
        for rel in stored(source)
        if (work / rel).is_file() and (source / rel).stat().st_mtime > (work / rel).stat().st_mtime
    ]


def restore(names: list[str] | None, work: Path = WORK, source: Path = NOTEBOOKS) -> list[Path]:
    """Overwrite the working copies of the notebooks named (a lesson as ``"01"``,
    ``"01_tensors"`` or ``"01_tensors.ipynb"``; a cookbook notebook as ``"cookbook/01"`` or
    ``"01_tensors_recipes"``; all of them for ``None``) with the stored versions."""
    known = stored(source)
    if names is None:
        chosen = known
    else:
        chosen = []
        for name in names:
            prefix = name.removesuffix(".ipynb")
            found = [p for p in known if p.as_posix().startswith(prefix)]
            found = found or [p for p in known if p.name.startswith(prefix)]
            if len(found) > 1 and re.fullmatch(r"cookbook/\d\d", prefix):
                # a chapter's cookbook continued in a second notebook: "cookbook/10" is its first
                found = [min(found, key=lambda p: len(p.name))]
            if len(found) != 1:
                listed = ", ".join(p.as_posix()[: -len(p.name) + 2] for p in known)
                raise ValueError(f"{name!r} names {len(found)} notebooks; use one of: {listed}")
            chosen += found
    for rel in chosen:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        _copy(source / rel, work / rel)
    return [work / rel for rel in chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.workcopy", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("sync", help="copy into work/ the notebooks it does not have yet")
    back = sub.add_parser("restore", help="put back the stored version of notebooks")
    back.add_argument("names", nargs="*", help="notebooks by number: 01 03 ...")
    back.add_argument("--all", action="store_true", help="every notebook")
    args = parser.parse_args(argv)
    if args.command == "restore" and bool(args.names) == args.all:
        parser.error("name the notebooks to restore (01 03 ...) or give --all")
    try:
        done = sync() if args.command == "sync" else restore(None if args.all else args.names)
    except ValueError as error:
        parser.error(str(error))
    verb = "copied" if args.command == "sync" else "restored"
    for path in done:
        print(f"{verb}: {path.relative_to(ROOT)}")
    for path in outdated() if args.command == "sync" else []:
        print(
            f"newer stored version of {path.relative_to(WORK).as_posix()}: yours is kept; "
            f"`make restore WHICH={path.relative_to(WORK).as_posix()[: -len(path.name) + 2]}` "
            "takes the new one"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
