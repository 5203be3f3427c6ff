"""helpers.course: executing notebooks in place and the index command."""

from __future__ import annotations

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from helpers import course


def write(path, *cells):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def test_execute_stores_outputs_and_allows_only_tagged_errors(tmp_path):
    pitfall = nbformat.v4.new_code_cell("1 / 0")
    pitfall.metadata["tags"] = ["raises-exception"]
    path = write(
        tmp_path / "nb.ipynb",
        nbformat.v4.new_code_cell("print(6 * 7)"),
        pitfall,
        nbformat.v4.new_code_cell("import os; print(os.getcwd())"),
    )
    assert course.execute(path) > 0
    nb = nbformat.read(path, as_version=4)
    assert [c.execution_count for c in nb.cells] == [1, 2, 3]
    assert nb.cells[0].outputs[0].text == "42\n"
    error = nb.cells[1].outputs[0]
    assert error.ename == "ZeroDivisionError"
    assert len(error.traceback) == 1, "stored tracebacks are minimal: no library frames or paths"
    assert nb.cells[2].outputs[0].text.strip() == str(tmp_path), "runs in the notebook's folder"


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
