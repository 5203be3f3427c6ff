"""helpers.ladder: chapter 10's speedup ladder measures every rung, keeps only what helps and
writes its provenance."""

from __future__ import annotations

import itertools
import json
import time

import pytest
import torch

from helpers import ladder


def test_run_refuses_zero_steps():
    with pytest.raises(ValueError, match="at least 1"):
        ladder.run(torch.device("cpu"), steps=0)


def test_main_writes_every_rung_with_the_device_versions_and_date(tmp_path, capsys):
    out = tmp_path / "ladder.json"
    args = ["--device", "cpu", "--steps", "2", "--repeats", "2", "--no-compile", "--out", str(out)]
    assert ladder.main(args) == 0
    result = json.loads(out.read_text())
    assert result["device_type"] == "cpu" and result["torch"] == torch.__version__
    assert {"device", "date", "python", "batch", "steps", "repeats", "threads"} <= set(result)
    assert result["cuda"] is None and result["cudnn"] is None and result["driver"] is None
    rungs = {r["rung"]: r for r in result["rungs"]}
    assert [r["rung"] for r in result["rungs"]] == [name for name, _ in ladder.RUNGS]
    assert rungs["+ torch.compile"] == {"rung": "+ torch.compile", "skipped": "compile=False"}
    measured = [r for r in result["rungs"] if "skipped" not in r]
    assert measured[0]["speedup"] == 1.0 and measured[0]["kept"] is True
    for row in measured:
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        assert row["kept"] == (row["verdict"] == "kept")
        assert set(row["config"]) == {"data", "channels_last", "compile", "amp"}
    assert "wrote" in capsys.readouterr().out


def test_device_name_of_the_cpu_counts_its_cores():
    assert "core" in ladder.device_name(torch.device("cpu"))


def test_verdict_keeps_only_a_rung_at_least_5_percent_faster_beyond_the_noise():
    assert ladder.verdict([1.0], None) == "kept"
    assert ladder.verdict([0.94], [1.0]) == "kept"
    assert ladder.verdict([0.96], [1.0]) == "no faster"
    assert ladder.verdict([1.04], [1.0]) == "no faster"
    assert ladder.verdict([1.06], [1.0]) == "slower"
    # 10 % faster by the median, but the repeats spread by more than that: within the noise
    assert ladder.verdict([0.80, 0.90, 1.01], [0.95, 1.0, 1.08]) == "no faster"
    assert ladder.verdict([1.00, 1.10, 1.2], [0.9, 1.0, 1.08]) == "no faster"
    assert ladder.verdict([0.85, 0.90, 0.95], [0.99, 1.0, 1.05]) == "kept"
    # 1.7× faster by the median, one repeat overlapping (a hiccup): kept, as chapter 10's data
    # rung must be (a rule that needed every repeat faster called it "no faster")
    decoded = [47.9, 49.4, 47.9, 47.7, 98.0]
    assert ladder.verdict(decoded, [71.5, 89.5, 96.8, 98.7, 98.7]) == "kept"
    assert ladder.verdict([98.0, 47.9, 97.0, 96.5, 99.0], [97.1, 96.8, 98.7, 98.2, 99.1]) == (
        "no faster"
    )


def test_verdict_refuses_times_that_are_not_positive():
    with pytest.raises(ValueError, match="positive"):
        ladder.verdict([0.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        ladder.verdict([1.0], [-1.0])
    with pytest.raises(ValueError, match="at least one"):
        ladder.verdict([], None)


def test_run_drops_slower_rungs_data_rungs_included(monkeypatch):
    """Fake timings: channels_last slower, compile no faster, the device data rung slower."""
    ms = {
        "jpeg": 10.0,
        "memory": 5.0,
        "channels_last": 6.0,
        "compile": 4.9,
        "amp": 2.0,
        "device": 2.5,
    }

    def fake_measure(config, device, images, labels, steps, repeats, slower_than=None):
        if config["data"] == "device":
            key = "device"
        elif config["amp"]:
            key = "amp"
        elif config["compile"]:
            key = "compile"
        elif config["channels_last"]:
            key = "channels_last"
        else:
            key = config["data"]
        return [ms[key] / 1000] * repeats, 0.0

    monkeypatch.setattr(ladder, "measure", fake_measure)
    monkeypatch.setattr(ladder, "load_cifar2", lambda split: (None, None, None))
    rows = {r["rung"]: r for r in ladder.run(torch.device("cpu"), steps=1, repeats=1)}
    verdicts = [rows[name]["verdict"] for name, _ in ladder.RUNGS]
    assert verdicts == ["kept", "kept", "slower", "no faster", "kept", "slower"]
    # the dropped tricks are not in the stack of the rungs below them
    amp = rows["+ mixed precision (autocast)"]["config"]
    assert amp == {"data": "memory", "channels_last": False, "compile": False, "amp": True}
    assert rows["+ mixed precision (autocast)"]["speedup"] == pytest.approx(5.0)


def test_loader_batches_are_all_full_so_a_compiled_step_meets_one_shape():
    images = torch.zeros(100, 3, 32, 32, dtype=torch.uint8)
    labels = torch.zeros(100, dtype=torch.long)
    config = {"data": "memory"}
    batches = ladder._batches(config, torch.device("cpu"), images, labels)
    sizes = [len(y) for _, y in itertools.islice(batches, 3)]
    assert sizes == [ladder.BATCH] * 3  # 100 images: the last 36 of each epoch are dropped


def test_committed_results_are_listed_and_a_missing_folder_gives_none(tmp_path):
    (tmp_path / "ladder-cpu.json").write_text("{}")
    (tmp_path / "other.json").write_text("{}")
    assert ladder.committed_results(tmp_path) == [tmp_path / "ladder-cpu.json"]
    assert ladder.committed_results(tmp_path / "absent") == []


def test_provenance_names_the_gpu_stack_only_on_cuda():
    found = ladder.provenance(torch.device("cpu"))
    assert found["device_type"] == "cpu" and found["torch"] == torch.__version__
    assert found["cuda"] is None and found["driver"] is None


def test_every_committed_ladder_carries_its_provenance_and_verdicts_of_the_current_rule():
    """The committed results chapter 10 shows: device, versions, date, repeats, and verdicts
    that :func:`ladder.verdict` gives for their own step times (a file made with an older rule
    would show verdicts the chapter's text does not explain)."""
    committed = ladder.committed_results()
    assert committed, "helpers/results holds at least the CPU ladder"
    for path in committed:
        result = json.loads(path.read_text())
        assert set(result) >= {"device", "device_type", "torch", "date", "repeats", "steps"}
        best = None
        for row in result["rungs"]:
            if "skipped" in row:
                continue
            assert {"min_ms", "median_ms", "max_ms", "times_ms", "verdict", "config"} <= set(row)
            assert row["verdict"] == ladder.verdict([t / 1000 for t in row["times_ms"]], best)
            if row["kept"]:
                best = [t / 1000 for t in row["times_ms"]]


def test_in_turns_times_each_named_rung_alone_on_the_baseline(monkeypatch):
    images = torch.randint(0, 256, (256, 3, 32, 32), dtype=torch.uint8)
    labels = torch.randint(0, 2, (256,))
    monkeypatch.setattr(ladder, "load_cifar2", lambda split: (images, labels, ["a", "b"]))
    names = ["+ decoded once, kept in memory", "+ whole data set on the device"]
    seconds = ladder.in_turns(names, torch.device("cpu"), steps=1, rounds=2, threads=1)
    assert list(seconds) == names and all(s > 0 for s in seconds.values())


def test_a_rung_far_slower_than_the_best_so_far_is_timed_one_step_per_repeat(monkeypatch):
    calls = []
    monkeypatch.setattr(ladder, "_batches", lambda *args: itertools.repeat(None))
    monkeypatch.setattr(
        ladder, "_step_fn", lambda *args: lambda batch: (calls.append(1), time.sleep(0.002))
    )
    cpu = torch.device("cpu")
    times, _ = ladder.measure({}, cpu, None, None, steps=4, repeats=3, slower_than=0.0001)
    assert len(calls) == 3 + 3 * 1 and len(times) == 3  # warm-up, then 3 repeats of 1 step
    calls.clear()
    ladder.measure({}, cpu, None, None, steps=4, repeats=3, slower_than=1.0)
    assert len(calls) == 3 + 3 * 4  # not far slower: every step of every repeat
