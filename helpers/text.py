"""Text preparation for IMDB: cleaning, tokens, a vocabulary, encoding and cached tensors."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from helpers.checkpoint import atomic_save
from helpers.data import cache_path, fetch, load_cache

TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[!?]")
PAD, UNK = "<pad>", "<unk>"
TEXT_VERSION = 1  # part of cache names: bump when tokenisation changes


def clean(text: str) -> str:
    """Return lower-case text with IMDB's ``<br />`` tags and HTML entities turned into text.

    >>> clean("Great!<br /><br />A &quot;must&quot;")
    'great!  a "must"'
    """
    return html.unescape(text.replace("<br />", " ")).lower()


def tokenize(text: str) -> list[str]:
    """Return the words (with inner apostrophes), numbers, ``!`` and ``?`` of cleaned text.

    >>> tokenize("It's GREAT!!<br />10/10")
    ["it's", 'great', '!', '!', '10', '10']
    """
    return TOKEN_RE.findall(clean(text))


@dataclass(frozen=True)
class Vocab:
    """Token ↔ id mapping; id 0 is padding, id 1 stands for every unknown token."""

    itos: list[str]
    stoi: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.itos[:2] != [PAD, UNK]:
            raise ValueError(f"a vocabulary starts with {PAD!r}, {UNK!r}; got {self.itos[:2]}")
        if len(set(self.itos)) != len(self.itos):
            raise ValueError("a vocabulary lists each token once")
        object.__setattr__(self, "stoi", {tok: i for i, tok in enumerate(self.itos)})

    @classmethod
    def build(cls, docs: Iterable[list[str]], max_size: int, min_freq: int = 1) -> Vocab:
        """Return the ``max_size`` most frequent tokens (specials included), ties by first seen."""
        if max_size < 3:
            raise ValueError("max_size must leave room for at least one token besides specials")
        counts = Counter(tok for doc in docs for tok in doc)
        common = [t for t, n in counts.most_common(max_size - 2) if n >= min_freq]
        return cls([PAD, UNK, *common])

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> list[int]:
        """Return the ids of ``tokens``; unknown tokens become 1."""
        return [self.stoi.get(tok, 1) for tok in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Return the tokens of ``ids``, padding dropped."""
        return [self.itos[i] for i in ids if i != 0]


def pad(sequences: list[list[int]], max_len: int) -> torch.Tensor:
    """Return an ``int64`` tensor ``(len(sequences), max_len)``: truncated, right-padded with 0."""
    if max_len < 1:
        raise ValueError("max_len must be at least 1")
    out = torch.zeros(len(sequences), max_len, dtype=torch.int64)
    for row, ids in enumerate(sequences):
        ids = ids[:max_len]
        out[row, : len(ids)] = torch.tensor(ids, dtype=torch.int64)
    return out


def read_imdb(root: Path, split: str) -> tuple[list[str], torch.Tensor]:
    """Return the reviews of ``split`` ("train" or "test") and their labels (0 neg, 1 pos)."""
    if split not in ("train", "test"):
        raise ValueError(f"split is 'train' or 'test', got {split!r}")
    texts: list[str] = []
    labels: list[int] = []
    for label, name in enumerate(("neg", "pos")):
        for path in sorted((root / split / name).glob("*.txt")):
            texts.append(path.read_text(encoding="utf-8"))
            labels.append(label)
    return texts, torch.tensor(labels)


def prepare_imdb(vocab_size: int = 20_000, max_len: int = 400) -> dict[str, object]:
    """Return IMDB as padded id tensors, built once and cached under ``data/cache/``.

    Keys: ``train_x``, ``test_x`` (``int64``, ``(25000, max_len)``), ``train_y``, ``test_y``,
    ``train_lengths``, ``test_lengths`` (tokens before truncation) and ``itos`` (the vocabulary
    built from the training reviews).
    """
    path = cache_path(f"imdb-v{TEXT_VERSION}-vocab{vocab_size}-len{max_len}.pt")
    cached = load_cache(path)
    if cached is not None:
        return cached
    root = fetch("imdb")
    tokens, labels = {}, {}
    for split in ("train", "test"):
        texts, labels[split] = read_imdb(root, split)
        tokens[split] = [tokenize(t) for t in texts]
    vocab = Vocab.build(tokens["train"], max_size=vocab_size)
    data: dict[str, object] = {"itos": vocab.itos}
    for split in ("train", "test"):
        data[f"{split}_x"] = pad([vocab.encode(doc) for doc in tokens[split]], max_len)
        data[f"{split}_y"] = labels[split]
        data[f"{split}_lengths"] = torch.tensor([len(doc) for doc in tokens[split]])
    atomic_save(data, path)
    return data
