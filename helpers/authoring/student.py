"""Student copies of the course: every notebook without its exercise solutions, and a zip.

``python -m helpers.authoring.student`` (``make student``) writes ``student/pytorch-cookbook/``: the
notebooks with each solution cell and its "Solution" heading removed (tasks, starters and check
cells kept, so a learner still learns whether an answer is right), with what a learner needs to
run them (``helpers``, the requirements and the lock, the Makefile, a README of its own), the
course website built the same way (``site/``, offline: no solutions, that README as its landing
page, no instructor's guide), and ``student/pytorch-cookbook-student.zip`` of that folder for an
instructor to hand out. The text twins and the tests are left out: they hold the solutions.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

from helpers.authoring import course

OUT = course.ROOT / "student"
NAME = "pytorch-cookbook"
# What a learner needs beside the notebooks to run `make lab` (the twins and tests hold solutions).
# The bundle gets its own README (STUDENT_README), not the authors'.
FILES = [
    "Makefile",
    "requirements.txt",
    "requirements-lock.txt",
    "environment.yml",
    "pyproject.toml",
    "data/README.md",
    "notebooks/RECIPES.md",
    "notebooks/ERRORS.md",
    "notebooks/MODERN_APIS.md",
]
FOLDERS = ["helpers"]
# The pages of the bundle's website beside the notebooks: not the instructor's guide.
SITE_DOCUMENTS = ("RECIPES.md", "ERRORS.md", "MODERN_APIS.md")
SITE_WORK = course.ROOT / "build" / "site-work-student"
# The `make` targets the student README names: each must exist in the bundled Makefile.
STUDENT_TARGETS = ("lab", "restore", "data", "doctor")
STUDENT_README = """# PyTorch Cookbook: your copy

Thirteen notebooks, from tensors to multi-process training and speedups. This copy has every
task, starter and check, and no solutions: work the exercises out yourself.

## Open the course

You need Python 3.10 or newer and `make` (Linux, macOS; on Windows use WSL or the conda route).

    make lab

The first run creates `.venv/` and installs PyTorch and the rest (about 6 GB, a few minutes on a
good network), then opens JupyterLab on your own working copies in `work/`. Run the notebooks
there: the ones in `notebooks/` keep the outputs they came with, for reference.

Without `make`: `conda env create -f environment.yml`, `conda activate pytorch-cookbook`,
`pip install -e .`, `python -m helpers.workcopy sync`, then `jupyter lab` in `work/`.

`make doctor` checks your machine (Python, torch, devices, data, disk) and says how to fix
what is missing.

## Check an exercise

Each exercise has a task, a starter cell with names to fill in (`...`), and a check cell. Run
the check cell: it prints `✓` and what your answer does right, or `✗` and what is wrong.

## The data

Notebooks 05 and later use IMDB and CIFAR2 (two classes of CIFAR-10). They download from the
official sources the first time a notebook needs them (or run `make data` beforehand). With no
network, put the course's data archives in a folder and set `COOKBOOK_DATA_MIRROR` to it
(`data/README.md` says which files).

## Start a notebook again

    make restore WHICH=01        # or WHICH="01 03", or WHICH=all

puts back the stored version of a notebook in `work/` (your copy is replaced).

Lost? `notebooks/RECIPES.md` lists every recipe by topic, `notebooks/ERRORS.md` every error the
course shows with where it is fixed, `notebooks/MODERN_APIS.md` maps old PyTorch code to today's.

## Read the course in a browser

Open `site/index.html`: every notebook with the outputs it came with, those three indexes, and a
search box. It needs no network and no installation.
"""


def is_solution(cell: Any) -> bool:
    """A solution cell, or the "Solution" heading above one."""
    if "solution" in cell.metadata.get("tags", []):
        return True
    return cell.cell_type == "markdown" and cell.source.startswith("#### Solution")


def strip(nb: Any) -> Any:
    """Return a copy of notebook ``nb`` without its solution cells and their outputs."""
    import copy

    out = copy.deepcopy(nb)
    out.cells = [cell for cell in out.cells if not is_solution(cell)]
    return out


def build_site(work: Path = SITE_WORK) -> Path:
    """Build the bundle's website (no solutions, the student README as its landing page) in
    ``work``; return the built folder."""
    from helpers.authoring import site

    work.mkdir(parents=True, exist_ok=True)
    readme = work / "README.md"
    readme.write_text(STUDENT_README, encoding="utf-8")
    return site.build(
        work / "site", solutions=False, work=work, readme=readme, documents=SITE_DOCUMENTS
    )


def write(out: Path = OUT, site: Path | None = None) -> Path:
    """Write the student folder and its zip under ``out``, with the built website ``site`` as
    its ``site/`` when given; return the zip's path."""
    import nbformat

    folder = out / NAME
    staging = out / f".{NAME}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "notebooks").mkdir(parents=True)
    for rel in FILES:
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(course.ROOT / rel, target)
    (staging / "README.md").write_text(STUDENT_README, encoding="utf-8")
    for rel in FOLDERS:
        # helpers/authoring is the authors' tooling (the website, indexes): not a learner's.
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "authoring")
        shutil.copytree(course.ROOT / rel, staging / rel, ignore=ignore)
    for path in course.notebook_paths() + course.project_paths():  # no reference solutions
        target = staging / "notebooks" / course.rel(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(strip(course.read(path)), target)
    if site is not None:
        shutil.copytree(site, staging / "site")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)  # the folder is complete or absent, never half-written
    archive = out / f"{NAME}-student.zip"
    partial = archive.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                zf.write(file, file.relative_to(out).as_posix())
    partial.replace(archive)
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.authoring.student", description=__doc__
    )
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default: student/)")
    parser.add_argument("--no-site", action="store_true", help="leave the website out")
    parser.add_argument(
        "--site-only", action="store_true", help=f"only build the website (in {SITE_WORK})"
    )
    args = parser.parse_args(argv)
    if args.site_only:
        print(f"student site: {build_site()}")
        return 0
    archive = write(args.out, site=None if args.no_site else build_site())
    count = len(course.notebook_paths())
    size = archive.stat().st_size / 2**20
    print(f"wrote {count} student notebooks to {args.out / NAME} and {archive} ({size:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
