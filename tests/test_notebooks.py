"""Every notebook follows the course guide, and the generated documents are up to date.

nbval (run by `make test`) re-executes each notebook and compares outputs; these tests check
what nbval cannot: the structure of the notebook and that its stored outputs are complete.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import pytest

from helpers.authoring import course

PATHS = course.notebook_paths()
IDS = [course.rel(p) for p in PATHS]
LESSONS = course.lesson_paths()
# The primer of the Python the lessons use: a lesson without a cookbook, read before 01.
PRIMER = course.NOTEBOOKS / "00_python.ipynb"
# Lessons whose recipes have moved to a cookbook notebook, and the primer: they follow the
# lesson structure.
SPLIT = [p for p in LESSONS if course.cookbook_of(p) or p == PRIMER]
# The cookbook notebooks (and a chapter not split, should one be added) keep the recipe-notebook
# structure.
RECIPE_NOTEBOOKS = [p for p in PATHS if p not in SPLIT]
INSTALL = re.compile(r"pip\b.*\binstall|\"pip\",\s*\"install\"|conda install|apt(-get)? install")


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def sections(nb) -> list[tuple[str, list]]:
    """Split a notebook into (## heading, cells) pairs; cells before the first get ''."""
    parts: list[tuple[str, list]] = [("", [])]
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            parts.append((cell.source.splitlines()[0][3:], []))
        parts[-1][1].append(cell)
    return parts


def test_the_course_has_numbered_notebooks_in_order():
    assert LESSONS, "no lessons found"
    numbers = [p.name[:2] for p in LESSONS]
    assert LESSONS[0] == PRIMER, "00 is the Python primer"
    assert numbers == [f"{i:02d}" for i in range(len(LESSONS))]
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name) for p in PATHS)


def test_each_cookbook_notebook_sits_beside_its_lesson():
    stems = {p.stem for p in LESSONS}
    books = course.cookbook_paths()
    assert books, "no cookbook notebooks found"
    for book in books:  # NN_name_recipes, or a continuation NN_name_topic_recipes
        chapter = [s for s in stems if book.stem.startswith(f"{s}_")]
        assert chapter, f"{book.name}: no lesson of that name"
    firsts = [b for b in books if b.stem.removesuffix("_recipes") in stems]
    assert sorted({b.name[:2] for b in books}) == [b.name[:2] for b in firsts], "one first each"


@pytest.fixture(params=PATHS, ids=IDS)
def notebook(request):
    return request.param, course.read(request.param)


def test_title_cell_has_number_badge_prerequisites_and_run_time(notebook):
    path, nb = notebook
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    number, _ = course.title(nb)
    assert number == path.name[:2]
    assert course.colab_badge(path) in first.source
    assert "**Run time:**" in first.source
    if path in SPLIT:
        assert "**Before you start:**" in first.source and "**Study time:**" in first.source
    else:
        assert "**Prerequisites:**" in first.source


GOALS = "**You will be able to:**"


@pytest.mark.parametrize("path", SPLIT, ids=[p.name for p in SPLIT])
def test_a_lesson_has_goals_concepts_both_times_and_one_line_of_sections(path):
    """The guide's lesson: 3-5 goals, "Before you start" as concepts with links to the lessons
    that taught them, its cookbook linked, the study time computed from the lesson as it is,
    4-7 sections before the exercises and summary, 1-2 exercises, no old-code table."""
    nb = course.read(path)
    first = nb.cells[0].source
    after = first.split(GOALS, 1)[1] if GOALS in first else ""
    goals = [
        line for line in after.split("**Before you start:**")[0].splitlines() if line[:2] == "- "
    ]
    assert 3 <= len(goals) <= 5, f"{path.name}: {len(goals)} goals"
    before = re.search(r"\*\*Before you start:\*\*(.+?)(\n\n|$)", first, re.S).group(1)
    if path.name[:2] not in ("00", "01"):
        assert re.search(r"\]\(\d\d_[a-z0-9_]+\.ipynb", before), "concepts link their lessons"
    if path != PRIMER:
        assert f"(cookbook/{course.cookbook_of(path).name})" in first
    assert course.study_time_line(course.read_twin(path)) in first
    sections = [h for h in course.headings(nb) if h not in ("Exercises", "Summary")]
    assert 4 <= len(sections) <= 7, f"{path.name}: {len(sections)} sections"
    assert not course.modern_api_rows(nb), "the old-code table belongs in the cookbook"
    assert 1 <= len(exercise_blocks(nb)) <= 2


def test_the_study_time_follows_the_stated_formula():
    import nbformat

    words = " ".join(["word"] * 240)  # 2 minutes
    code = "\n".join(f"x{i} = {i}" for i in range(30))  # 3 minutes
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(f"# 01 · T\n\n**Study time:** old words\n\n{words}"),
            nbformat.v4.new_code_cell(code),
            nbformat.v4.new_markdown_cell("### Exercise 1 · Do"),
            nbformat.v4.new_code_cell("\n".join(["y = 1"] * 50), metadata={"tags": ["solution"]}),
        ]
    )
    found = course.counts(nb)
    assert (found["code_lines"], found["exercises"], found["code_cells"]) == (30, 1, 1)
    assert found["words"] == 240 + 2 + 3  # "01", "T" and "Exercise 1 Do"; not "Study time"
    assert found["study_minutes"] == round(245 / 120 + 3 + 1 + 10)  # + a minute for the cell
    assert "about 15 min" in course.study_time_line(nb)


CALIBRATION = "helpers/authoring/study_time_calibration.json"


def test_the_study_time_lands_within_15_percent_of_a_newcomer_s_minutes():
    """The formula, applied to what it counts in the lessons a newcomer timed, gives each
    lesson's minutes within 15 % (the reading-only formula before it was 30 % short)."""
    calibration = json.loads((course.ROOT / CALIBRATION).read_text())
    assert len(calibration["lessons"]) == 13
    for lesson, c in calibration["lessons"].items():
        minutes = course.study_minutes(c["words"], c["code_lines"], c["code_cells"], c["exercises"])
        assert abs(minutes / c["newcomer_minutes"] - 1) <= 0.15, (lesson, round(minutes))


def test_each_lesson_takes_45_to_80_minutes_by_the_clock():
    """A lesson fits a teaching slot: 45-80 minutes by the study-time formula as its header
    states it (rounded to 5 minutes); material beyond that belongs in the cookbook."""
    minutes = {p.name: course._study_minutes(p) for p in LESSONS}
    assert {name: m for name, m in minutes.items() if not 45 <= m <= 80} == {}


def test_every_colab_link_points_at_this_notebook(notebook):
    path, nb = notebook
    text = "\n".join(cell.source for cell in nb.cells)
    links = re.findall(r"https://colab\.research\.google\.com/github/[^)\s\"]+", text)
    assert links and set(links) == {course.colab_url(path)}


def test_setup_cell_installs_helpers_on_colab_only_and_reports_the_device(notebook):
    _, nb = notebook
    setup = nb.cells[1]
    assert setup.cell_type == "code"
    assert '"google.colab" in sys.modules' in setup.source
    assert f"git+{course.REPO_URL}" in setup.source
    assert "setup(" in setup.source and "device:" in "".join(
        o.get("text", "") for o in setup.outputs
    )
    others = [c.source for c in nb.cells[2:] if c.cell_type == "code" and INSTALL.search(c.source)]
    assert others == [], "only the setup cell may install anything"


def test_every_heading_starts_its_own_cell(notebook):
    _, nb = notebook
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for number, line in enumerate(cell.source.splitlines()):
            fenced = fenced != line.startswith("```")
            assert fenced or number == 0 or not line.startswith("#"), f"move {line!r} to a new cell"


def test_stored_outputs_come_from_one_top_to_bottom_run(notebook):
    _, nb = notebook
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))


def test_the_twin_is_the_notebook_s_source(notebook):
    """notebooks/src/NN_name.py holds exactly the notebook's cells and tags (`make twins`,
    `make notebooks` bring them back in step)."""
    path, nb = notebook
    assert course.cells_of(nb) == course.cells_of(course.read_twin(path)), (
        f"{path.name} and {course.twin_path(path).name} differ: edit the twin and run "
        f"`make notebooks NB=notebooks/{path.name}`, or `make twins` after editing the notebook"
    )


def test_every_twin_has_its_notebook():
    twins = [*course.TWINS.glob("*.py"), *(course.COOKBOOK / "src").glob("*.py")]
    assert sorted(p.stem for p in twins) == sorted(p.stem for p in PATHS)


def test_jupyterlab_would_not_rewrite_the_metadata(notebook):
    """JupyterLab writes the running kernel's kernelspec and language_info into a notebook it
    opens; storing exactly those keeps opening from marking the notebook changed."""
    _, nb = notebook
    assert nb.metadata.kernelspec == course.kernelspec()
    assert nb.metadata.language_info.name == "python"
    assert set(nb.metadata) == {"kernelspec", "language_info"}


LONG_FLOAT = re.compile(r"\d\.\d{9,}")


def compared_text(cell) -> str:
    """The stored text nbval compares for a cell: empty when its output is ignored."""
    if cell.cell_type != "code" or "nbval-ignore-output" in tags(cell):
        return ""
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", ""))
        parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def test_compared_outputs_hold_no_full_precision_floats(notebook):
    """A float32 printed with 16 digits differs in its last digits between CPUs and versions."""
    _, nb = notebook
    found = [
        (cell.source.splitlines()[0], m.group(0))
        for cell in nb.cells
        for m in LONG_FLOAT.finditer(compared_text(cell))
    ]
    assert found == [], "round these to the digits that matter"


def test_no_stderr_unless_the_cell_shows_a_warning(notebook):
    """Build-machine noise (library log lines, banners) is not stored; a cell that shows a
    warning on purpose says so in its source."""
    _, nb = notebook
    for cell in nb.cells:
        if cell.cell_type != "code" or re.search(r"warn", cell.source, re.IGNORECASE):
            continue
        stderr = [o.text for o in cell.outputs if o.get("name") == "stderr"]
        assert stderr == [], f"{cell.source.splitlines()[0]!r} stores stderr: {stderr}"


def test_stored_outputs_hold_no_terminal_colour_codes(notebook):
    _, nb = notebook
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert "\x1b[" not in compared_text(cell) + "".join(
                o.get("text", "") for o in cell.outputs
            ), cell.source.splitlines()[0]


def test_errors_are_shown_in_plain_python_that_any_front_end_runs(notebook):
    """No cell raises: a pitfall shows its error with `expect_error`, which prints one
    `⛔ Type: message` line and lets Run All go on in Colab and editors that ignore cell tags
    (no cell relies on `raises-exception`); every such cell stores its error line."""
    from helpers.check import ERROR_LINE_RE, WARNING_LINE_RE

    _, nb = notebook
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert "raises-exception" not in tags(cell), cell.source[:80]
        assert not any(o.output_type == "error" for o in cell.outputs), cell.source[:80]
        if "expect_error(" in cell.source:  # as course.error_outputs finds them
            lines = stream_text(cell).splitlines()
            assert any(ERROR_LINE_RE.match(line) for line in lines), cell.source[:80]
        if "expect_warning(" in cell.source:
            lines = stream_text(cell).splitlines()
            assert any(WARNING_LINE_RE.match(line) for line in lines), cell.source[:80]


def test_ignored_outputs_are_followed_by_a_check(notebook):
    _, nb = notebook
    for heading, cells in sections(nb):
        for i, cell in enumerate(cells):
            if "nbval-ignore-output" not in tags(cell):
                continue
            later = [c.source for c in cells[i:] if c.cell_type == "code"]
            assert any(re.search(r"\bcheck\(|\bassert\b", s) for s in later), (
                f"section {heading!r}: an ignored output is not followed by a check"
            )


def exercise_blocks(nb) -> list[list]:
    """The cells of each `### Exercise` of the `## Exercises` section, its heading first."""
    cells = dict(sections(nb)).get("Exercises") or []
    starts = [i for i, c in enumerate(cells) if c.source.startswith("### Exercise")]
    return [cells[i:j] for i, j in zip(starts, [*starts[1:], len(cells)], strict=True)]


def stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


SOLUTION_LINE = (
    "# Solution: open it once you have tried. It uses its own names, so your answer stays as it is."
)
HINTS = re.compile(r"<details><summary>Hint 1</summary>.*<details><summary>Hint 2</summary>", re.S)


def bound_names(source: str) -> set[str]:
    """The names a cell binds at its top level (assignments, loops, defs, imports, with-as)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            continue
        names |= _stored(node)
    return names


def _stored(node: ast.AST) -> set[str]:
    """Names stored by ``node`` outside comprehensions (whose variables stay inside them)."""
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return set()
    own = {node.id} if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) else set()
    return own.union(*(_stored(child) for child in ast.iter_child_nodes(node)))


def answer_expressions(solution: str) -> list[str]:
    """What a solution computes (each assigned or returned expression, its own names without the
    `solution_` prefix), whitespace removed: none may appear where a learner sees it unasked (the
    task and its hints, the starter's comments, the check cell and what it prints)."""
    found = []
    for node in ast.walk(ast.parse(solution)):
        value = getattr(node, "value", None)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return) and value:
            text = re.sub(r"\s+", "", ast.unparse(value).replace("solution_", ""))
            if len(text) >= 12:
                found.append(text)
    return found


def answer_leaks(task: str, starter: str, check_cell, solution) -> list[str]:
    """The ways an exercise shows its answer before the learner opens the solution."""
    leaks = []
    body = ast.parse(check_cell.source).body
    if len(body) != 1 or not (
        isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
    ):
        leaks.append("the check cell computes more than one call to its checker")
    first = solution.source.splitlines()[0]
    if first != SOLUTION_LINE:
        leaks.append(f"the collapsed solution shows its first line {first!r}")
    comments = "".join(line.partition("#")[2] for line in starter.source.splitlines())
    seen = re.sub(r"\s+", "", task + comments + check_cell.source + stream_text(check_cell))
    shown = [e for e in answer_expressions(solution.source) if e in seen]
    leaks += [f"visible before opening: {e}" for e in shown]
    return leaks


def test_exercises_check_the_learner_and_hide_the_solution(notebook):
    """Each exercise: task (with two hints, collapsed), starter, a check cell that is one call to
    helpers.exercises.chNN (the reference answer lives there), "#### Solution", and a solution
    (tag `solution`, code and output collapsed, first line a plain sentence) that binds only
    `solution_*` names and passes the same checker. Stored outputs prove both directions: the
    starter fails the check, the solution passes it; nbval re-executes both every run, and runs
    the check again after the solution (tests/conftest.py): it still fails for the starter."""
    path, nb = notebook
    blocks = exercise_blocks(nb)
    module = course.exercise_module(path)
    if path in SPLIT:
        assert 1 <= len(blocks) <= 2, "a lesson has 1-2 exercises"
    else:
        assert 2 <= len(blocks) <= 4, "2-4 exercises"
    for number, block in enumerate(blocks, 1):
        name = block[0].source.splitlines()[0]
        kinds = [(c.cell_type, "solution" in tags(c)) for c in block]
        expected = [
            ("markdown", False),
            ("code", False),
            ("code", False),
            ("markdown", False),
            ("code", True),
        ]
        assert kinds == expected, f"{name}: task, starter, check, #### Solution, solution"
        task, starter, check_cell, heading, solution = block
        assert re.match(rf"### Exercise {number} · \S", task.source), name
        assert HINTS.search(task.source), f"{name}: two collapsed hints, Hint 1 then Hint 2"
        assert "..." in starter.source or "None" in starter.source, f"{name}: nothing to fill in"
        checker = f"{module}.exercise_{number}("
        assert check_cell.source.strip().startswith(checker), f"{name}: the check calls {checker}"
        assert stream_text(check_cell).startswith("✗ "), f"{name}: the starter passes the check"
        assert heading.source.strip() == "#### Solution", name
        hidden = solution.metadata.get("jupyter", {})
        assert hidden == {"source_hidden": True, "outputs_hidden": True}, name
        assert solution.metadata.get("collapsed") is True, f"{name}: JupyterLab would add it"
        assert checker in solution.source, f"{name}: the solution is checked by {checker}"
        overwritten = {n for n in bound_names(solution.source) if not n.startswith("solution_")}
        assert not overwritten, f"{name}: the solution rebinds {sorted(overwritten)}"
        assert answer_leaks(task.source, starter, check_cell, solution) == [], name
        last = stream_text(solution).rstrip().splitlines()[-1:]
        assert last and last[0].startswith("✓ "), f"{name}: the solution does not pass its check"


def test_summary_closes_the_notebook_and_links_the_next(notebook):
    path, nb = notebook
    heading, cells = sections(nb)[-1]
    assert heading == "Summary"
    bullets = [line for line in cells[0].source.splitlines() if line.startswith("- ")]
    assert 3 <= len(bullets) <= 6
    chapters = sorted({p.name[:2] for p in PATHS})
    later = chapters.index(path.name[:2]) + 1
    if later < len(chapters):  # the next lesson (from a cookbook: the next cookbook or lesson)
        nexts = [course.rel(p) for p in PATHS if p.name[:2] == chapters[later]]
        found = re.findall(r"\]\(([^)#\s]+\.ipynb)\)", cells[0].source)
        linked = {course.rel((path.parent / f).resolve()) for f in found}
        assert linked & set(nexts), f"{path.name}: no link to the next chapter"


@pytest.mark.parametrize("path", RECIPE_NOTEBOOKS, ids=[course.rel(p) for p in RECIPE_NOTEBOOKS])
def test_recipes_are_tasks_with_unique_headings(path):
    nb = course.read(path)
    found = course.recipes(nb)
    assert len(found) >= 3
    assert len(set(found)) == len(found)
    assert course.modern_api_rows(nb), "no '## Old code you will meet' table"


def test_generated_documents_are_up_to_date():
    stale = [p.relative_to(course.ROOT).as_posix() for p in course.stale()]
    assert stale == [], f"run `make index`: {stale}"


def test_every_run_time_was_measured_on_the_notebook_as_it_is():
    """The headers' run times come from helpers/results/durations.json; a twin edited since
    its duration was recorded needs measuring again."""
    stale = [p.name for p in course.unmeasured()]
    assert stale == [], f"re-measure {stale}: `make test`, then `make durations`"


def test_readme_table_lists_every_notebook():
    readme = course.README.read_text()
    for path in PATHS:
        assert f"({path.relative_to(course.ROOT).as_posix()})" in readme
        assert course.colab_url(path) in readme


def test_the_lessons_table_carries_each_project_after_the_lesson_it_follows():
    table = course.render_readme_table().split("\n\n", 1)[0].splitlines()
    numbers = [row.split(" | ", 1)[0].removeprefix("| ") for row in table[2:]]
    assert numbers.index("P1") == numbers.index("08") + 1, numbers
    assert numbers.index("P2") == numbers.index("13") + 1, numbers
    assert sorted(course.PROJECT_AFTER) == [p.name for p in course.project_paths()]


def test_anchor_of_a_heading():
    assert course.anchor("Split with `chunk` and `split`") == "Split-with-chunk-and-split"


def test_title_rejects_a_bad_first_line():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Tensors")])
    with pytest.raises(ValueError, match="NN · Title"):
        course.title(nb)


def test_repository_url_is_kept_in_one_place():
    """Only helpers/authoring/course.py spells the repository; the rest is generated or checked."""
    spelled = [
        p.relative_to(course.ROOT).as_posix()
        for p in [
            *course.ROOT.glob("helpers/**/*.py"),
            course.ROOT / "pyproject.toml",
            course.ROOT / "Makefile",
        ]
        if course.REPO in p.read_text()
    ]
    assert spelled == ["helpers/authoring/course.py"]


def test_no_notebook_uses_an_absolute_path():
    for path in PATHS:
        text = path.read_text()
        assert "/work/" not in text and "/home/" not in text, path.name


def test_readme_states_the_two_commands():
    readme = course.README.read_text()
    assert "make lab" in readme and "make test" in readme


def test_data_readme_is_the_only_committed_file_in_data():
    ignore = (course.ROOT / ".gitignore").read_text()
    assert "/data/*" in ignore and "!/data/README.md" in ignore
    assert Path(course.ROOT / "data" / "README.md").is_file()


def test_relative_links_point_at_existing_files(notebook):
    """Every relative link leads to a file, and a link to a notebook's heading to that heading
    (a recipe that moved to the cookbook is linked there)."""
    path, nb = notebook
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for target, fragment in re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]*))?\)", text):
        if target.startswith(("http://", "https://")):
            continue
        linked = path.parent / target
        assert linked.exists(), f"{path.name} links to missing {target}"
        if fragment and linked.suffix == ".ipynb":
            headings = course.read(linked)
            found = {
                course.anchor(h) for level in (2, 3, 4) for h in course.headings(headings, level)
            }
            assert fragment in found, f"{path.name} links to missing {target}#{fragment}"


def test_every_link_of_the_generated_indexes_resolves():
    """RECIPES.md and ERRORS.md link notebooks by heading anchors: each must exist."""
    anchors = {
        course.rel(p): {
            course.anchor(h) for level in (2, 3) for h in course.headings(course.read(p), level)
        }
        for p in PATHS
    }
    for index in (course.RECIPES_MD, course.ERRORS_MD):
        links = re.findall(r"\]\(([^)\s#]+)(?:#([^\s]*?))?\)(?=[\s|·]|$)", index.read_text())
        assert links, f"{index.name} has no links"
        for target, fragment in links:
            if target.endswith(".md"):
                assert (index.parent / target).is_file(), f"{index.name}: {target}"
                continue
            assert target in anchors, f"{index.name} links to missing {target}"
            assert not fragment or fragment in anchors[target], f"{index.name}: {target}#{fragment}"


def test_the_error_index_lists_every_error_a_notebook_shows():
    text = course.ERRORS_MD.read_text()
    shown = [e for p in PATHS for e in course.error_outputs(course.read(p))]
    assert shown, "no notebook shows an error"
    for ename, _, heading in shown:
        assert f"`{ename}`" in text and course.anchor(heading) in text


def test_the_error_index_writes_what_varies_between_runs_once_and_plainly():
    """A memory address or a free port in a shown error would change the index at every run; an
    error a recipe shows twice is one row."""
    import nbformat

    shown = "⛔ PicklingError: Can't pickle <function <lambda> at 0x7feeb83e0540>: failed\n"
    shown += "⛔ DistNetworkError: failed to listen. port: 46269, name: EADDRINUSE\n"
    shown += "⚠ UserWarning: not listed: this cell shows errors only\n"
    cell = nbformat.v4.new_code_cell("with expect_error(Exception): ...")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=shown)]
    warned = nbformat.v4.new_code_cell("with expect_warning(UserWarning): ...")
    text = "⚠ UserWarning: took 1.5 s\n⛔ ValueError: not listed: no expect_error here\n"
    text += "⚠ UserWarning: Our suggested max number of worker in current system is 16.\n"
    warned.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    cells = [nbformat.v4.new_markdown_cell("## A recipe"), cell, warned]
    nb = nbformat.v4.new_notebook(cells=cells)
    assert course.error_outputs(nb) == [
        ("PicklingError", "Can't pickle <function <lambda> at 0x…>: failed", "A recipe"),
        ("DistNetworkError", "failed to listen. port: N, name: EADDRINUSE", "A recipe"),
        ("UserWarning", "took N s", "A recipe"),
        ("UserWarning", "Our suggested max number of worker in current system is N.", "A recipe"),
    ]
    text = course.ERRORS_MD.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(set(rows)), "a row twice"


def test_the_recipe_index_lists_pitfalls_and_topics_across_chapters():
    text = course.RECIPES_MD.read_text()
    pitfalls = [h for p in PATHS for _, inside in course.outline(course.read(p)) for h in inside]
    assert pitfalls and all(f"  - [{h}](" in text for h in pitfalls)
    for topic, hits in course.topic_index():
        assert len({p for p, _ in hits}) >= 2, f"topic {topic!r} spans fewer than 2 chapters"


FORMER_ANCHORS = Path(__file__).with_name("former_anchors.json")


def test_every_former_recipe_anchor_still_resolves():
    """Chapters 01-13 were recipe notebooks until they were split into a lesson and a cookbook
    notebook; a link to one of their headings (tests/former_anchors.json, made from the last
    commit before the split) lands on the same heading in the chapter's lesson or one of its
    cookbook notebooks, and the website sends a lesson link to the cookbook when the heading
    moved there (on to the chapter's second cookbook notebook when it is not in the first)."""
    import json

    former = json.loads(FORMER_ANCHORS.read_text())
    assert sum(map(len, former.values())) > 200
    for name, anchors in former.items():
        lesson = course.NOTEBOOKS / name
        found = {
            course.anchor(h)
            for p in (lesson, *course.chapter_cookbooks(lesson))
            for level in (2, 3)
            for h in course.headings(course.read(p), level)
        }
        missing = [a for a in anchors if a not in found]
        assert missing == [], f"{name}: {missing}"


WORKSHOP = course.NOTEBOOKS / "WORKSHOP.md"
LESSON_LINK = re.compile(r"\[[^\]]*\]\((\d\d_[a-z0-9_]+\.ipynb)\)")


def plan_rows(heading: str) -> list[tuple[int, str, list[int]]]:
    """(minutes, lesson file or '', exercise numbers) for each row of a WORKSHOP.md plan."""
    part = WORKSHOP.read_text().split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1].isdigit():
            link = LESSON_LINK.search(cells[2])
            rows.append((int(cells[1]), link.group(1) if link else "", numbers(cells[3])))
    assert rows, f"no plan under '## {heading}'"
    return rows


def numbers(text: str) -> list[int]:
    """The numbers in a cell of a plan, e.g. the exercises "1, 2"."""
    return [int(n) for n in re.findall(r"\d+", text)]


# Each plan, and the plans whose lessons the room has already been taught (the second day comes
# after the one-day workshop, the third after both).
PLANS = {
    "A one-day workshop": [],
    "A half-day workshop": [],
    "A second day": ["A one-day workshop"],
    "A third day": ["A one-day workshop", "A second day"],
}


@pytest.mark.parametrize("heading", list(PLANS))
def test_each_workshop_slot_holds_its_lesson_and_comes_after_what_it_needs(heading):
    """A slot is at least as long as its lesson's study time; the lessons a lesson's "Before you
    start" links come earlier in the same plan, or in the plans it follows (so each day stands on
    its own); the exercises done in the room are the lesson's own."""
    taught = [lesson for after in PLANS[heading] for _, lesson, _ in plan_rows(after) if lesson]
    for minutes, lesson, exercises in plan_rows(heading):
        if not lesson:
            continue
        path = course.NOTEBOOKS / lesson
        assert minutes >= course._study_minutes(path), f"{lesson}: {minutes} min is too short"
        first = course.read(path).cells[0].source
        before = first.split("**Before you start:**", 1)[1].split("\n\n", 1)[0]
        needed = set(LESSON_LINK.findall(before)) - {PRIMER.name}  # read before the day
        assert needed <= set(taught), f"{lesson} needs {sorted(needed - set(taught))} first"
        assert exercises and max(exercises) <= len(exercise_blocks(course.read(path)))
        taught.append(lesson)


@pytest.mark.parametrize("heading", list(PLANS))
def test_each_workshop_day_keeps_its_clock_and_ends_by_five(heading):
    """Each row starts when the one before it ends, the day ends by 17:00, and the teaching
    minutes the text states are the lessons' slots added up."""
    part = WORKSHOP.read_text().split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d\d):(\d\d) \| (\d+) \|", part, flags=re.M)
    assert rows, heading
    clock = [(60 * int(h) + int(m), int(minutes)) for h, m, minutes in rows]
    for (start, minutes), (next_start, _) in itertools.pairwise(clock):
        assert start + minutes == next_start, (
            f"{heading}: a row at {next_start // 60}:{next_start % 60:02d}"
        )
    assert clock[-1][0] + clock[-1][1] <= 17 * 60, heading
    teaching = sum(minutes for minutes, lesson, _ in plan_rows(heading) if lesson)
    stated = re.search(r"Teaching time: (\d+) minutes", part)
    assert stated is None or int(stated.group(1)) == teaching, heading


def test_the_days_teach_every_lesson_but_the_side_and_reading_ones():
    """00 (the Python primer) is read before, 02 (a side lesson) and 08 go home as reading; every
    other lesson has a slot."""
    days = ("A one-day workshop", "A second day", "A third day")
    taught = [lesson for h in days for _, lesson, _ in plan_rows(h)]
    home = {PRIMER.name, "02_contiguity_strides.ipynb", "08_tensorboard.ipynb"}
    assert sorted(set(taught) - {""}) == sorted(p.name for p in SPLIT if p.name not in home)


def test_the_plan_per_lesson_states_each_lesson_s_study_time():
    part = WORKSHOP.read_text().split("## A plan per lesson", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"\((\d\d_[a-z0-9_]+\.ipynb)\) \| (\d+) min \|", part))
    assert listed, "no study times in the plan per lesson"
    for lesson, minutes in listed.items():
        assert int(minutes) == course._study_minutes(course.NOTEBOOKS / lesson), lesson
    assert sorted(listed) == sorted(p.name for p in SPLIT)


def test_no_checkpoint_weights_or_archive_is_committed():
    """Checkpoints and exported models are written under runs/ (git-ignored) when a notebook runs;
    data is fetched, never committed."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=course.ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    heavy = (".pt", ".pth", ".ckpt", ".onnx", ".pt2", ".safetensors", ".tar.gz", ".zip", ".npz")
    assert [p for p in tracked if p.endswith(heavy)] == []


def _sections(nb) -> list[tuple[str, list]]:
    """Each ``##`` section's heading and its code cells, in order."""
    found: list[tuple[str, list]] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            found.append((cell.source.splitlines()[0][3:].strip(), []))
        elif cell.cell_type == "code" and found:
            found[-1][1].append(cell)
    return found


def _printed(cell) -> list[str]:
    return [
        line
        for out in cell.get("outputs", [])
        for line in out.get("text", "").splitlines()
        if out["output_type"] == "stream" and line.strip()
    ]


# The recipes that are about a CUDA device (on a CPU they run a CPU branch or say what a GPU
# would show): each sits in its cookbook notebook's "On a GPU" part.
GPU_RECIPES = {
    "10_speedups_recipes.ipynb": [
        "Copy the next batch to the GPU while this one trains",
        "Let float32 use the GPU's tensor cores: TF32",
        "Know which calls make the CPU wait for the GPU",
        "Let cuDNN pick the fastest convolution per input shape: `cudnn.benchmark`",
    ],
    "11_memory_recipes.ipynb": ["Read the CUDA caching allocator"],
    "13_reproducibility_debugging_recipes.ipynb": [
        "Use CUDA with worker processes: `Cannot re-initialize CUDA in forked subprocess`"
    ],
}


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_what_needs_a_gpu_sits_in_the_cookbook_s_on_a_gpu_part(path):
    """A lesson runs whole on any machine: none of its cells says it needs a CUDA device. In the
    cookbook, a recipe that shows nothing on a CPU but that it needs one comes after the
    notebook's "On a GPU" heading, and every recipe there uses CUDA."""
    sections = _sections(course.read(path))
    shown = {title: [s for cell in cells for s in _printed(cell)] for title, cells in sections}
    no_gpu = ("no CUDA", "no cuDNN")
    says_no_gpu = {t: [s.startswith(no_gpu) for s in ls] for t, ls in shown.items()}
    if not course.is_cookbook(path):
        assert [t for t, said in says_no_gpu.items() if any(said)] == []
        return
    titles = [t for t, _ in sections]
    gpu_part = titles.index("On a GPU") if "On a GPU" in titles else len(titles)
    for title in titles[:gpu_part]:
        assert not says_no_gpu[title] or not all(says_no_gpu[title]), title
        assert title not in GPU_RECIPES.get(path.name, []), f"{title}: not in 'On a GPU'"
    assert set(GPU_RECIPES.get(path.name, [])) <= set(titles[gpu_part:])
    for title, cells in sections[gpu_part + 1 :]:
        if title.startswith(course.NON_RECIPES):
            break
        assert any("cuda" in cell.source for cell in cells), f"{title}: in 'On a GPU', no CUDA"
