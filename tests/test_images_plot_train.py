"""helpers.images, helpers.plot and helpers.train."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from PIL import Image

from helpers import data, images
from helpers.checkpoint import atomic_save
from helpers.plot import plot_history, show_images
from helpers.train import import_torchkeras


def make_folder(root, counts=(("0_cat", 2), ("1_dog", 3)), size=(8, 8)):
    rng = np.random.default_rng(0)
    for name, n in counts:
        (root / name).mkdir(parents=True)
        for i in range(n):
            pixels = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i}.png")
    return root


def test_decode_folder_returns_uint8_nchw(tmp_path):
    x, y, classes = images.decode_folder(make_folder(tmp_path / "train"))
    assert x.shape == (5, 3, 8, 8) and x.dtype == torch.uint8
    assert y.tolist() == [0, 0, 1, 1, 1] and classes == ["0_cat", "1_dog"]


def test_decode_folder_rejects_an_empty_folder(tmp_path):
    (tmp_path / "empty" / "a").mkdir(parents=True)
    with pytest.raises((ValueError, FileNotFoundError)):
        images.decode_folder(tmp_path / "empty")


def test_load_cifar2_caches_the_decoded_tensors(tmp_path, monkeypatch):
    make_folder(tmp_path / "cifar2" / "test")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(images, "fetch", lambda name: tmp_path / "cifar2")
    x, y, _ = images.load_cifar2("test")
    assert data.cache_path("cifar2-test-uint8.pt").is_file()
    monkeypatch.setattr(images, "decode_folder", lambda folder: pytest.fail("decoded again"))
    x2, y2, classes = images.load_cifar2("test")
    assert torch.equal(x, x2) and torch.equal(y, y2) and classes == ["0_cat", "1_dog"]
    with pytest.raises(ValueError, match="split"):
        images.load_cifar2("val")


def test_cache_files_are_written_atomically_and_rebuilt_when_unreadable(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    path = data.cache_path("thing.pt")
    assert data.load_cache(path) is None
    atomic_save({"a": torch.ones(2)}, path)
    assert torch.equal(data.load_cache(path)["a"], torch.ones(2))
    assert [p.name for p in path.parent.iterdir()] == ["thing.pt"]  # no temporary files left
    path.write_bytes(b"truncated")
    assert data.load_cache(path) is None and not path.exists()
    with pytest.raises(ValueError):
        data.cache_path("../escape.pt")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_history_draws_one_panel_per_metric():
    history = {
        "epoch": [1, 2],
        "train_loss": [1.0, 0.5],
        "val_loss": [1.1, 0.7],
        "train_acc": [0.6, 0.8],
        "val_acc": [0.55, 0.75],
        "lr": [0.1, 0.1],
    }
    fig = plot_history(history, title="demo")
    assert isinstance(fig, Figure)
    assert [ax.get_title() for ax in fig.axes] == ["acc", "loss"]
    assert len(fig.axes[0].lines) == 2
    with pytest.raises(ValueError, match="train_"):
        plot_history({"epoch": [1]})


def test_show_images_accepts_uint8_and_floats_and_rejects_bad_shapes():
    fig = show_images(
        torch.zeros(5, 3, 4, 4, dtype=torch.uint8), [0, 1, 0, 1, 1], ["a", "b"], ncols=3
    )
    assert len(fig.axes) == 6 and fig.axes[1].get_title() == "b"
    assert len(show_images(torch.rand(2, 1, 4, 4)).axes) == 2
    with pytest.raises(ValueError, match="expected images"):
        show_images(torch.zeros(3, 4, 4))


def test_import_torchkeras_hides_only_the_known_noise(capsys, recwarn):
    torchkeras = import_torchkeras()
    assert hasattr(torchkeras, "KerasModel")
    assert "tabm" not in capsys.readouterr().out


def test_epoch_log_prints_one_line_per_epoch_and_no_progress_bars(tmp_path, capsys):
    import torchmetrics
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from helpers.train import EpochLog

    torchkeras = import_torchkeras()
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    loader = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
    model = torchkeras.KerasModel(
        nn.Linear(3, 2),
        nn.CrossEntropyLoss(),
        metrics_dict={"acc": torchmetrics.Accuracy(task="multiclass", num_classes=2)},
    )
    history = model.fit(
        loader,
        val_data=loader,
        epochs=2,
        plot=False,
        monitor="val_acc",
        mode="max",
        ckpt_path=str(tmp_path / "ckpt.pt"),
        callbacks=[EpochLog()],
    )
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 2 and "val_acc" in lines[0] and lines[1].startswith("epoch 2 ")
    assert "it/s" not in out, "per-step progress bars were printed"
    assert list(history["epoch"]) == [1, 2]
    assert "EpochRunner" not in model.__dict__


def _toy_keras_model(torchkeras, lr: float = 0.1):
    import torchmetrics
    from torch import nn

    torch.manual_seed(0)
    net = nn.Linear(3, 2)
    return torchkeras.KerasModel(
        net,
        nn.CrossEntropyLoss(),
        optimizer=torch.optim.SGD(net.parameters(), lr=lr),
        metrics_dict={"acc": torchmetrics.Accuracy(task="multiclass", num_classes=2)},
    )


def test_fit_prints_only_the_epoch_lines(tmp_path, capsys):
    from torch.utils.data import DataLoader, TensorDataset

    from helpers.train import fit

    torchkeras = import_torchkeras()
    x = torch.randn(64, 3)
    loader = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
    history = fit(
        _toy_keras_model(torchkeras),
        loader,
        loader,
        epochs=3,
        monitor="val_acc",
        mode="max",
        ckpt_path=str(tmp_path / "ckpt.pt"),
    )
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert [line.split()[:2] for line in lines] == [["epoch", "1"], ["epoch", "2"], ["epoch", "3"]]
    assert "\x1b[" not in captured.out + captured.err, "no terminal colour codes"
    assert "is used" not in captured.out and "=====" not in captured.out
    assert list(history["epoch"]) == [1, 2, 3]


def test_fit_says_when_it_stopped_early(tmp_path, capsys):
    from torch.utils.data import DataLoader, TensorDataset

    from helpers.train import fit

    torchkeras = import_torchkeras()
    x = torch.randn(64, 3)
    loader = DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
    # Learning rate 0: the monitored metric never improves after epoch 1.
    fit(
        _toy_keras_model(torchkeras, lr=0.0),
        loader,
        loader,
        epochs=5,
        patience=1,
        monitor="val_loss",
        mode="min",
        ckpt_path=str(tmp_path / "ckpt.pt"),
    )
    out = capsys.readouterr().out
    assert "stopped early after epoch 2: val_loss did not improve in 1 epochs" in out


def test_channel_stats_are_rounded_per_channel_statistics():
    from helpers.images import channel_stats

    images = torch.randint(0, 256, (10, 3, 8, 8), dtype=torch.uint8)
    mean, std = channel_stats(images)
    exact = (images.float() / 255).mean(dim=(0, 2, 3))
    assert torch.allclose(torch.tensor(mean), exact, atol=5e-5)
    assert all(len(repr(m).split(".")[1]) <= 4 for m in mean + std)
    with pytest.raises(ValueError, match="uint8"):
        channel_stats(images.float())


def test_show_layout_labels_each_element_with_its_storage_index():
    import matplotlib

    matplotlib.use("Agg")
    from helpers.plot import show_layout

    base = torch.arange(12.0).reshape(3, 4)
    fig = show_layout({"x": base, "x.t()": base.t(), "x[:, 1:3]": base[:, 1:3]})
    ax = fig.axes[2]
    labels = [t.get_text() for t in ax.texts]
    grid = labels[12:]  # after the 12 storage cells: the view's elements, row by row
    assert grid == ["1", "2", "5", "6", "9", "10"]
    assert "stride (4, 1) offset 1" in ax.get_title()
    with pytest.raises(ValueError, match="2-D"):
        show_layout({"v": torch.zeros(3)})
    with pytest.raises(ValueError, match="at least one"):
        show_layout({})


def test_decay_groups_leave_biases_and_norms_undecayed():
    from torch import nn

    from helpers.train import decay_groups

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4, 2))
    model[0].bias.requires_grad_(False)  # frozen parameters are left out
    decay, no_decay = decay_groups(model, 5e-4)
    assert decay["weight_decay"] == 5e-4 and no_decay["weight_decay"] == 0.0
    assert {id(p) for p in decay["params"]} == {id(model[0].weight), id(model[3].weight)}
    assert {id(p) for p in no_decay["params"]} == {
        id(model[1].weight),
        id(model[1].bias),
        id(model[3].bias),
    }
    torch.optim.AdamW(decay_groups(model, 0.1), lr=1e-3)  # the optimizer accepts them
    with pytest.raises(ValueError, match="weight_decay"):
        decay_groups(model, -1)


def test_evaluate_returns_loss_and_accuracy_in_eval_mode():
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from helpers.train import evaluate

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.5))
    x, y = torch.randn(10, 3), torch.tensor([0, 1] * 5)
    loss, acc = evaluate(model.train(), DataLoader(TensorDataset(x, y), batch_size=4))
    assert not model.training
    with torch.no_grad():
        logits = model(x)
    assert loss == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)
    assert acc == pytest.approx((logits.argmax(1) == y).float().mean().item())
    with pytest.raises(ValueError, match="at least one sample"):
        evaluate(model, [])


def test_convolution_kernel_names_the_kernel_a_step_runs():
    from helpers.bench import convolution_kernel

    conv = torch.nn.Conv2d(3, 4, 3)
    assert convolution_kernel(lambda: conv(torch.zeros(2, 3, 8, 8))) in {
        "aten::mkldnn_convolution",
        "aten::thnn_conv2d",
    }
    assert convolution_kernel(lambda: torch.zeros(3) + 1) == "none"


def test_png_bytes_round_trips_through_pillow():
    import io

    gen = torch.Generator().manual_seed(0)
    image = torch.randint(0, 256, (3, 5, 7), dtype=torch.uint8, generator=gen)
    body = images.png_bytes(image)
    assert body.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(body)) as decoded:
        assert decoded.size == (7, 5) and decoded.mode == "RGB"
        assert torch.equal(torch.from_numpy(np.array(decoded)).permute(2, 0, 1), image)
    grey = torch.full((1, 2, 3), 7, dtype=torch.uint8)
    with Image.open(io.BytesIO(images.png_bytes(grey))) as decoded:
        assert decoded.mode == "L" and np.array(decoded).tolist() == [[7, 7, 7], [7, 7, 7]]
    for bad in (image.float(), image[0], torch.zeros(2, 4, 4, dtype=torch.uint8)):
        with pytest.raises(ValueError, match="uint8 image"):
            images.png_bytes(bad)
