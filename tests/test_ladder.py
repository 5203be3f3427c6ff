"""helpers.ladder: chapter 10's speedup ladder measures every rung and writes its provenance."""

from __future__ import annotations

import json

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
    rungs = {r["rung"]: r for r in result["rungs"]}
    assert [r["rung"] for r in result["rungs"]] == [name for name, _ in ladder.RUNGS]
    assert rungs["+ torch.compile"] == {"rung": "+ torch.compile", "skipped": "compile=False"}
    measured = [r for r in result["rungs"] if "skipped" not in r]
    assert measured[0]["speedup"] == 1.0 and measured[0]["kept"] is True
    for row in measured:
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]
    assert "wrote" in capsys.readouterr().out


def test_device_name_of_the_cpu_counts_its_cores():
    assert "core" in ladder.device_name(torch.device("cpu"))
