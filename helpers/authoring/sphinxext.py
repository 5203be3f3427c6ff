"""The Sphinx extension of the course website (loaded by ``website/conf.py``).

- The Colab badge of the notebooks and the README is drawn from a local copy: the site loads
  nothing from another machine.
- Each notebook page gets its "verified with torch X.Y on DATE" note under its run-time line
  (config ``cookbook_stamps``, made by :func:`helpers.authoring.site.stamps`).
- MathJax is served from the site (the files of the ``sphinx-mathjax-offline`` package, without
  the bundles the site does not load).
- The landing page's "view source" button shows README.md, which the page includes.
"""

from __future__ import annotations

import re
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from helpers.authoring import course

LOGGER = logging.getLogger(__name__)
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
LOCAL_BADGE = "colab-badge.svg"  # staged beside the pages by helpers.authoring.site
STAMP_TEXT = (
    "The outputs on this page are the ones stored in the notebook: the course's tests run it "
    "again and compare them (the date is its last recorded test run)."
)
# MathJax's combined bundles the site does not load (it loads tex-chtml.js and what that loads).
MATHJAX_UNUSED = (
    "mml-chtml.js", "mml-svg.js", "node-main.js", "tex-chtml-full.js",
    "tex-chtml-full-speech.js", "tex-mml-chtml.js", "tex-mml-svg.js", "tex-svg-full.js",
    "tex-svg.js", "svg", "svg.js",
)  # fmt: skip


def heading_anchor(title: str) -> str:
    """The anchor JupyterLab gives a heading (``myst_heading_slug_func``): the form the
    indexes' links use, ``01_tensors.ipynb#Some-Heading``."""
    return course.anchor(title)


class LocalBadges(SphinxTransform):
    """Point every Colab badge image at the site's own copy."""

    default_priority = 400

    def apply(self, **kwargs: Any) -> None:
        for image in self.document.findall(nodes.image):
            if image.get("uri") == COLAB_BADGE:
                image["uri"] = "/" + LOCAL_BADGE
                image["candidates"] = {}


class VerifiedStamps(SphinxTransform):
    """Put a notebook's "verified with" note right below its ``**Run time:**`` line."""

    default_priority = 410

    def apply(self, **kwargs: Any) -> None:
        stamp = self.config.cookbook_stamps.get(self.env.docname)
        if stamp is None:
            return
        for paragraph in self.document.findall(nodes.paragraph):
            if paragraph.astext().startswith("Run time:"):
                note = nodes.admonition(
                    "",
                    nodes.title(text=stamp),
                    nodes.paragraph(text=STAMP_TEXT),
                    classes=["note", "verified-stamp"],
                )
                paragraph.parent.insert(paragraph.parent.index(paragraph) + 1, note)
                return
        LOGGER.warning("no '**Run time:**' line to put the stamp under", location=self.env.docname)


class SearchAliases(SphinxTransform):
    """Give each section whose heading holds a phrase of ``cookbook_search_aliases`` an index
    entry under the other name readers search for (the search finds index entries)."""

    default_priority = 420

    def apply(self, **kwargs: Any) -> None:
        for alias, words in self.config.cookbook_search_aliases.items():
            for section in self.document.findall(nodes.section):
                title = section.next_node(nodes.title)
                if title is not None and words.lower() in title.astext().lower():
                    entry = ("single", alias, section["ids"][0], "main", None)
                    section.insert(1, addnodes.index(entries=[entry], inline=False))
                    self.env.cookbook_aliases_found.add(alias)


def check_aliases(app: Sphinx, env: Any) -> None:
    """Fail the build when an alias found no heading (the words changed in a notebook)."""
    missing = set(app.config.cookbook_search_aliases) - env.cookbook_aliases_found
    for alias in sorted(missing):
        words = app.config.cookbook_search_aliases[alias]
        LOGGER.warning(f"search alias {alias!r}: no heading holds {words!r}")


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    """Copy MathJax into ``_static/mathjax`` of a successful build."""
    if exception is not None or app.builder.format != "html":
        return
    source = Path(
        str(metadata.distribution("sphinx-mathjax-offline").locate_file("sphinx-mathjax-offline"))
    )
    ignore = shutil.ignore_patterns(*MATHJAX_UNUSED, "__pycache__")
    target = Path(app.outdir) / "_static" / "mathjax"
    shutil.copytree(source / "static" / "mathjax", target, ignore=ignore, dirs_exist_ok=True)


def landing_buttons(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """On the landing page, "view source" shows the file the page includes (README.md), and
    there is no source to download (the page is only that include)."""
    if pagename != "index":
        return
    match = re.search(r"```\{include\} (\S+)", (Path(app.srcdir) / "index.md").read_text())
    included = (Path(app.srcdir) / match.group(1)).resolve() if match else None
    source = None
    if included is not None and included.is_relative_to(course.ROOT):
        rel = included.relative_to(course.ROOT).as_posix()
        source = f"{course.REPO_URL}/blob/{course.BRANCH}/{rel}?plain=1"
    kept = []
    for button in context.get("header_buttons", []):
        if button.get("label") == "download-buttons":
            continue
        if "buttons" in button:
            inner = [b for b in button["buttons"] if b.get("label") != "source-file-button"]
            if source is not None:
                inner = [
                    {**b, "url": source} if b.get("label") == "source-file-button" else b
                    for b in button["buttons"]
                ]
            button["buttons"] = inner
        kept.append(button)
    context["header_buttons"] = kept


def include_links(app: Sphinx, relative: Path, parent: str, content: list[str]) -> None:
    """Retarget the links of an included file (README.md) for the site, as staging does for
    the pages it copies."""
    from helpers.authoring.site import rewrite_links

    staged = Path(app.srcdir).glob("*.md")
    documents = tuple(sorted(p.name for p in staged if p.name != "index.md"))
    base = (Path(app.srcdir) / relative).resolve().parent
    content[0] = rewrite_links(content[0], base, documents)


def start_aliases(app: Sphinx) -> None:
    app.env.cookbook_aliases_found = set()


def merge_aliases(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    env.cookbook_aliases_found |= other.cookbook_aliases_found


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("cookbook_stamps", {}, "env", types=[dict])
    app.add_config_value("cookbook_search_aliases", {}, "env", types=[dict])
    app.add_transform(LocalBadges)
    app.add_transform(VerifiedStamps)
    app.add_transform(SearchAliases)
    app.connect("builder-inited", start_aliases)
    app.connect("env-merge-info", merge_aliases)
    app.connect("env-updated", check_aliases)
    app.connect("html-page-context", landing_buttons, priority=600)
    app.connect("include-read", include_links)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
