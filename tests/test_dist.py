"""helpers.dist: torchrun from Python, with every rank's output, failures and time limits; and the
from-scratch sync BN of chapter 09, run exactly as the notebook writes it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import torch

from helpers import dist
from helpers.authoring import course
from helpers.processes import leftovers

HELLO = """
import datetime, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
total = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(total)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {total.item():g}", sys.argv[1:])
dist.destroy_process_group()
"""

FAIL = """
import datetime
import torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
if dist.get_rank() == 1:
    raise KeyError("boom")
dist.all_reduce(torch.ones(1))  # rank 0 waits here
"""

ABORT = """
import os, sys
import torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 1:  # what a C++ std::terminate prints before it aborts the process
    print("terminate called without an active exception", file=sys.stderr, flush=True)
    os.abort()
dist.barrier()  # rank 0 waits here until torchrun stops it
"""

HANG = """
import time
print("started", flush=True)
time.sleep(600)
"""


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_two_rank_job_returns_every_rank_s_output(tmp_path, capsys, monkeypatch):
    """Every rank's lines, read by the course's "[rankN] " prefix: the template set through the
    environment is applied (torch 2.13 and 2.15), so with only that form accepted (not
    torchrun's own "[rankN]:"), every line still finds its rank."""
    monkeypatch.setattr(dist, "RANK_LINE", re.compile(r"^\[rank(\d+)\] (?:\[rank\d+\]: ?)?(.*)$"))
    job = dist.torchrun(script(tmp_path, "hello.py", HELLO), "--flag", 3, nproc=2, timeout=120)
    assert job.returncode == 0
    assert job.output == {
        0: ["rank 0 of 2: 3 ['--flag', '3']"],
        1: ["rank 1 of 2: 3 ['--flag', '3']"],
    }
    printed = capsys.readouterr().out.splitlines()
    assert sorted(printed) == ["[rank 0] " + job.output[0][0], "[rank 1] " + job.output[1][0]]


def test_a_failing_rank_ends_the_job_quickly_and_is_named(tmp_path, capsys):
    path = script(tmp_path, "fail.py", FAIL)
    start = time.monotonic()
    expected = r"rank 1 failed \(exit code 1\): KeyError: 'boom'"
    with pytest.raises(dist.RankFailed, match=expected) as e:
        dist.torchrun(path, nproc=2, timeout=120, echo=False)
    assert time.monotonic() - start < 45  # far below the script's 60 s process-group timeout
    assert e.value.rank == 1 and e.value.job.returncode != 0
    assert capsys.readouterr().out == ""  # echo=False
    assert leftovers(path) == []


def test_an_aborted_rank_is_named_with_its_exit_code_and_last_words(tmp_path):
    path = script(tmp_path, "abort.py", ABORT)
    expected = r"rank 1 failed \(exit code -6\): terminate called without an active exception"
    with pytest.raises(dist.RankFailed, match=expected):
        dist.torchrun(path, nproc=2, timeout=120, echo=False)
    assert leftovers(path) == []


def test_a_job_past_its_time_limit_is_killed(tmp_path):
    path = script(tmp_path, "hang.py", HANG)
    start = time.monotonic()
    with pytest.raises(dist.RankFailed, match="ran past 10 s") as e:
        dist.torchrun(path, nproc=2, timeout=10, echo=False)
    assert time.monotonic() - start < 30
    assert e.value.rank is None and e.value.job.output[0] == ["started"]
    assert leftovers(path) == []


def test_bad_arguments_are_refused_before_anything_starts(tmp_path):
    with pytest.raises(FileNotFoundError, match="write it first"):
        dist.torchrun(tmp_path / "missing.py")
    with pytest.raises(ValueError, match="at least 1"):
        dist.torchrun(script(tmp_path, "x.py", ""), nproc=0)


def test_the_command_line_is_torchrun_standalone():
    command = dist.command_line("train.py", "--epochs", 2, nproc=4)
    assert command[1:3] == ["-m", "torch.distributed.run"]
    assert "--standalone" in command and "--nproc-per-node=4" in command
    assert command[-3:] == ["train.py", "--epochs", "2"]


def test_chapter_09_sync_bn_from_scratch_equals_batch_norm_on_the_global_batch(tmp_path):
    """Runs the notebook's own sync BN script on 2 ranks: its outputs, running statistics and
    gradients match BatchNorm2d on the whole batch; plain per-rank BatchNorm does not."""
    notebook = course.COOKBOOK / "09_ddp_syncbn_big_models_recipes.ipynb"
    files = course.written_files(course.read(notebook))
    path = script(tmp_path, "sync_bn.py", files["runs/09_ddp_big_models/sync_bn.py"])
    dist.torchrun(path, tmp_path / "report.json", nproc=2, timeout=120, echo=False)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["world"] == 2
    assert max(report["from scratch"].values()) < 1e-5
    assert report["plain BN per rank"]["grad_input"] > 1e-2
    assert report["plain BN per rank"]["output"] > 1e-2


def test_chapter_09_sync_bn_check_fails_without_the_backward_all_reduce(tmp_path):
    """The sceptic's run: with --break-backward the outputs still match but the input gradients
    do not, so the notebook's check on every quantity would catch the bug."""
    notebook = course.COOKBOOK / "09_ddp_syncbn_big_models_recipes.ipynb"
    files = course.written_files(course.read(notebook))
    path = script(tmp_path, "sync_bn.py", files["runs/09_ddp_big_models/sync_bn.py"])
    report_path = tmp_path / "report.json"
    dist.torchrun(path, report_path, "--break-backward", nproc=2, timeout=120, echo=False)
    broken = json.loads(report_path.read_text())["from scratch"]
    assert broken["output"] < 1e-5 and broken["running_var"] < 1e-5
    assert broken["grad_input"] > 1e-2


def test_the_prefix_goes_through_the_environment_not_an_option_older_torchruns_refuse():
    """torch 2.13's torchrun has no --log-line-prefix-template option (it exits 2 on it); every
    torchrun since 2.2 reads the template from TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE."""
    from torch.distributed import run

    assert not any("prefix" in part for part in dist.command_line("train.py", nproc=2))
    assert dist.PREFIX_ENV in Path(run.__file__).read_text()


def test_lines_with_torchrun_s_own_prefix_are_read_as_well():
    job = dist.Job([], returncode=0, seconds=0.0)
    for line in ("[default1]:hello", "[default0]:[rank0]: KeyError: 'x'", "[rank0] done", "agent"):
        dist._route(line, job, echo=False)
    assert job.output == {1: ["hello"], 0: ["KeyError: 'x'", "done"]}
    assert job.agent == ["agent"]


def test_a_command_line_torchrun_refuses_is_reported_as_a_launcher_error(tmp_path, monkeypatch):
    # torchrun's own argument check fails before any rank starts, as 2.13's did for the prefix
    # option it lacks: here an option that wants a number gets a word.
    command_line = dist.command_line
    monkeypatch.setattr(
        dist, "command_line", lambda *a, **k: [*command_line(*a, **k)[:3], "--max-restarts=x"]
    )
    path = script(tmp_path, "hello.py", HELLO)
    expected = r"torchrun refused to start \(exit code 2\): .*invalid int value"
    with pytest.raises(dist.RankFailed, match=expected) as e:
        dist.torchrun(path, nproc=2, timeout=60, echo=False)
    assert e.value.rank is None and e.value.job.output == {}


def test_argparse_s_error_line_is_recognised_under_each_program_name():
    for program in ("run.py", "torchrun", "python3.14 -m torch.distributed.run"):
        line = f"{program}: error: unrecognized arguments: --x"
        assert dist._last_error(["usage: ...", line], dist.LAUNCHER_ERROR) == line
    assert dist._last_error(["[rank0] error: not torchrun's"], dist.LAUNCHER_ERROR) is None


def test_a_torchrun_that_ends_before_any_rank_is_named_with_its_error(tmp_path, monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA: 'gpu' ranks per node then cannot be counted")
    command_line = dist.command_line
    monkeypatch.setattr(  # torchrun counts the GPUs for its ranks before starting any
        dist,
        "command_line",
        lambda *a, **k: [c.replace("=2", "=gpu") for c in command_line(*a, **k)],
    )
    path = script(tmp_path, "hello.py", HELLO)
    expected = r"torchrun ended before any rank printed a line \(exit code 1\): ValueError: Cuda"
    with pytest.raises(dist.RankFailed, match=expected) as e:
        dist.torchrun(path, nproc=2, timeout=60, echo=False)
    assert e.value.rank is None and e.value.job.output == {}
