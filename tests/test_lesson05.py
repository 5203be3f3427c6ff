"""Lesson 05's helpers: the DataLoader pipeline diagram and the exercise checkers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset
from torchvision.transforms import v2

from helpers.diagrams.pipeline import describe, draw_pipeline
from helpers.exercises import lesson05


class Images(Dataset):
    """uint8 images with an optional transform, like the lesson's CifarImages."""

    def __init__(self, n=10, transform=None):
        self.images = torch.randint(0, 256, (n, 3, 8, 8), dtype=torch.uint8)
        self.labels = torch.arange(n) % 2
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = self.images[i]
        return (self.transform(image) if self.transform else image), self.labels[i]


class Reviews(Dataset):
    """Token ids (never 0) of random lengths, some longer than the exercise's cap."""

    def __init__(self, n=40):
        gen = torch.Generator().manual_seed(0)
        lengths = torch.randint(10, 600, (n,), generator=gen).tolist()
        self.ids = [torch.randint(2, 100, (k,), generator=gen) for k in lengths]
        self.labels = torch.arange(n) % 2

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.labels[i]


def texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_diagram_shows_the_loader_s_real_pieces_and_shapes():
    crop = v2.Compose([v2.RandomCrop(8, padding=2), v2.RandomHorizontalFlip()])
    loader = DataLoader(
        Images(10, crop),
        batch_size=4,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(0),
    )
    fig = draw_pipeline(loader, next(iter(loader)))
    assert isinstance(fig, Figure)
    shown = texts(fig)
    for piece in ["RandomSampler", "Images", "RandomCrop", "RandomHorizontalFlip"]:
        assert piece in shown
    assert "uint8 (4, 3, 8, 8)" in shown and "int64 (4,)" in shown  # the batch
    assert "uint8 (3, 8, 8)" in shown  # one sample
    assert "2 batches" in shown and "2 samples left out" in shown  # 10 = 2 × 4 + 2 dropped
    assert "10 samples" in shown and "0 … 9" in shown  # steps 1 and 2


def test_the_diagram_numbers_the_lesson_s_five_steps_and_fits_the_page():
    loader = DataLoader(Images(6), batch_size=2)
    fig = draw_pipeline(loader, next(iter(loader)))
    shown = [t.get_text() for t in fig.axes[0].texts]
    numbers = [t for t in shown if t.isdigit()]
    assert numbers == ["1", "2", "3", "4", "5"]
    for step in ["len(dataset)", "sampler", "batch_size", "dataset[i]", "collate_fn"]:
        assert step in shown
    assert fig.get_figwidth() <= 9  # about the site's text column: no shrinking of 10-pt text
    assert min(t.get_fontsize() for t in fig.axes[0].texts) >= 10


def test_the_diagram_names_a_custom_collate_fn_and_a_missing_transform():
    def pad_collate(batch):
        return pad_sequence([ids for ids, _ in batch], batch_first=True), torch.stack(
            [y for _, y in batch]
        )

    loader = DataLoader(Reviews(8), batch_size=3, collate_fn=pad_collate)
    shown = texts(draw_pipeline(loader, next(iter(loader))))
    assert "pad_collate" in shown and "SequentialSampler" in shown and "none" in shown
    assert "3 batches" in shown and "left out" not in shown


def test_drawing_leaves_the_random_state_alone():
    loader = DataLoader(Images(6, v2.RandomHorizontalFlip()), batch_size=2)
    batch = next(iter(loader))
    before = torch.get_rng_state()
    draw_pipeline(loader, batch)
    assert torch.equal(before, torch.get_rng_state())


class Stream(IterableDataset):
    def __iter__(self):
        yield from range(3)


@pytest.mark.parametrize(
    ("loader", "batch", "message"),
    [
        ([torch.zeros(2)], torch.zeros(2), "needs a DataLoader"),
        (DataLoader(Stream(), batch_size=2), torch.zeros(2), "map-style"),
        (DataLoader(TensorDataset(torch.zeros(0, 2)), batch_size=2), torch.zeros(2), "empty"),
        (DataLoader(TensorDataset(torch.zeros(5, 2)), batch_size=2), None, "batch should"),
        (DataLoader(TensorDataset(torch.zeros(5, 2)), batch_size=2), "abc", "batch should"),
        (DataLoader(TensorDataset(torch.zeros(5, 2)), batch_size=2), torch.zeros(5, 2), "holds 5"),
    ],
)
def test_the_diagram_rejects_bad_input(loader, batch, message):
    with pytest.raises(ValueError, match=message):
        draw_pipeline(loader, batch)


def test_describe_names_dtypes_and_shapes():
    assert describe(torch.zeros(2, 3, dtype=torch.uint8)) == ["uint8 (2, 3)"]
    assert describe((torch.zeros(2), torch.tensor(1))) == ["float32 (2,)", "int64 ()"]
    assert describe({"x": torch.zeros(1)}) == ["x: float32 (1,)"]
    assert describe(3) == ["int"]


# ----------------------------------------------------------------------------- exercise 1


class RightWithIndex(Dataset):
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        image, label = self.dataset[i]
        return image, label, i


class StarterWithIndex(RightWithIndex):
    def __len__(self):
        n = ...
        return n


class NoIndex(RightWithIndex):
    def __getitem__(self, i):
        return self.dataset[i]


class WrongIndex(RightWithIndex):
    def __getitem__(self, i):
        image, label = self.dataset[i]
        return image, label, i + 1


class ShuffledIndex(RightWithIndex):
    """Returns the next sample with index i: the index no longer names the image."""

    def __getitem__(self, i):
        image, label = self.dataset[(i + 1) % len(self.dataset)]
        return image, label, i


def first_line(capsys) -> str:
    return capsys.readouterr().out.splitlines()[0]


def test_exercise_1_accepts_the_right_dataset(capsys):
    lesson05.exercise_1(RightWithIndex, Images(20))
    assert first_line(capsys).startswith("✓ ")


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (..., "fill in `WithIndex`"),
        (StarterWithIndex, "fill in `__len__`"),
        (NoIndex, "should be a tuple (image, label, 5)"),
        (WrongIndex, "the index of WithIndex(dataset)[5]"),
        (ShuffledIndex, "the image of WithIndex(dataset)[5]"),
        (lambda d: d, "should be a class built on Dataset"),
    ],
)
def test_exercise_1_rejects_wrong_datasets(capsys, answer, says):
    lesson05.exercise_1(answer, Images(20))
    line = first_line(capsys)
    assert line.startswith("✗ ") and says in line


# ----------------------------------------------------------------------------- exercise 2


def test_exercise_2_accepts_the_reference(capsys):
    lesson05.exercise_2(lesson05.reference_capped_collate, Reviews())
    assert first_line(capsys).startswith("✓ ")


def uncapped(batch):
    return pad_sequence([i for i, _ in batch], batch_first=True), torch.stack([y for _, y in batch])


def always_max_len(batch):
    ids = torch.zeros(len(batch), lesson05.MAX_LEN, dtype=torch.int64)
    for row, (i, _) in enumerate(batch):
        i = i[: lesson05.MAX_LEN]
        ids[row, : len(i)] = i
    return ids, torch.stack([y for _, y in batch])


def starter(batch):
    return ..., ...


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (..., "fill in `capped_collate`"),
        (starter, "fill in `ids` and `labels`"),
        (lambda batch: None, "returned None"),
        (uncapped, "the ids of a batch with long reviews"),
        (always_max_len, "the ids of a batch of short reviews"),
    ],
)
def test_exercise_2_rejects_wrong_collate_functions(capsys, answer, says):
    lesson05.exercise_2(answer, Reviews())
    line = first_line(capsys)
    assert line.startswith("✗ ") and says in line
