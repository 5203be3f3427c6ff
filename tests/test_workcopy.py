"""helpers.workcopy: the learner works in work/, the stored notebooks stay as they are."""

from __future__ import annotations

import pytest

from helpers import workcopy


@pytest.fixture
def course_dir(tmp_path):
    source = tmp_path / "notebooks"
    source.mkdir()
    for name in ("01_tensors.ipynb", "02_contiguity.ipynb"):
        (source / name).write_text(f"stored {name}")
    (source / "RECIPES.md").write_text("index v1")
    return source


def test_sync_seeds_the_working_copy_and_never_overwrites_it(course_dir, tmp_path):
    work = tmp_path / "work"
    copied = workcopy.sync(work, course_dir)
    assert [p.name for p in copied] == ["01_tensors.ipynb", "02_contiguity.ipynb"]
    (work / "01_tensors.ipynb").write_text("the learner's run")
    (course_dir / "03_autograd.ipynb").write_text("stored 03")  # a notebook added later
    (course_dir / "RECIPES.md").write_text("index v2")
    assert [p.name for p in workcopy.sync(work, course_dir)] == ["03_autograd.ipynb"]
    assert (work / "01_tensors.ipynb").read_text() == "the learner's run"
    assert (work / "RECIPES.md").read_text() == "index v2", "indexes follow the course"
    assert (course_dir / "01_tensors.ipynb").read_text() == "stored 01_tensors.ipynb"
    assert not list(work.glob(".*.partial"))


def test_restore_puts_back_one_or_every_stored_notebook(course_dir, tmp_path):
    work = tmp_path / "work"
    workcopy.sync(work, course_dir)
    for path in work.glob("0*.ipynb"):
        path.write_text("changed")
    assert [p.name for p in workcopy.restore(["01"], work, course_dir)] == ["01_tensors.ipynb"]
    assert (work / "01_tensors.ipynb").read_text() == "stored 01_tensors.ipynb"
    assert (work / "02_contiguity.ipynb").read_text() == "changed"
    workcopy.restore(None, work, course_dir)
    assert (work / "02_contiguity.ipynb").read_text() == "stored 02_contiguity.ipynb"


def test_restore_refuses_a_name_that_is_not_one_notebook(course_dir, tmp_path):
    with pytest.raises(ValueError, match="use one of: 01, 02"):
        workcopy.restore(["0"], tmp_path / "work", course_dir)
    with pytest.raises(ValueError, match="names 0 notebooks"):
        workcopy.restore(["07"], tmp_path / "work", course_dir)


def test_the_command_line_asks_for_names_or_all(capsys):
    with pytest.raises(SystemExit):
        workcopy.main(["restore"])
    assert "--all" in capsys.readouterr().err


def test_a_newer_stored_notebook_is_reported_not_copied(course_dir, tmp_path):
    import os

    work = tmp_path / "work"
    workcopy.sync(work, course_dir)
    assert workcopy.outdated(work, course_dir) == []
    stored = course_dir / "01_tensors.ipynb"
    stored.write_text("a new version")
    later = (work / "01_tensors.ipynb").stat().st_mtime + 10
    os.utime(stored, (later, later))
    assert workcopy.outdated(work, course_dir) == [work / "01_tensors.ipynb"]
    assert (work / "01_tensors.ipynb").read_text() == "stored 01_tensors.ipynb"


def test_cookbook_notebooks_are_copied_and_restored_in_their_folder(course_dir, tmp_path):
    (course_dir / "cookbook").mkdir()
    (course_dir / "cookbook" / "01_tensors_recipes.ipynb").write_text("stored recipes")
    work = tmp_path / "work"
    copied = workcopy.sync(work, course_dir)
    assert [p.relative_to(work).as_posix() for p in copied] == [
        "01_tensors.ipynb",
        "02_contiguity.ipynb",
        "cookbook/01_tensors_recipes.ipynb",
    ]
    (work / "cookbook" / "01_tensors_recipes.ipynb").write_text("changed")
    (work / "01_tensors.ipynb").write_text("changed")
    restored = workcopy.restore(["cookbook/01"], work, course_dir)
    assert restored == [work / "cookbook" / "01_tensors_recipes.ipynb"]
    assert restored[0].read_text() == "stored recipes"
    assert (work / "01_tensors.ipynb").read_text() == "changed", "01 alone is the lesson"
    assert workcopy.restore(["01_tensors_recipes"], work, course_dir) == restored
