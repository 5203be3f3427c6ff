"""Chapter 07's training script (its %%writefile cell, as the notebook writes it): the rule that
saves best.pt, on a run where an earlier epoch wins. The notebook's own run improves every epoch,
so there best.pt is the last epoch's and its check cannot tell "keep the best" from "keep every".
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def test_best_pt_keeps_the_epoch_with_the_highest_validation_accuracy(
    tmp_path, monkeypatch, script_07
):
    spec = importlib.util.spec_from_file_location("train_cifar2", script_07)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    scores = iter([0.8, 0.7, 0.75])  # epoch 1 is the best
    monkeypatch.setattr(script, "accuracy", lambda *args: next(scores))
    out = tmp_path / "run"
    argv = ["train_cifar2.py", "--total-epochs", "3", "--train-size", "256", "--device", "cpu"]
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(out)])
    monkeypatch.chdir(ROOT)  # where the script finds data/
    script.main()
    best = torch.load(out / "best.pt", weights_only=True)
    last = torch.load(out / "last.pt", weights_only=True)
    assert (best["epoch"], last["epoch"], last["val_acc"]) == (1, 3, [0.8, 0.7, 0.75])
    assert any(not torch.equal(best["model"][k], last["model"][k]) for k in last["model"])
