"""helpers.authoring: the website's staging and link check, without building (fast).

The built site itself is checked by tests/site_built.py and, in a browser, tests/site_browser.py
(``make site-test``; .ci/run).
"""

from __future__ import annotations

import json

import pytest

from helpers.authoring import course, linkcheck, site


def test_stamps_take_torch_from_the_lock_and_the_date_from_the_record(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("numpy==2.0.0\ntorch==9.8.7\n")
    first = course.notebook_paths()[0]
    record = {first.name: {"date": "2031-02-03"}}
    stamps = site.stamps(record, lock)
    assert list(stamps) == [p.stem for p in course.notebook_paths()]
    assert stamps[first.stem] == "Verified with torch 9.8.7 on 2031-02-03"
    assert "no test run recorded" in stamps[course.notebook_paths()[1].stem]
    assert site.torch_version() == site.torch_version(site.LOCK)
    lock.write_text("numpy==2.0.0\n")
    with pytest.raises(ValueError, match="pins no torch"):
        site.torch_version(lock)


def test_links_go_to_pages_or_to_the_repository():
    readme = (
        "[01](notebooks/01_tensors.ipynb) [r](notebooks/RECIPES.md#Topics) "
        "[data](data/README.md) [web](https://pytorch.org) [here](#Two-commands)"
    )
    assert site.rewrite_links(readme, course.ROOT) == (
        "[01](01_tensors.ipynb) [r](RECIPES.md#Topics) "
        f"[data]({course.REPO_URL}/blob/{course.BRANCH}/data/README.md) "
        "[web](https://pytorch.org) [here](#Two-commands)"
    )
    inside = "[a](02_contiguity_strides.ipynb#Fix-(it)) [d](../data/README.md) [w](WORKSHOP.md)"
    assert site.rewrite_links(inside, course.NOTEBOOKS) == (
        "[a](02_contiguity_strides.ipynb#Fix-(it)) "
        f"[d]({course.REPO_URL}/blob/{course.BRANCH}/data/README.md) [w](WORKSHOP.md)"
    )
    without_guide = site.rewrite_links("[w](WORKSHOP.md)", course.NOTEBOOKS, ("RECIPES.md",))
    assert without_guide == f"[w]({course.REPO_URL}/blob/{course.BRANCH}/notebooks/WORKSHOP.md)"


def test_a_staged_notebook_is_the_stored_one_with_its_solutions_collapsed(tmp_path):
    stored_path = course.notebook_paths()[0]
    stored = json.loads(stored_path.read_text(encoding="utf-8"))
    site.stage_notebook(stored_path, tmp_path / "full.ipynb")
    staged = json.loads((tmp_path / "full.ipynb").read_text(encoding="utf-8"))
    assert [c["source"] for c in staged["cells"]] == [c["source"] for c in stored["cells"]]
    outputs = [c.get("outputs") for c in stored["cells"]]
    assert [c.get("outputs") for c in staged["cells"]] == outputs
    solutions = [c for c in staged["cells"] if "solution" in c["metadata"].get("tags", [])]
    assert solutions
    for cell in solutions:
        assert "hide-cell" in cell["metadata"]["tags"]
        assert cell["metadata"]["mystnb"] == site.SOLUTION_PROMPTS
    site.stage_notebook(stored_path, tmp_path / "student.ipynb", solutions=False)
    bare = json.loads((tmp_path / "student.ipynb").read_text(encoding="utf-8"))
    texts = ["".join(c["source"]) for c in bare["cells"]]
    assert not any(t.startswith("#### Solution") for t in texts)
    assert not any("solution" in c["metadata"].get("tags", []) for c in bare["cells"])
    assert len(bare["cells"]) == len(stored["cells"]) - 2 * len(solutions)


def test_the_staged_tree_includes_the_readme_and_lists_the_course_in_order(tmp_path):
    src = site.stage(tmp_path / "src")
    index = (src / "index.md").read_text(encoding="utf-8")
    assert "```{include} " in index and (src / index.split("{include} ")[1].split()[0]).samefile(
        course.README
    ), "the landing page includes README.md, it does not copy it"
    stems = [p.stem for p in course.notebook_paths()]
    listed = [line for line in index.splitlines() if line in stems]
    assert listed == stems, "the notebooks in course order"
    for name in site.DOCUMENTS:
        assert (src / name).is_file() and name.removesuffix(".md") in index
    assert sorted(p.name for p in src.glob("*.ipynb")) == [p.name for p in course.notebook_paths()]
    assert (src / "colab-badge.svg").is_file()


def test_the_configuration_names_the_repository_only_through_helpers_course():
    conf = (site.WEBSITE / "conf.py").read_text(encoding="utf-8")
    assert "github.com" not in conf and course.REPO not in conf
    assert "course.REPO_URL" in conf and 'nb_execution_mode = "off"' in conf


def _page(path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><head></head><body>{body}</body></html>", encoding="utf-8")


def test_linkcheck_passes_a_sound_site_and_names_each_problem(tmp_path):
    _page(
        tmp_path / "index.html",
        '<a href="b.html#part">b</a> <a href="https://example.org">out</a> '
        '<a href="#top" id="top">top</a> <img src="_images/x.png"> '
        '<link rel="next" href="b.html"> <link rel="stylesheet" href="_static/s.css">',
    )
    _page(tmp_path / "b.html", '<section id="part"></section>')
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "x.png").write_bytes(b"png")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "s.css").write_text("@font-face { src: url(font.woff2) }")
    (tmp_path / "_static" / "font.woff2").write_bytes(b"font")
    assert linkcheck.check(tmp_path) == []

    _page(
        tmp_path / "c.html",
        '<a href="b.html#nowhere">x</a> <a href="gone.html">y</a> '
        '<script src="https://cdn.example.org/x.js"></script> <img src="//example.org/i.png"> '
        '<link rel="stylesheet" href="https://fonts.example.org/f.css"> <img src="none.png">',
    )
    (tmp_path / "_static" / "t.css").write_text("a { background: url('https://e.org/a.png') }")
    assert sorted(linkcheck.check(tmp_path)) == sorted(
        [
            "c.html: no anchor #nowhere in b.html: b.html#nowhere",
            "c.html: broken link: gone.html",
            "c.html: loads a remote resource: https://cdn.example.org/x.js",
            "c.html: loads a remote resource: //example.org/i.png",
            "c.html: loads a remote resource: https://fonts.example.org/f.css",
            "c.html: loads a missing file: none.png",
            "_static/t.css: loads a remote resource: https://e.org/a.png",
        ]
    )
