"""The Sphinx extension of the course website (loaded by ``website/conf.py``).

- The Colab badge of the notebooks and the README is drawn from a local copy: the site loads
  nothing from another machine.
- Each notebook page gets its "verified with torch X.Y on DATE" note under its run-time line
  (config ``cookbook_stamps``, made by :func:`helpers.authoring.site.stamps`).
- MathJax is served from the site (the files of the ``sphinx-mathjax-offline`` package, without
  the bundles the site does not load).
- The landing page's "view source" button shows README.md, which the page includes.
- Each section of a notebook page gets search index entries for what a practitioner types into
  the search box: the PyTorch API names it uses and the error messages it shows
  (:class:`SearchEntries`; ``website/search-scorer.js`` ranks the sections they lead to).
"""

from __future__ import annotations

import ast
import builtins
import re
import shutil
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from helpers.authoring import course
from helpers.check import ERROR_LINE_RE, ERROR_MARK, WARNING_LINE_RE

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


# Search entries (SearchEntries). An API name is the last part of a dotted name rooted at one of
# API_ROOTS (`nn.utils.rnn.pack_padded_sequence` -> `pack_padded_sequence`) or a name imported
# from one of API_PACKAGES (`from torch.utils.flop_counter import FlopCounterMode`), as the code
# cells use it; prose names one in inline code (`nn.ModuleList`). A method or attribute the code
# uses that looks like code, not like a word (`set_epoch` in `sampler.set_epoch(epoch)`, not
# `parameters`), counts only where a heading or prose names it.
API_ROOTS = frozenset({"torch", "nn", "F", "optim", "dist", "torchvision", "v2"})
API_PACKAGES = frozenset({"torch", "torchvision", "torchaudio", "torchao", "torchinfo"})
TORCH_CHAIN_RE = re.compile(r"(?<![\w.])(?:torch|nn|F|optim|dist|torchvision|v2)(?:\.\w+)+")
CHAIN_RE = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# Inline code that is one all-caps name with an underscore, alone or set: an environment variable
# (`OMP_NUM_THREADS`, `NCCL_DEBUG=INFO`) or a constant (`MAX_LEN`), both typed as they are.
ENV_VAR_RE = re.compile(r"\s*(?:export\s+)?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=\S*)?\s*")
# Sections that sum up or practise what the recipes teach, and a page's top (its goals and its
# setup cell): a name they mention is found there only when no recipe of the page has it, and
# their code counts for nothing.
RECAP_HEADINGS = (*course.NON_RECIPES, "Exercise", "Solution")
# How a section holds a name, best first: its heading, its prose, its code, a recap's prose.
HEADING, PROSE, CODE, RECAP = 3, 2, 1, 0
# A name that more pages than this use (torch.tensor, nn.Linear, DataLoader) leads only to the
# headings that hold it (or, where no heading holds it, to where prose names it): an entry for
# every section that uses it would flood the results.
UBIQUITOUS_PAGES = 3
# How a markdown line names an error only a GPU raises (course.GPU_ERROR_RE), as the page reads.
GPU_ONLY = f"GPU only: {ERROR_MARK} "
ApiTerm = tuple[str, str, int]  # (section id, API name, how the section holds it)
ErrorTerm = tuple[str, str]  # (section id, "Type: message")


def _parse(code: str) -> ast.Module | None:
    """Parse a code cell, its IPython ``%magic`` and ``!shell`` lines left out; None when it
    is not Python."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def imported_api_names(code: str) -> set[str]:
    """Return the names ``code`` imports from a PyTorch package (``from torch.x import Y``)."""
    tree = _parse(code)
    if tree is None:
        return set()
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
        if node.module.split(".")[0] in API_PACKAGES
        for alias in node.names
        if alias.name != "*"
    }


class CodeNames(NamedTuple):
    """What code names (:func:`api_names`)."""

    names: set[str]  # the API names it uses
    called: set[str]  # those of them it calls
    modules: set[str]  # the modules it names: nn, utils, cuda, tensorboard
    attributes: set[str]  # every attribute it reads or calls: set_epoch in sampler.set_epoch(0)


def api_names(code: str, imported: set[str] = frozenset()) -> CodeNames:
    """Return what ``code`` names: the API names it uses (the last part of each dotted name
    rooted at an API root or at an ``imported`` name, and each ``imported`` name used bare), the
    modules (the parts of a dotted name before the last, and of what it imports from), and its
    attributes. A module that is also called (``torch.utils.checkpoint.checkpoint``) is a name."""
    tree = _parse(code)
    if tree is None:
        return CodeNames(set(), set(), set(), set())
    roots = API_ROOTS | set(imported)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = CodeNames(set(), set(), set(), set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in imported:
            found.names.add(node.id)
            if id(node) in calls:
                found.called.add(node.id)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.modules.update(node.module.split("."))
        elif isinstance(node, ast.Import):
            found.modules.update(part for alias in node.names for part in alias.name.split("."))
        if not isinstance(node, ast.Attribute):
            continue
        found.attributes.add(node.attr)
        if id(node) in inner:
            continue
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in roots:
            found.names.add(parts[0])
            found.modules.update(parts[1:])
            if id(node) in calls:
                found.called.add(parts[0])
    return found


def prose_names(text: str, known: set[str]) -> set[str]:
    """Return the API names inline code ``text`` names: the last part of a dotted PyTorch name
    (``torch.utils.flop_counter.FlopCounterMode``), and of any name or dotted name that is a
    ``known`` API name (``ModuleList``, ``sampler.set_epoch(epoch)``; not ``tensor`` in
    ``tensor.detach()``), and an all-caps name the code is all of, as an environment variable
    (``PYTORCH_ENABLE_MPS_FALLBACK=1``) or a constant is: a reader types it as it is."""
    names = {chain.rsplit(".", 1)[-1] for chain in CHAIN_RE.findall(text)} & known
    variable = ENV_VAR_RE.fullmatch(text)
    names |= {variable.group(1)} if variable else set()
    return names | {chain.rsplit(".", 1)[1] for chain in TORCH_CHAIN_RE.findall(text)}


def heading_names(heading: str, literals: list[str], known: set[str]) -> set[str]:
    """Return the API names a heading holds: those its inline code names, and the ``known`` ones
    it spells out that look like code (``DistributedSampler``, ``float32``, ``set_epoch``; a
    plain word such as "tensor" or "save" counts only in inline code)."""
    spelled = {w for w in re.findall(r"\w+", heading) if looks_like_code(w)}
    return (spelled & known) | set().union(*(prose_names(t, known) for t in literals))


def looks_like_code(name: str) -> bool:
    """Whether a name reads as code, not as a word: ``ModuleList``, ``set_epoch``, ``float32``,
    not ``tensor`` or ``parameters``."""
    return name != name.lower() or not name.isalpha()


def is_api_name(name: str) -> bool:
    """Whether a name is worth an entry: not a builtin (``RuntimeError``, ``print``), not private,
    at least 3 characters."""
    return len(name) >= 3 and not name.startswith("_") and not hasattr(builtins, name)


def error_entries(text: str) -> list[str]:
    """Return ``Type: message`` for each ``⛔ Type: message`` line of an output (what
    ``helpers.check.expect_error`` prints) and each ``⚠ Category: message`` line (what
    ``expect_warning`` prints), its message shortened as shown (the ``…`` left out).
    A message ending in ``:`` goes on with the indented line under it, as in
    :func:`helpers.authoring.course.error_outputs`. Semicolons become commas: Sphinx reads
    ``a; b`` in an entry as an entry and a sub-entry."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        match = ERROR_LINE_RE.match(line) or WARNING_LINE_RE.match(line)
        if not match:
            continue
        message = match.group("message").strip()
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if message.endswith(":") and following.startswith("   "):
            message += " " + following.strip()
        message = message.removesuffix("…").strip().replace(";", ",")
        found.append(f"{match.group('ename')}: {message}")
    return found


def _own(section: nodes.section) -> list[nodes.Node]:
    """The nodes of a section outside its sub-sections (which get their own entries)."""
    return [child for child in section.children if not isinstance(child, nodes.section)]


def _is_output(node: nodes.literal_block) -> bool:
    return "output" in node.get("classes", [])


def section_terms(document: nodes.document) -> tuple[list[ApiTerm], list[ErrorTerm]]:
    """Return what each section of a notebook page is found by, in page order:
    ``[(section id, API name, how it holds it: HEADING, PROSE, RECAP or CODE)]`` and
    ``[(section id, error entry)]``."""
    sections = [s for s in document.findall(nodes.section) if s["ids"]]
    code = [
        block.astext() for block in document.findall(nodes.literal_block) if not _is_output(block)
    ]
    imported = set().union(*(imported_api_names(c) for c in code))
    used: dict[str, set[str]] = {}
    page = CodeNames(set(), set(), set(), set())
    for section in sections:
        names: set[str] = set()
        for node in _own(section):
            for block in node.findall(nodes.literal_block):
                if not _is_output(block):
                    found = api_names(block.astext(), imported)
                    names |= found.names
                    for mine, cell in zip(page, found, strict=True):
                        mine |= cell
        used[section["ids"][0]] = names
    modules = page.modules - page.called
    known = {n for n in page.names - modules if is_api_name(n)}
    methods = {n for n in page.attributes if looks_like_code(n)}
    named = {n for n in (known | methods) - modules if is_api_name(n)}
    apis: list[ApiTerm] = []
    errors: list[ErrorTerm] = []
    for section in sections:
        sid = section["ids"][0]
        title = section.next_node(nodes.title)
        heading = title.astext() if title is not None else ""
        recap = section.parent is document or heading.startswith(RECAP_HEADINGS)
        held: dict[str, int] = {}
        if not recap:
            for name in used[sid] & known:
                held[name] = CODE
        for node in _own(section):
            for literal in node.findall(nodes.literal):
                for name in prose_names(literal.astext(), named):
                    if is_api_name(name) and name not in modules:
                        held[name] = max(held.get(name, RECAP), RECAP if recap else PROSE)
            for block in node.findall(nodes.literal_block):
                if _is_output(block):
                    errors += [(sid, entry) for entry in error_entries(block.astext())]
            for paragraph in node.findall(nodes.paragraph):
                literal = paragraph.next_node(nodes.literal)
                if paragraph.astext().startswith(GPU_ONLY) and literal is not None:
                    line = f"{ERROR_MARK} {literal.astext()}"
                    errors += [(sid, entry) for entry in error_entries(line)]
        literals = [lit.astext() for lit in title.findall(nodes.literal)] if title else []
        holds = {n for n in heading_names(heading, literals, named) if n not in modules}
        for name in set(held) | holds:
            apis.append((sid, name, HEADING if name in holds else held[name]))
    return apis, list(dict.fromkeys(errors))


def pick_entries(
    apis: list[ApiTerm], ubiquitous: set[str] = frozenset(), headed: set[str] = frozenset()
) -> list[tuple[str, str, bool]]:
    """Choose where each API name of a page leads: ``[(section id, name, main)]``. Every section
    whose heading holds the name; else the first recipe that names it in prose; else the first
    whose code uses it; else the first recap that names it. A ``ubiquitous`` name leads only to
    headings, or where no heading of the site holds it (not in ``headed``), to prose. Entries
    from headings and prose are main (Sphinx lists the others after all other results)."""
    by_name: dict[str, list[tuple[str, int]]] = {}
    for sid, name, rank in apis:
        by_name.setdefault(name, []).append((sid, rank))
    picked = []
    for name, places in by_name.items():
        best = max(rank for _, rank in places)
        if name in ubiquitous and best < (HEADING if name in headed else PROSE):
            continue
        chosen = [sid for sid, rank in places if rank == best]
        for sid in chosen if best == HEADING else chosen[:1]:
            picked.append((sid, name, best >= PROSE))
    return picked


class SearchEntries(SphinxTransform):
    """Record what each section of a notebook page is found by (:func:`section_terms`); the
    entries are added by :func:`add_search_entries` once every page is read and it is known
    which names are ubiquitous."""

    default_priority = 430

    def apply(self, **kwargs: Any) -> None:
        if self.env.doc2path(self.env.docname).suffix != ".ipynb":
            return
        self.env.cookbook_search_terms[self.env.docname] = section_terms(self.document)


def ubiquitous_names(
    terms: dict[str, tuple[list[ApiTerm], list]], pages: int = UBIQUITOUS_PAGES
) -> set[str]:
    """Return the API names that more than ``pages`` pages use."""
    count = Counter(name for apis, _ in terms.values() for name in {n for _, n, _ in apis})
    return {name for name, n in count.items() if n > pages}


def headed_names(terms: dict[str, tuple[list[ApiTerm], list]]) -> set[str]:
    """Return the API names that a heading holds."""
    return {name for apis, _ in terms.values() for _, name, rank in apis if rank == HEADING}


def count_ubiquitous(app: Sphinx, env: Any) -> None:
    """Once every page is read (``env-updated``), note the ubiquitous API names and those that a
    heading holds."""
    env.cookbook_ubiquitous = ubiquitous_names(env.cookbook_search_terms)
    env.cookbook_headed = headed_names(env.cookbook_search_terms)


def add_search_entries(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Give the sections of a notebook page their index entries (``doctree-resolved``: Sphinx's
    search reads the entries of the page it writes; the general index, made while reading, does
    not list them)."""
    if docname not in app.env.cookbook_search_terms:
        return
    apis, errors = app.env.cookbook_search_terms[docname]
    entries: dict[str, list[tuple[str, str, str, str, None]]] = {}
    for sid, name, main in pick_entries(apis, app.env.cookbook_ubiquitous, app.env.cookbook_headed):
        entries.setdefault(sid, []).append(("single", name, sid, "main" if main else "", None))
    for sid, entry in errors:
        entries.setdefault(sid, []).append(("single", entry, sid, "main", None))
    for section in doctree.findall(nodes.section):
        if section["ids"] and section["ids"][0] in entries:
            section.insert(1, addnodes.index(entries=entries[section["ids"][0]], inline=False))


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
    if not hasattr(app.env, "cookbook_search_terms"):
        app.env.cookbook_search_terms = {}


def merge_aliases(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    env.cookbook_aliases_found |= other.cookbook_aliases_found
    for docname in docnames:
        if docname in other.cookbook_search_terms:
            env.cookbook_search_terms[docname] = other.cookbook_search_terms[docname]


def purge_search_terms(app: Sphinx, env: Any, docname: str) -> None:
    env.cookbook_search_terms.pop(docname, None)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("cookbook_stamps", {}, "env", types=[dict])
    app.add_config_value("cookbook_search_aliases", {}, "env", types=[dict])
    app.add_transform(LocalBadges)
    app.add_transform(VerifiedStamps)
    app.add_transform(SearchAliases)
    app.add_transform(SearchEntries)
    app.connect("builder-inited", start_aliases)
    app.connect("env-merge-info", merge_aliases)
    app.connect("env-purge-doc", purge_search_terms)
    app.connect("doctree-resolved", add_search_entries)
    app.connect("env-updated", check_aliases)
    app.connect("env-updated", count_ubiquitous)
    app.connect("html-page-context", landing_buttons, priority=600)
    app.connect("include-read", include_links)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
