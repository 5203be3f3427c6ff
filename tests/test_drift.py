"""helpers.authoring.drift: the report of what the newest releases change."""

from __future__ import annotations

import sys

from helpers.authoring import drift

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="notebooks.01_tensors.ipynb" name="Cell 3" file="notebooks/01_tensors.ipynb">
<failure message="Notebook cell execution failed">Cell outputs differ
 mismatch 'stdout'
assert reference_output == test_output failed:
  'torch.float32' == 'torch.float64'</failure></testcase>
<testcase classname="notebooks.01_tensors.ipynb" name="Cell 4" file="notebooks/01_tensors.ipynb"/>
<testcase classname="notebooks.cookbook.10_x" name="Cell 9" file="notebooks/cookbook/10_x.ipynb">
<failure message="failed">ClaimFailed: ✗ slicing is faster (size mismatch in a message)</failure>
</testcase>
<testcase classname="tests.test_env" name="test_versions" file="tests/test_env.py">
<error message="boom">ImportError: no module</error></testcase>
</testsuite></testsuites>
"""


def test_failures_are_sorted_into_outputs_checks_and_tests(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    tests, failed = drift.failures(junit)
    assert tests == 4
    kinds = [(f.kind, f.notebook, f.cell) for f in failed]
    assert kinds == [
        ("output", "01_tensors.ipynb", 3),
        ("error", "10_x.ipynb", 9),
        ("test", "", None),
    ]


def test_the_report_names_versions_cells_and_tests_and_the_exit_says_so(tmp_path, monkeypatch):
    junit, lock, out = tmp_path / "junit.xml", tmp_path / "lock.txt", tmp_path / "out"
    junit.write_text(JUNIT)
    lock.write_text("# the lock\ntorch==0.0.1\n")
    code = drift.main(
        ["--junit", str(junit), "--lock", str(lock), "--python", sys.executable, "--out", str(out)]
    )
    assert code == 1
    text = (out / "report.md").read_text()
    assert "| torch | 0.0.1 |" in text
    assert "### 01_tensors.ipynb, cell 3" in text and "'torch.float32' == 'torch.float64'" in text
    assert "### 10_x.ipynb, cell 9" in text and "tests/test_env.py::test_versions" in text
    assert (out / "report.json").is_file()


def test_no_log_is_exit_2(tmp_path):
    args = ["--junit", str(tmp_path / "none.xml"), "--lock", "x", "--python", "x"]
    assert drift.main([*args, "--out", str(tmp_path)]) == 2


def test_a_clean_run_exits_0(tmp_path):
    junit, lock = tmp_path / "junit.xml", tmp_path / "lock.txt"
    junit.write_text(
        '<testsuites><testsuite><testcase name="t" file="tests/t.py"/></testsuite></testsuites>'
    )
    lock.write_text("")
    args = ["--junit", str(junit), "--lock", str(lock), "--python", sys.executable]
    assert drift.main([*args, "--out", str(tmp_path / "out")]) == 0
