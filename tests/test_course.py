"""helpers.authoring.course: executing notebooks in place and the index command."""

from __future__ import annotations

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from helpers.authoring import course


def write(path, *cells):
    """Write a notebook and its twin under ``path.parent`` holding ``cells``."""
    nb = nbformat.v4.new_notebook(cells=list(cells), metadata={"kernelspec": course.kernelspec()})
    nbformat.write(nb, path)
    course.write_twin(path)
    return path


def test_execute_builds_from_the_twin_and_stores_outputs(tmp_path):
    pitfall = nbformat.v4.new_code_cell(
        "from helpers.check import expect_error\n\nwith expect_error(ZeroDivisionError):\n    1 / 0"
    )
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
    assert nb.cells[1].outputs[0].text == "⛔ ZeroDivisionError: division by zero\n"
    assert nb.cells[2].outputs[0].text.strip() == str(tmp_path), "runs in the notebook's folder"


def test_execute_keeps_no_output_of_a_cell_tagged_remove_output(tmp_path):
    live = nbformat.v4.new_code_cell("print('a frame of a server that ends with the kernel')")
    live.metadata["tags"] = ["nbval-ignore-output", "remove-output"]
    path = write(tmp_path / "nb.ipynb", live, nbformat.v4.new_code_cell("print('kept')"))
    course.execute(path)
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].outputs == [] and nb.cells[0].execution_count == 1
    assert nb.cells[1].outputs[0].text == "kept\n"


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


def test_a_cell_tagged_raises_exception_is_refused(tmp_path):
    """Colab and some editors ignore the tag, so Run All would stop there: use expect_error."""
    pitfall = nbformat.v4.new_code_cell("1 / 0")
    pitfall.metadata["tags"] = ["raises-exception"]
    path = write(tmp_path / "nb.ipynb", pitfall)
    with pytest.raises(ValueError, match="expect_error"):
        course.build(path)


def test_the_authors_build_fails_on_a_timing_claim_that_misses(tmp_path, monkeypatch):
    from helpers.check import CLAIMS_LOG_ENV, STRICT_ENV

    monkeypatch.delenv(STRICT_ENV, raising=False)  # as on a learner's machine
    monkeypatch.delenv(CLAIMS_LOG_ENV, raising=False)  # not a claim of the course
    claim = "from helpers.check import check\n\ncheck(False, 'fast', measured='0.9×', timing=True)"
    path = write(tmp_path / "nb.ipynb", nbformat.v4.new_code_cell(claim))
    with pytest.raises(CellExecutionError, match="ClaimFailed"):
        course.execute(path)


def test_durations_are_recorded_from_a_test_run_and_rendered(tmp_path):
    import json

    last, target = tmp_path / "last.json", tmp_path / "durations.json"
    with pytest.raises(FileNotFoundError, match="make test"):
        course.record_durations(last, target)
    run = {
        "date": "2026-11-24",
        "machine": "Some CPU · 2 cores",
        "torch": "2.15.0",
        "notebooks": {"01_tensors.ipynb": 12.3, "05_data.ipynb": 97.0},
        "ok": {"01_tensors.ipynb": True, "05_data.ipynb": False},
        "sources": {"01_tensors.ipynb": "abc", "05_data.ipynb": "def"},
    }
    last.write_text(json.dumps(run))
    record = course.record_durations(last, target)
    assert list(record) == ["01_tensors.ipynb"], "a notebook that failed or ran in part is not kept"
    assert record["01_tensors.ipynb"]["source"] == "abc"
    assert course.read_durations(target) == record
    line = course.run_time_line(course.NOTEBOOKS / "01_tensors.ipynb", record)
    assert line == "**Run time:** about 10 s on a 2-core CPU · GPU optional."  # no machine
    missing = course.run_time_line(course.NOTEBOOKS / "05_data.ipynb", record)
    assert "not measured yet" in missing
    run["isa"] = "AVX2"  # recorded by the tests since the AVX2 runs: kept, named in the README
    last.write_text(json.dumps(run))
    assert course.record_durations(last, target)["01_tensors.ipynb"]["isa"] == "AVX2"
    before = course.record_provenance(course.read_durations(target))
    assert "2-core Some CPU (model not recorded, AVX2 code paths)" in before
    run["cpu_model"] = "family 25 model 17"  # one CPU name covers machines of different speeds
    last.write_text(json.dumps(run))
    after = course.record_provenance(course.record_durations(last, target))
    assert "2-core Some CPU (family 25 model 17, AVX2 code paths)" in after
    assert [course._about(s) for s in (2, 12.3, 64, 97)] == [
        "about 5 s",
        "about 10 s",
        "about 60 s",
        "about 100 s",
    ]
    assert course._cpu("Apple M2 · 1 core") == ("Apple M2", "1-core")


def test_a_duration_measured_on_another_version_of_the_twin_is_stale():
    record = course.read_durations()
    path = course.notebook_paths()[0]
    assert path not in course.unmeasured(record)
    changed = {**record, path.name: {**record[path.name], "source": "another twin"}}
    assert path in course.unmeasured(changed)
    assert course.source_hash(path) == course.source_hash(path), "a run-time line is left out"


def test_the_run_time_line_is_replaced_in_the_title_cell_only():
    twin = "# %% [markdown]\n# # 01 · T\n#\n# **Run time:** old\n\n# %%\n# **Run time:** kept\n"
    new = course._with_run_time(twin, "**Run time:** new")
    assert new == twin.replace("old", "new")
    with pytest.raises(ValueError, match="Run time"):
        course._with_run_time("# %% [markdown]\n# # 01 · T\n\n# %%\nx = 1\n", "**Run time:** new")
    # a line that went on over two lines is replaced whole, and the next paragraph is kept
    long = "# %% [markdown]\n# # T\n#\n# **Run time:** old, and\n# more\n# **Next:** x\n\n# %%\n"
    expected = "# %% [markdown]\n# # T\n#\n# **Run time:** new\n# **Next:** x\n\n# %%\n"
    assert course._with_run_time(long, "**Run time:** new") == expected
