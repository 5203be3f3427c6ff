"""PyTorch's `meta` device as a stand-in for a GPU on this CPU-only machine (the review's idea).

A tensor on `meta` has a shape, a dtype and a device but no values, and PyTorch refuses to mix it
with CPU tensors exactly as it refuses to mix CUDA or MPS tensors with CPU ones. A whole notebook
cannot run there: its first `.item()` (every loop logs a loss) stops it, before most of its code.
So these tests run the code paths of chapter 07 where the review found device mismatches, taken
from the chapter's twin as the learner reads them, with the model on `meta`, and require that the
first error is the one meta tensors must raise (reading a value), not a device mismatch: the trick
variants' training and scoring, and the script's `--resume` (its saved RNG states must stay on the
CPU). Each test was seen to fail with the fix taken out.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from helpers.models import small_cnn
from helpers.train import decay_groups

ROOT = Path(__file__).resolve().parents[1]
TWIN_07 = ROOT / "notebooks" / "cookbook" / "src" / "07_training_loop_recipes.py"
READ_A_VALUE = "cannot be called on meta tensors"  # Tensor.item() on meta


def functions(twin: Path, names: list[str]) -> str:
    """The source of the top-level functions ``names`` in a notebook's twin."""
    source = twin.read_text()
    found = {
        node.name: ast.get_source_segment(source, node)
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name in names
    }
    assert sorted(found) == sorted(names), f"{twin.name} defines {sorted(found)}"
    return "\n\n".join(found[name] for name in names)


def test_07_trick_variants_move_batches_and_test_images_to_the_model_s_device():
    meta = torch.device("meta")
    images = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    labels = torch.tensor([0, 1] * 4)

    def new_run(epochs: int = 1):  # the chapter's, on a tiny CPU loader and a model on meta
        model = small_cnn([0.5] * 3, [0.25] * 3, width=4).to(meta)
        optimizer = torch.optim.AdamW(decay_groups(model, 5e-4), lr=1e-3)
        scheduler = torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0)
        return model, optimizer, scheduler, DataLoader(TensorDataset(images, labels), batch_size=4)

    namespace = {"torch": torch, "F": F, "device": meta, "new_run": new_run}
    namespace |= {"test_images": images, "test_loader": None, "evaluate": lambda m, loader: 0.0}
    exec(functions(TWIN_07, ["mixup_step", "train_variant"]), namespace)
    for name in ["baseline", "label smoothing 0.1", "mixup 0.2"]:
        with pytest.raises(RuntimeError, match=READ_A_VALUE):  # trained and scored, then .item()
            namespace["train_variant"](name)


def test_07_script_resumes_onto_another_device(tmp_path, script_07):
    common = [sys.executable, str(script_07), "--total-epochs", "2", "--train-size", "256"]
    common += ["--out", str(tmp_path / "run")]
    first = subprocess.run(
        [*common, "--stop-after", "1", "--device", "cpu"], capture_output=True, text=True, cwd=ROOT
    )
    assert first.returncode == 0, first.stderr[-2000:]
    resumed = subprocess.run(
        [*common, "--resume", "--device", "meta"], capture_output=True, text=True, cwd=ROOT
    )
    assert "resumed from" in resumed.stdout, resumed.stderr[-2000:]  # loaded, RNG states set
    assert READ_A_VALUE in resumed.stderr, resumed.stderr[-2000:]  # then stopped at the loss
