"""Image folders decoded once into tensors, so training does not decode JPEGs every epoch."""

from __future__ import annotations

import io
from pathlib import Path

import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision.transforms import v2

from helpers.checkpoint import atomic_save
from helpers.data import cache_path, fetch, load_cache


def decode_folder(folder: Path) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Return ``(images, labels, classes)`` of an ``ImageFolder``: ``uint8`` ``(N, C, H, W)``.

    All images must have the same size.
    """
    dataset = datasets.ImageFolder(folder, transform=v2.PILToTensor())
    if len(dataset) == 0:
        raise ValueError(f"{folder} holds no images")
    batches = list(DataLoader(dataset, batch_size=500))
    return torch.cat([x for x, _ in batches]), torch.cat([y for _, y in batches]), dataset.classes


def png_bytes(image: torch.Tensor) -> bytes:
    """A ``uint8`` image ``(C, H, W)`` with 1 or 3 channels (on any device) as the bytes of a PNG
    file, encoded with Pillow (torchvision 0.29 deprecates ``torchvision.io.encode_png``).

    >>> png_bytes(torch.zeros(3, 2, 2, dtype=torch.uint8))[:4]
    b'\\x89PNG'
    """
    if image.dtype != torch.uint8 or image.dim() != 3 or image.shape[0] not in (1, 3):
        raise ValueError(
            "png_bytes takes a uint8 image (C, H, W) with 1 or 3 channels, got "
            f"{image.dtype} {tuple(image.shape)}: convert with v2.ToDtype(torch.uint8, scale=True)"
        )
    pixels = image.detach().cpu().permute(1, 2, 0).numpy()
    buffer = io.BytesIO()
    Image.fromarray(pixels[:, :, 0] if image.shape[0] == 1 else pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def channel_stats(images: torch.Tensor, digits: int = 4) -> tuple[list[float], list[float]]:
    """Return the per-channel mean and standard deviation of ``uint8`` images ``(N, C, H, W)``
    on the [0, 1] scale, rounded to ``digits`` decimals (what a ``Normalize`` layer needs).

    >>> channel_stats(torch.full((2, 3, 4, 4), 255, dtype=torch.uint8))
    ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    """
    if images.dtype != torch.uint8 or images.ndim != 4:
        raise ValueError(f"expected uint8 images (N, C, H, W), got {images.dtype} {images.shape}")
    pixels = images.float().div_(255)
    mean = pixels.mean(dim=(0, 2, 3)).tolist()
    std = pixels.std(dim=(0, 2, 3)).tolist()
    return [round(m, digits) for m in mean], [round(s, digits) for s in std]


def load_cifar2(split: str) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Return CIFAR2's ``split`` ("train" or "test") as ``(uint8 images, labels, classes)``.

    Decoded once from the fetched JPEGs, then read from ``data/cache/``.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split is 'train' or 'test', got {split!r}")
    path = cache_path(f"cifar2-{split}-uint8.pt")
    cached = load_cache(path)
    if cached is None:
        images, labels, classes = decode_folder(fetch("cifar2") / split)
        cached = {"images": images, "labels": labels, "classes": classes}
        atomic_save(cached, path)
    return cached["images"], cached["labels"], cached["classes"]
