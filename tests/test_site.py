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
    assert list(stamps) == [site.docname(p) for p in course.notebook_paths()]
    assert stamps[first.stem] == "Verified with torch 9.8.7 on 2031-02-03"
    assert "no test run recorded" in stamps[site.docname(course.notebook_paths()[1])]
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
    in_cookbook = (
        "[r](../RECIPES.md) [l](../01_tensors.ipynb) [c](02_contiguity_strides_recipes.ipynb)"
    )
    assert site.rewrite_links(in_cookbook, course.COOKBOOK) == in_cookbook
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


def test_the_staged_tree_has_a_learners_landing_page_and_the_course_then_the_cookbook(tmp_path):
    src = site.stage(tmp_path / "src")
    index = (src / "index.md").read_text(encoding="utf-8")
    assert "{include}" not in index, "the landing page is for learners, not the README"
    assert "## How to start" in index and "Colab" in index and "make lab" in index
    for path in course.lesson_paths():
        assert f"]({course.rel(path)})" in index, "the lessons table links every lesson"
    lessons = [site.docname(p) for p in course.lesson_paths()]
    books = [site.docname(p) for p in course.cookbook_paths()]
    course_part = index.split(":caption: Course")[1].split("```")[0]
    cookbook_part = index.split(":caption: Cookbook")[1].split("```")[0]
    assert course_part.split() == lessons and cookbook_part.split() == books
    for name in site.DOCUMENTS:
        assert (src / name).is_file() and name.removesuffix(".md") in index
    projects = [site.docname(p) for p in course.project_paths() + course.reference_paths()]
    assert projects and index.split(":caption: Projects")[1].split("```")[0].split() == projects
    staged = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.ipynb"))
    every = course.notebook_paths() + course.project_paths() + course.reference_paths()
    assert staged == sorted(course.rel(p) for p in every)
    assert (src / "colab-badge.svg").is_file()


def test_a_site_without_solutions_has_the_projects_briefs_but_not_their_references(tmp_path):
    src = site.stage(tmp_path / "src", solutions=False)
    index = (src / "index.md").read_text(encoding="utf-8")
    part = index.split(":caption: Projects")[1].split("```")[0].split()
    assert part == [site.docname(p) for p in course.project_paths()]
    assert not (src / "projects" / "reference").exists()


def test_a_bundle_s_own_readme_replaces_the_introduction(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Your copy\n")
    index = site.landing_page(tmp_path / "src", readme)
    assert "```{include} ../README.md" in index and "## The lessons" in index


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


# The search index entries of helpers.authoring.sphinxext: what each section is found by.

SAMPLE_CODE = """from torch.utils.flop_counter import FlopCounterMode
import torch.nn.functional as F
%timeit torch.zeros(3)
layers = nn.ModuleList([nn.Linear(2, 2)])  # nn.Commented in a comment
y = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
note = "torch.Quoted in a string"
sampler.set_epoch(0)
with FlopCounterMode(display=False) as counter:
    F.relu(x).sum().backward()
dtype = torch.float32
writer = torch.utils.tensorboard.SummaryWriter()
"""


def test_api_names_come_from_the_code_not_its_comments_or_strings():
    from helpers.authoring import sphinxext

    found = sphinxext.api_names(SAMPLE_CODE, {"FlopCounterMode"})
    assert found.names == {
        "FlopCounterMode", "ModuleList", "Linear", "checkpoint", "relu", "float32",
        "SummaryWriter",
    }  # fmt: skip
    assert found.names - found.called == {"float32"}
    # torch.utils.checkpoint is a module and, called, a name; tensorboard only a module.
    assert {"nn", "utils", "checkpoint", "tensorboard", "flop_counter"} <= found.modules
    assert {"set_epoch", "sum", "backward"} <= found.attributes
    assert "Commented" not in found.attributes and "Quoted" not in found.attributes
    assert sphinxext.api_names("def broken(:\n") == sphinxext.CodeNames(set(), set(), set(), set())
    # A bare name counts only when it was imported from a PyTorch package.
    assert sphinxext.api_names("FlopCounterMode()").names == set()


def test_imported_api_names_are_those_of_pytorch_packages():
    from helpers.authoring import sphinxext

    code = (
        "from torch.utils.data import DataLoader, DistributedSampler as DS\n"
        "from torchinfo import summary\nfrom helpers.check import check\n"
        "from .local import thing\nfrom torch.nn import *\nimport numpy as np\n"
    )
    assert sphinxext.imported_api_names(code) == {"DataLoader", "DS", "summary"}


def test_prose_and_headings_name_api_names_as_code_not_as_words():
    from helpers.authoring import sphinxext

    known = {"ModuleList", "set_epoch", "tensor", "DistributedSampler"}
    assert sphinxext.prose_names("nn.ModuleList", known) == {"ModuleList"}
    assert sphinxext.prose_names("sampler.set_epoch(epoch)", known) == {"set_epoch"}
    assert sphinxext.prose_names("tensor.detach()", known) == set()
    assert sphinxext.prose_names("torch.tensor", known) == {"tensor"}
    # An environment variable, alone or set, is found as typed; not inside other code.
    assert sphinxext.prose_names("PYTORCH_ENABLE_MPS_FALLBACK=1", set()) == {
        "PYTORCH_ENABLE_MPS_FALLBACK"
    }
    assert sphinxext.prose_names("export NCCL_DEBUG=INFO", set()) == {"NCCL_DEBUG"}
    assert sphinxext.prose_names("OMP_NUM_THREADS", set()) == {"OMP_NUM_THREADS"}
    assert sphinxext.prose_names("os.environ['OMP_NUM_THREADS']", set()) == set()
    assert sphinxext.prose_names("CUDA", set()) == set()
    # A dotted PyTorch name counts even when the page's code does not use it.
    assert sphinxext.prose_names("torch.utils.flop_counter.FlopCounterMode", set()) == {
        "FlopCounterMode"
    }
    heading = "Give each rank its own shard with DistributedSampler"
    assert sphinxext.heading_names(heading, [], known) == {"DistributedSampler"}
    heading = "Slice batches from one tensor instead of collating samples"
    assert sphinxext.heading_names(heading, [], known) == set(), "a plain word is not a name"
    assert sphinxext.heading_names("Make one with tensor", ["torch.tensor"], known) == {"tensor"}
    assert sphinxext.looks_like_code("pack_padded_sequence") and sphinxext.looks_like_code("Adam")
    assert not sphinxext.looks_like_code("parameters")
    assert not sphinxext.is_api_name("RuntimeError") and not sphinxext.is_api_name("nn")


def test_error_entries_are_the_lines_expect_error_and_expect_warning_print():
    from helpers.authoring import sphinxext

    output = (
        "shape before: (2, 3)\n"
        "⛔ RuntimeError: view size is not compatible with input tensor's size and stride (at "
        "least one dimension spans across two contiguous subspaces). Use .reshap…\n"
        "⛔ RuntimeError: Error(s) in loading state_dict for Sequential:\n"
        '    Missing key(s) in state_dict: "0.weight"; Unexpected key(s): "module.0.weight".\n'
        "⛔ torch.OutOfMemoryError: CUDA out of memory.\n"
        "not ⛔ ValueError: a line that does not start with the mark\n"
        "⚠ UserWarning: Using a target size that is different to the input size\n"
    )
    assert sphinxext.error_entries(output) == [
        "RuntimeError: view size is not compatible with input tensor's size and stride (at "
        "least one dimension spans across two contiguous subspaces). Use .reshap",
        "RuntimeError: Error(s) in loading state_dict for Sequential: Missing key(s) in "
        'state_dict: "0.weight", Unexpected key(s): "module.0.weight".',
        "torch.OutOfMemoryError: CUDA out of memory.",
        "UserWarning: Using a target size that is different to the input size",
    ]


def _section(title: str, *children):
    from docutils import nodes

    section = nodes.section(ids=[title.lower().replace(" ", "-")])
    section += nodes.title(text=title)
    for child in children:
        section += child
    return section


def _code(source: str, output: str = ""):
    from docutils import nodes

    cell = nodes.container(classes=["cell"])
    cell += nodes.literal_block(source, source)
    if output:
        cell += nodes.literal_block(output, output, classes=["output", "stream"])
    return cell


def _prose(*parts):
    """A paragraph: plain strings, and one-element tuples for inline code."""
    from docutils import nodes

    paragraph = nodes.paragraph()
    for part in parts:
        paragraph += nodes.literal(text=part[0]) if isinstance(part, tuple) else nodes.Text(part)
    return paragraph


def test_section_terms_say_how_each_section_holds_a_name_and_which_errors_it_shows():
    from docutils.frontend import get_default_settings
    from docutils.utils import new_document

    from helpers.authoring import sphinxext

    document = new_document("<page>", get_default_settings())
    page = _section(
        "04 · Modules",
        _code("from torch.utils.data import DistributedSampler\ntorch.manual_seed(0)"),
        _section(
            "Build a model three ways",
            _prose("Use ", ("nn.ModuleList",), " for a variable number of layers."),
            _code("layers = nn.ModuleList([nn.Linear(2, 2)])\nx = torch.randn(2)"),
        ),
        _section(
            "Pitfall: a plain list hides its layers",
            _code("x.view(4)", "⛔ RuntimeError: view size is not compatible…\n"),
            _prose("GPU only: ⛔ ", ("RuntimeError: CUDA error: device-side assert triggered",)),
        ),
        _section(
            "Give each rank its own shard with DistributedSampler",
            _code("sampler = DistributedSampler(data)\nsampler.set_epoch(1)"),
            _prose("Call ", ("sampler.set_epoch(epoch)",), " at each epoch."),
        ),
        _section("Summary", _prose("Layers go in an ", ("nn.ModuleList",), ".")),
    )
    document += page
    apis, errors = sphinxext.section_terms(document)
    build, pitfall, shard, summary = (s["ids"][0] for s in page.children[2:])
    top = page["ids"][0]
    H, P, C, R = sphinxext.HEADING, sphinxext.PROSE, sphinxext.CODE, sphinxext.RECAP
    assert sorted(apis) == sorted(
        [
            (build, "ModuleList", P), (build, "Linear", C), (build, "randn", C),
            (shard, "DistributedSampler", H), (shard, "set_epoch", P),
            (summary, "ModuleList", R),
        ]
    ), "the page's top (its setup cell) and the recaps' code count for nothing"  # fmt: skip
    assert all(sid != top for sid, _, _ in apis)
    assert errors == [
        (pitfall, "RuntimeError: view size is not compatible"),
        (pitfall, "RuntimeError: CUDA error: device-side assert triggered"),
    ]


def test_each_api_name_leads_to_the_sections_that_teach_it():
    from helpers.authoring import sphinxext

    H, P, C, R = sphinxext.HEADING, sphinxext.PROSE, sphinxext.CODE, sphinxext.RECAP
    apis = [
        ("a", "ModuleList", C), ("b", "ModuleList", P), ("c", "ModuleList", P),
        ("d", "ModuleList", R),
        ("a", "DistributedSampler", H), ("b", "DistributedSampler", P),
        ("e", "DistributedSampler", H),
        ("a", "pad_sequence", C), ("b", "pad_sequence", C),
        ("a", "DataParallel", R),
        ("a", "tensor", C), ("b", "tensor", P),
        ("b", "Linear", P), ("c", "Linear", H),
    ]  # fmt: skip
    assert sorted(sphinxext.pick_entries(apis)) == sorted(
        [
            ("b", "ModuleList", True),  # the first recipe whose prose names it
            ("a", "DistributedSampler", True), ("e", "DistributedSampler", True),  # headings
            ("a", "pad_sequence", False),  # the first code that uses it: a secondary entry
            ("a", "DataParallel", False),  # only a recap names it
            ("b", "tensor", True), ("c", "Linear", True),
        ]
    )  # fmt: skip
    # A ubiquitous name leads to headings only, or, where no heading has it, to prose.
    ubiquitous = {"tensor", "Linear", "pad_sequence"}
    picked = sphinxext.pick_entries(apis, ubiquitous, headed={"Linear"})
    assert ("b", "tensor", True) in picked and ("c", "Linear", True) in picked
    assert not any(name == "pad_sequence" for _, name, _ in picked)
    picked = sphinxext.pick_entries(apis, ubiquitous, headed={"Linear", "tensor"})
    assert not any(name == "tensor" for _, name, _ in picked)


def test_a_name_used_on_many_pages_is_ubiquitous():
    from helpers.authoring import sphinxext

    H, C = sphinxext.HEADING, sphinxext.CODE
    terms = {
        f"page{i}": ([("s", "tensor", C), ("t", "tensor", C), ("s", f"only{i}", H)], [])
        for i in range(sphinxext.UBIQUITOUS_PAGES + 1)
    }
    terms["page0"][0].append(("u", "DataLoader", H))
    assert sphinxext.ubiquitous_names(terms) == {"tensor"}
    assert sphinxext.ubiquitous_names(terms, pages=len(terms)) == set()
    assert sphinxext.headed_names(terms) == {f"only{i}" for i in range(len(terms))} | {"DataLoader"}
