"""helpers.course: executing notebooks in place and the index command."""

from __future__ import annotations

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from helpers import course


def write(path, *cells):
    """Write a notebook and its twin under ``path.parent`` holding ``cells``."""
    nb = nbformat.v4.new_notebook(cells=list(cells), metadata={"kernelspec": course.kernelspec()})
    nbformat.write(nb, path)
    course.write_twin(path)
    return path


def test_execute_builds_from_the_twin_and_stores_outputs(tmp_path):
    pitfall = nbformat.v4.new_code_cell("1 / 0")
    pitfall.metadata["tags"] = ["raises-exception"]
    path = write(
        tmp_path / "nb.ipynb",
        nbformat.v4.new_code_cell("from helpers.env import setup\n\ndevice = setup()"),
        pitfall,
        nbformat.v4.new_code_cell("import os; print(os.getcwd())"),
    )
    twin = course.twin_path(path)
    assert twin == tmp_path / "src" / "nb.py"
    twin.write_text(twin.read_text().replace("print(os.getcwd())", "print(os.getcwd())  # edited"))
    assert course.execute(path) > 0
    nb = nbformat.read(path, as_version=4)
    assert course.cells_of(nb) == course.cells_of(course.read_twin(path)), "built from the twin"
    assert nb.cells[2].source.endswith("# edited")
    assert [c.execution_count for c in nb.cells] == [1, 2, 3]
    assert nb.metadata.kernelspec == course.kernelspec()
    error = nb.cells[1].outputs[0]
    assert error.ename == "ZeroDivisionError"
    assert len(error.traceback) == 1, "setup() makes tracebacks minimal inside the notebook"
    assert nb.cells[2].outputs[0].text.strip() == str(tmp_path), "runs in the notebook's folder"


def test_rebuilding_keeps_cell_ids(tmp_path):
    path = write(tmp_path / "nb.ipynb", nbformat.v4.new_code_cell("x = 1"))
    first = [c.id for c in course.build(path).cells]
    assert first == [c.id for c in course.build(path).cells]
    twin = course.twin_path(path)
    twin.write_text(twin.read_text() + "\n# %%\nx = 1\n")  # a duplicate cell gets its own id
    ids = [c.id for c in course.build(path).cells]
    assert ids[0] == first[0] and len(set(ids)) == 2


def test_a_notebook_without_a_twin_says_how_to_write_it(tmp_path):
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    with pytest.raises(FileNotFoundError, match="make twins"):
        course.build(path)


def test_a_failing_notebook_is_left_unchanged(tmp_path):
    path = write(
        tmp_path / "nb.ipynb",
        nbformat.v4.new_code_cell("print('ok')"),
        nbformat.v4.new_code_cell("raise ValueError('untagged')"),
    )
    before = path.read_bytes()
    with pytest.raises(CellExecutionError, match="untagged"):
        course.execute(path)
    assert path.read_bytes() == before


def test_index_check_passes_on_the_committed_documents(capsys):
    assert course._main(["index", "--check"]) == 0
    assert capsys.readouterr().out == ""


def test_written_files_are_the_writefile_cells():
    import nbformat

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("%%writefile runs/a.py\nprint('a')"),
            nbformat.v4.new_code_cell("print('not a file')"),
            nbformat.v4.new_markdown_cell("%%writefile is mentioned here"),
        ]
    )
    assert course.written_files(nb) == {"runs/a.py": "print('a')\n"}
