"""helpers.authoring.student: student copies keep tasks, starters and checks, no solution."""

from __future__ import annotations

import zipfile

import nbformat

from helpers.authoring import course, student


def test_student_copies_have_no_solutions_and_keep_the_checks(tmp_path):
    archive = student.write(tmp_path)
    folder = tmp_path / student.NAME
    names = sorted(
        p.relative_to(folder / "notebooks").as_posix()
        for p in (folder / "notebooks").rglob("*.ipynb")
    )
    briefs = course.project_paths()
    assert briefs and course.reference_paths(), "the projects and their reference solutions"
    assert names == sorted(course.rel(p) for p in course.notebook_paths() + briefs)
    assert not any(n.startswith("projects/reference/") for n in names), "a reference solution"
    for path in course.notebook_paths():
        original = course.read(path)
        copy = nbformat.read(folder / "notebooks" / course.rel(path), as_version=4)
        nbformat.validate(copy)
        solutions = [c for c in original.cells if student.is_solution(c)]
        assert solutions, f"{path.name} has no solution to remove"
        assert not any(student.is_solution(c) for c in copy.cells)
        assert len(copy.cells) == len(original.cells) - len(solutions)
        kept = [c.source for c in original.cells if not student.is_solution(c)]
        assert [c.source for c in copy.cells] == kept, "everything else is kept, in order"
    with zipfile.ZipFile(archive) as zf:
        listed = set(zf.namelist())
    assert f"{student.NAME}/notebooks/01_tensors.ipynb" in listed
    assert f"{student.NAME}/notebooks/cookbook/01_tensors_recipes.ipynb" in listed
    assert f"{student.NAME}/helpers/exercises/__init__.py" in listed
    assert f"{student.NAME}/Makefile" in listed
    assert not any("/src/" in n or "/tests/" in n or "__pycache__" in n for n in listed)


def test_writing_again_replaces_the_copies(tmp_path):
    student.write(tmp_path)
    stale = tmp_path / student.NAME / "notebooks" / "99_stale.ipynb"
    stale.write_text("{}")
    student.write(tmp_path)
    assert not stale.exists()
    assert not list(tmp_path.glob(".*partial*"))


def test_the_bundle_readme_is_its_own_and_its_commands_exist(tmp_path):
    """Unpacked into an empty folder, the bundle's README promises only what the bundle has:
    every `make` target it names exists there (``make -n``), and nothing of the authors'."""
    import re
    import shutil
    import subprocess

    archive = student.write(tmp_path / "out")
    unpacked = tmp_path / "empty"
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(unpacked)
    root = unpacked / student.NAME
    readme = (root / "README.md").read_text(encoding="utf-8")
    for absent in ("make test", "WORKSHOP", "notebooks/src", "Solution", "tests/"):
        assert absent not in readme, f"the student README mentions {absent!r}"
    named = set(re.findall(r"make ([a-z-]+)", readme))
    assert named == set(student.STUDENT_TARGETS)
    if shutil.which("make"):
        for target in sorted(named):
            extra = ["WHICH=01"] if target == "restore" else []
            done = subprocess.run(
                ["make", "-n", target, *extra], cwd=root, capture_output=True, text=True
            )
            assert done.returncode == 0, f"make -n {target}: {done.stderr}"
    assert (root / "data" / "README.md").is_file() and (root / "environment.yml").is_file()


def test_the_bundle_carries_the_website_it_is_given(tmp_path):
    """`make student` puts its website (built without solutions) in the bundle as site/; the
    authors' tooling (helpers/authoring) stays out."""
    built = tmp_path / "built"
    (built / "_static").mkdir(parents=True)
    (built / "index.html").write_text("<html></html>")
    (built / "_static" / "search.js").write_text("")
    archive = student.write(tmp_path / "out", site=built)
    folder = tmp_path / "out" / student.NAME
    assert (folder / "site" / "index.html").is_file()
    with zipfile.ZipFile(archive) as zf:
        listed = set(zf.namelist())
    assert f"{student.NAME}/site/_static/search.js" in listed
    assert not any("/authoring/" in n for n in listed)
    assert "site/index.html" in (folder / "README.md").read_text(encoding="utf-8")
    without = student.write(tmp_path / "bare")
    with zipfile.ZipFile(without) as zf:
        assert not any("/site/" in n for n in zf.namelist())
