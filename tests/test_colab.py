"""helpers.authoring.colab: a notebook run alone in an empty folder, tags off, another Python."""

from __future__ import annotations

import sys

import nbformat

from helpers.authoring import colab


def notebook(path, *sources, tags=()):
    cells = [nbformat.v4.new_code_cell(s, metadata={"tags": list(tags)}) for s in sources]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_a_notebook_runs_alone_in_an_empty_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COOKBOOK_CLAIMS_LOG", raising=False)  # not a claim of the course
    source = notebook(
        tmp_path / "nb.ipynb",
        "import os; print(sorted(os.listdir()))",
        "from helpers.check import check\ncheck(False, 'faster', measured='0.9×', timing=True)",
        "print('✗ fill in `x` (it is still `...`)')",  # an exercise's starter, not a claim
    )
    outcomes = colab.run_all(sys.executable, [source], tmp_path / "out")
    assert [(o.name, o.error, o.missed) for o in outcomes] == [("nb.ipynb", "", 1)]
    ran = nbformat.read(tmp_path / "out" / "nb" / "nb.ipynb", as_version=4)
    assert ran.cells[0].outputs[0].text == "['nb.ipynb']\n", "nothing but the notebook is there"
    assert "1 timing claim(s) missed  ok" in capsys.readouterr().out


def test_cell_tags_are_ignored_so_an_error_stops_the_notebook(tmp_path):
    cells = ["raise ValueError('stop')", "print('never')"]
    source = notebook(tmp_path / "nb.ipynb", *cells, tags=["raises-exception"])
    [outcome] = colab.run_all(sys.executable, [source], tmp_path / "out")
    assert "ValueError: stop" in outcome.error


def test_main_needs_the_colab_python(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit):
        colab.main(["--python", str(tmp_path / "missing" / "python")])
    assert "make test-colab" in capsys.readouterr().err


def test_the_kernel_gets_the_colab_python_first_and_no_test_settings(monkeypatch, tmp_path):
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "activate").write_text("")
    monkeypatch.setenv("PATH", f"{venv}:/usr/bin")
    monkeypatch.setenv("COOKBOOK_STRICT_CLAIMS", "1")
    env = colab.kernel_env(tmp_path / "colab" / "bin" / "python")
    assert env["PATH"] == f"{tmp_path / 'colab' / 'bin'}:/usr/bin"
    assert "COOKBOOK_STRICT_CLAIMS" not in env and "JUPYTER_PATH" not in env
