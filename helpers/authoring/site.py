"""The course website: the notebooks as stored, rendered by Sphinx, searchable, offline.

``python -m helpers.authoring.site`` (``make site``) stages a Sphinx source tree in
``build/site-work/src``: a landing page for learners, the lessons and the cookbook notebooks
exactly as stored and in the repository's layout (``cookbook/…``; no execution: the outputs are
the tested ones; solution cells tagged ``hide-cell`` so they render collapsed), the recipe, error
and old-API indexes and the instructor's guide. It builds
that with ``website/conf.py`` into ``build/site/`` (warnings are errors) and zips it into
``build/pytorch-cookbook-site.zip``, which opens from disk with no network. ``--no-solutions``
leaves the solution cells out (the copy in ``make student``'s bundle).

Links keep the form JupyterLab follows (``01_tensors.ipynb#Some-Heading``): the site gives each
heading that same anchor (``myst_heading_slug_func`` is
:func:`helpers.authoring.course.anchor`). Links to files that are not pages
(``data/README.md``) go to the repository on GitHub.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from helpers.authoring import course
from helpers.authoring.linkcheck import html_pages

ROOT = course.ROOT
WEBSITE = ROOT / "website"
BUILD = ROOT / "build"
SITE = BUILD / "site"
WORK = BUILD / "site-work"
ZIP = BUILD / "pytorch-cookbook-site.zip"
LOCK = ROOT / "requirements-lock.txt"
# The pages beside the notebooks, in the order of the site's second toctree.
DOCUMENTS = ("RECIPES.md", "ERRORS.md", "MODERN_APIS.md", "WORKSHOP.md")
SOLUTION_PROMPTS = {
    "code_prompt_show": "Show the solution",
    "code_prompt_hide": "Hide the solution",
}
# A markdown link's target up to its fragment: ``](path`` then ``#``, ``)`` or a space.
LINK_RE = re.compile(r"(\]\()([^)#\s]+)")


def torch_version(lock: Path = LOCK) -> str:
    """Return the torch version pinned in the lock (``torch==X.Y.Z``)."""
    match = re.search(r"(?m)^torch==(\S+)$", lock.read_text())
    if not match:
        raise ValueError(f"{lock} pins no torch")
    return match.group(1)


def stamps(record: dict[str, dict[str, Any]] | None = None, lock: Path = LOCK) -> dict[str, str]:
    """Return each notebook page's stamp, ``"Verified with torch X.Y.Z on DATE"``: the torch of
    the lock and the date of the notebook's last recorded test run (``durations.json``)."""
    record = course.read_durations() if record is None else record
    torch = torch_version(lock)
    found = {}
    for path in course.notebook_paths():
        entry = record.get(path.name)
        when = f"on {entry['date']}" if entry else "(no test run recorded yet)"
        found[docname(path)] = f"Verified with torch {torch} {when}"
    return found


def project_pages(solutions: bool = True) -> list[Path]:
    """The projects' pages: each brief, and its reference solution unless ``solutions`` is off."""
    return course.project_paths() + (course.reference_paths() if solutions else [])


def docname(path: Path) -> str:
    """Return a notebook's page name on the site: its path in ``notebooks/``, no suffix."""
    return course.rel(path).removesuffix(".ipynb")


def page_names(documents: tuple[str, ...] = DOCUMENTS) -> dict[Path, str]:
    """Return the repository files that become pages, with their file names in the site's
    source tree (the layout of ``notebooks/``)."""
    pages = {path: course.rel(path) for path in course.notebook_paths()}
    pages |= {course.NOTEBOOKS / name: name for name in documents}
    return pages


def rewrite_links(text: str, base: Path, documents: tuple[str, ...] = DOCUMENTS) -> str:
    """Return markdown ``text`` (a file in folder ``base``) with each relative link retargeted
    for the site: a page by its page name, any other file of the repository on GitHub."""
    pages = {path.resolve(): name for path, name in page_names(documents).items()}

    def retarget(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match.group(0)  # a URL (https:, mailto:) or an absolute path
        path = (base / target).resolve()
        if path in pages:
            return match.group(1) + os.path.relpath(pages[path], start=_page_folder(base))
        try:
            rel = path.relative_to(ROOT).as_posix()
        except ValueError:
            return match.group(0)
        return match.group(1) + f"{course.REPO_URL}/blob/{course.BRANCH}/{rel}"

    return LINK_RE.sub(retarget, text)


def _page_folder(base: Path) -> str:
    """Return the folder of the site's source tree that holds pages from ``base``."""
    try:
        return base.resolve().relative_to(course.NOTEBOOKS.resolve()).as_posix() or "."
    except ValueError:
        return "."


def stage_notebook(source: Path, target: Path, solutions: bool = True) -> None:
    """Copy a notebook as stored, its solution cells tagged to render collapsed (or left out)."""
    nb = json.loads(source.read_text(encoding="utf-8"))
    cells = []
    for cell in nb["cells"]:
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        tags = cell.get("metadata", {}).get("tags", [])
        is_solution = "solution" in tags
        if not solutions and (is_solution or text.startswith("#### Solution")):
            continue
        if is_solution:
            cell["metadata"]["tags"] = [*tags, "hide-cell"]
            cell["metadata"]["mystnb"] = dict(SOLUTION_PROMPTS)
        cells.append(cell)
    nb["cells"] = cells
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def lessons_table() -> str:
    """Return the markdown table of the lessons for the landing page: title, what it does,
    study time, and its cookbook."""
    lines = ["| # | lesson | study time | its cookbook |", "|---|---|---|---|"]
    for path in course.lesson_paths():
        number, name = course.title(course.read(path))
        book = course.cookbook_of(path)
        study, recipes = f"about {course._study_minutes(path)} min", "—"
        if book:  # a lesson beside its cookbook
            recipes = f"[{len(course.recipes(course.read(book)))} recipes]({course.rel(book)})"
        lines.append(f"| {number} | [{name}]({course.rel(path)}) | {study} | {recipes} |")
    return "\n".join(lines)


INTRO = """# PyTorch Cookbook

A course in PyTorch, from tensors to training on several processes and making it fast, in
lessons of about an hour, with a cookbook of recipes beside them. It is for people who know
Python and a little NumPy and want to train neural networks with PyTorch; each lesson says
what it builds on.

**The course** is a line of lessons on one running example: CIFAR2, 12,000 small photos of
airplanes and automobiles. You turn a batch of those images into tensors (01), see how they lie
in memory (02), fit a first classifier by hand with autograd (03), write a convolutional network
as a module (04), feed it with a DataLoader (05), score it with a loss (06), train it to about
97 % test accuracy (07) and watch it train in TensorBoard (08). The later chapters train on
several processes, make training faster, fit it in memory, deploy a model and debug one. Each
lesson has exercises that check your answer.

**The cookbook** holds the recipes: one task each ("Load a checkpoint saved from DDP"), with
the real error messages, measurements and the old code you will meet, indexed in the
[recipe index](RECIPES.md) and the [error index](ERRORS.md). Search this site for an API name,
an error message or a task.

## How to start

- **On Colab:** open a lesson with the "Open in Colab" badge at its top; its first cell
  installs what it needs.
- **On your machine:** clone the repository and run `make lab`, which installs the course and
  opens it in JupyterLab; start with [{first_title}]({first}).
- **Here:** every page shows the outputs stored in its notebook, which the course's tests
  re-run and compare; nothing was run to make this site. The buttons at the top of a page
  open it in Colab or download it."""


def landing_page(
    src: Path,
    readme: Path | None = None,
    documents: tuple[str, ...] = DOCUMENTS,
    solutions: bool = True,
) -> str:
    """Return the landing page, for learners: what the course teaches and to whom, how to
    start (or, when given, the markdown file ``readme`` included instead: a bundle's own
    instructions), the lessons, then the toctrees (the course, the cookbook, the projects, the
    indexes)."""
    lessons = "\n".join(docname(path) for path in course.lesson_paths())
    cookbook = "\n".join(docname(path) for path in course.cookbook_paths())
    projects = "\n".join(docname(path) for path in project_pages(solutions))
    pages = "\n".join(Path(name).stem for name in documents)
    first = course.lesson_paths()[0]
    if readme is None:
        intro = INTRO.format(
            first_title=course.title(course.read(first))[1], first=course.rel(first)
        )
    else:
        intro = f"```{{include}} {Path(os.path.relpath(readme, src)).as_posix()}\n```"
    return f"""{intro}

## The lessons

{lessons_table()}

```{{toctree}}
:hidden:
:caption: Course

{lessons}
```

```{{toctree}}
:hidden:
:caption: Cookbook

{cookbook}
```

```{{toctree}}
:hidden:
:caption: Projects

{projects}
```

```{{toctree}}
:hidden:
:caption: Indexes and guides

{pages}
```
"""


def stage(
    src: Path,
    solutions: bool = True,
    readme: Path | None = None,
    documents: tuple[str, ...] = DOCUMENTS,
) -> Path:
    """Write the site's source tree into ``src`` (emptied first); return ``src``. ``readme`` is
    what the landing page includes; ``documents`` the pages beside the notebooks."""
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    (src / "index.md").write_text(landing_page(src, readme, documents, solutions), encoding="utf-8")
    shutil.copy2(WEBSITE / "colab-badge.svg", src / "colab-badge.svg")
    for path in course.notebook_paths() + project_pages(solutions):
        (src / course.rel(path)).parent.mkdir(parents=True, exist_ok=True)
        stage_notebook(path, src / course.rel(path), solutions)
    for name in documents:
        text = (course.NOTEBOOKS / name).read_text(encoding="utf-8")
        (src / name).write_text(rewrite_links(text, course.NOTEBOOKS, documents), encoding="utf-8")
    return src


def build(
    out: Path = SITE,
    solutions: bool = True,
    work: Path = WORK,
    readme: Path | None = None,
    documents: tuple[str, ...] = DOCUMENTS,
) -> Path:
    """Stage and build the site into ``out`` (replaced whole when the build succeeds); the
    staged sources, Sphinx's caches and the output before it moves live in ``work``."""
    src = stage(work / "src", solutions, readme, documents)
    html = work / "html"
    shutil.rmtree(html, ignore_errors=True)
    command = [
        sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going", "-q",
        "-c", str(WEBSITE), "-d", str(work / "doctrees"), str(src), str(html),
    ]  # fmt: skip
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": path})
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    html.rename(out)
    return out


def zip_site(site: Path = SITE, archive: Path = ZIP, name: str = "pytorch-cookbook-site") -> Path:
    """Zip the built site under one folder ``name``; return the archive."""
    partial = archive.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(site.rglob("*")):
            if file.is_file():
                zf.write(file, f"{name}/{file.relative_to(site).as_posix()}")
    partial.replace(archive)
    return archive


def pages(site: Path = SITE) -> list[Path]:
    """Return the built site's HTML pages (search and index pages included)."""
    return html_pages(site)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.authoring.site", description=__doc__)
    parser.add_argument("--out", type=Path, default=SITE, help="the HTML folder (build/site)")
    parser.add_argument("--zip", type=Path, default=ZIP, help="the archive of the site")
    parser.add_argument("--no-solutions", action="store_true", help="leave solution cells out")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    site = build(args.out, solutions=not args.no_solutions)
    archive = zip_site(site, args.zip)
    took = time.perf_counter() - start
    size = archive.stat().st_size / 2**20
    print(f"site: {len(pages(site))} pages in {site} and {archive} ({size:.1f} MiB), {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
