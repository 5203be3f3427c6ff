"""The built course website (build/site, build/pytorch-cookbook-site.zip), read as files.

Not collected by a plain ``pytest`` (no ``test_`` prefix): ``make site-test`` runs it after
``make site``, beside tests/site_browser.py. The staging and the link checker themselves are
unit-tested in tests/test_site.py.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from helpers.authoring import course, linkcheck, site, student


@pytest.fixture(scope="module")
def built() -> Path:
    if not (site.SITE / "index.html").is_file() or not site.ZIP.is_file():
        pytest.fail("no built site in build/site: run `make site` first")
    return site.SITE


def test_every_internal_link_and_anchor_resolves_and_nothing_loads_from_elsewhere(built):
    assert linkcheck.check(built) == []


def test_the_pages_and_their_order(built):
    names = {p.relative_to(built).as_posix() for p in site.pages(built)}
    projects = [f"{site.docname(p)}.html" for p in site.project_pages()]
    expected = {f"{site.docname(p)}.html" for p in course.notebook_paths()} | set(projects)
    expected |= {f"{Path(d).stem}.html" for d in site.DOCUMENTS}
    assert expected | {"index.html", "search.html", "genindex.html"} == names
    nav = (built / "index.html").read_text(encoding="utf-8").split('id="pst-primary-sidebar"')[1]
    order = [m for m in re.findall(r'href="([^"#]+\.html)"', nav) if m in expected]
    wanted = [f"{site.docname(p)}.html" for p in course.lesson_paths()]
    wanted += [f"{site.docname(p)}.html" for p in course.cookbook_paths()]
    wanted += projects
    wanted += [f"{Path(d).stem}.html" for d in site.DOCUMENTS]
    assert list(dict.fromkeys(order)) == wanted, "the course, the cookbook, projects, indexes"
    captions = re.findall(
        r'<p aria-level="2" class="caption"[^>]*>\s*<span class="caption-text">([^<]+)', nav
    )
    assert captions[:3] == ["Course", "Cookbook", "Projects"], captions


def test_each_notebook_page_shows_its_stored_outputs(built):
    """Text, tables, images and the one-line intended errors of the stored notebook are there,
    with the run-time line and the verified stamp (but not the output of a cell tagged
    `remove-output`: lesson 08's live TensorBoard frame, which would point at a server that is
    gone)."""
    stamps = site.stamps()
    for path in course.notebook_paths():
        html = (built / f"{site.docname(path)}.html").read_text(encoding="utf-8")
        nb = json.loads(path.read_text(encoding="utf-8"))
        shown = [
            c
            for c in nb["cells"]
            if c["cell_type"] == "code" and "remove-output" not in c["metadata"].get("tags", [])
        ]
        outputs = [o for c in shown for o in c["outputs"]]
        assert "<iframe" not in html, path.name
        images = sum("image/png" in o.get("data", {}) for o in outputs)
        tables = sum("text/html" in o.get("data", {}) for o in outputs)
        errors = sum("".join(o.get("text", "")).count("⛔") for o in outputs)
        assert html.count('<img alt="_images/') + html.count("<img alt=") >= images, path.name
        assert html.count("<table") >= tables, path.name
        assert html.count("⛔") >= errors, path.name
        assert "<strong>Run time:</strong>" in html, path.name
        assert stamps[site.docname(path)] in html, path.name
        solutions = sum("solution" in c["metadata"].get("tags", []) for c in nb["cells"])
        assert html.count("tag_solution tag_hide-cell") == solutions, path.name


def test_the_zip_is_the_site_under_one_folder(built):
    with zipfile.ZipFile(site.ZIP) as zf:
        names = {n.split("/", 1)[1] for n in zf.namelist()}
        assert {n.split("/", 1)[0] for n in zf.namelist()} == {"pytorch-cookbook-site"}
    files = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()}
    assert names == files
    assert "_static/mathjax/tex-chtml.js" in names and "searchindex.js" in names


def test_the_student_bundle_site_has_no_solutions():
    """`make student`'s website (`make student-site` builds it alone): the student README as
    landing page, no solution anywhere, no instructor's guide, and its links check out too."""
    built = student.SITE_WORK / "site"
    if not (built / "index.html").is_file():
        pytest.fail("no student site in build/site-work-student/site: run `make student-site`")
    assert linkcheck.check(built) == []
    pages = {p.name for p in site.pages(built)}
    assert "WORKSHOP.html" not in pages and "01_tensors.html" in pages
    for page in site.pages(built):
        html = page.read_text(encoding="utf-8")
        assert "tag_solution" not in html and "Show the solution" not in html, page.name
    landing = (built / "index.html").read_text(encoding="utf-8")
    assert "your copy" in landing and "For authors" not in landing


def test_the_search_index_leads_errors_and_api_names_to_sections(built):
    """Each section has search index entries for the errors it shows and the API names it
    teaches (helpers.authoring.sphinxext), and they stay a modest part of the index."""
    text = (built / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    entries, docnames = index["indexentries"], index["docnames"]
    for path in course.notebook_paths():
        file = docnames.index(site.docname(path))
        here = {e for e, refs in entries.items() if any(r[0] == file and r[1] for r in refs)}
        if path.name != "00_python.ipynb":  # the Python primer names no PyTorch API
            assert any(": " not in e for e in here), f"{path.name}: no API name entry"
        for ename, message, _ in course.error_outputs(course.read(path)):
            prefix = f"{ename}: {message}"[:40].replace(";", ",").lower()
            assert any(e.startswith(prefix) for e in here), f"{path.name}: no entry {prefix!r}"
    assert len(json.dumps(entries)) < len(text) / 3, "the entries outgrew a third of the index"
