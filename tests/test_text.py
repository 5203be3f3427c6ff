"""helpers.text: cleaning, tokens, vocabulary, padding, reading and the cached IMDB tensors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from helpers import data, text


def test_clean_and_tokenize():
    assert text.clean("A<br />B &amp; C") == "a b & c"
    assert text.tokenize("Don't miss it!! 10/10<br />Really?") == [
        "don't",
        "miss",
        "it",
        "!",
        "!",
        "10",
        "10",
        "really",
        "?",
    ]
    assert text.tokenize("") == []


def test_vocab_keeps_the_most_frequent_tokens_after_the_specials():
    docs = [["b", "a", "b"], ["c", "b", "a"], ["d"]]
    vocab = text.Vocab.build(docs, max_size=4)
    assert vocab.itos == ["<pad>", "<unk>", "b", "a"]
    assert vocab.encode(["a", "zzz", "b"]) == [3, 1, 2]
    assert vocab.decode([2, 3, 0, 0]) == ["b", "a"]
    assert len(vocab) == 4
    assert text.Vocab.build(docs, max_size=10, min_freq=2).itos == ["<pad>", "<unk>", "b", "a"]


def test_vocab_rejects_bad_input():
    with pytest.raises(ValueError, match="starts with"):
        text.Vocab(["a", "b"])
    with pytest.raises(ValueError, match="each token once"):
        text.Vocab(["<pad>", "<unk>", "a", "a"])
    with pytest.raises(ValueError, match="max_size"):
        text.Vocab.build([["a"]], max_size=2)


def test_pad_truncates_and_pads():
    out = text.pad([[5, 6, 7], [8], []], max_len=2)
    assert out.dtype == torch.int64
    assert out.tolist() == [[5, 6], [8, 0], [0, 0]]
    with pytest.raises(ValueError):
        text.pad([[1]], max_len=0)


def write_imdb(root: Path) -> None:
    reviews = {
        "train/pos/0_9.txt": "Great<br />film!",
        "train/neg/1_1.txt": "Awful film.",
        "train/neg/2_3.txt": "Dull.",
        "test/pos/3_8.txt": "Great fun",
        "test/neg/4_2.txt": "awful, awful",
    }
    for name, review in reviews.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(review, encoding="utf-8")


def test_read_imdb_labels_negative_then_positive(tmp_path):
    write_imdb(tmp_path)
    texts, labels = text.read_imdb(tmp_path, "train")
    assert texts == ["Awful film.", "Dull.", "Great<br />film!"]
    assert labels.tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="split"):
        text.read_imdb(tmp_path, "unsup")


def test_prepare_imdb_builds_once_then_reads_the_cache(tmp_path, monkeypatch):
    write_imdb(tmp_path / "aclImdb")
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    calls = []
    monkeypatch.setattr(text, "fetch", lambda name: calls.append(name) or tmp_path / "aclImdb")
    first = text.prepare_imdb(vocab_size=5, max_len=3)
    assert calls == ["imdb"]
    # "film" twice; ties among the rest go by first appearance (negative reviews are read first)
    assert first["itos"] == ["<pad>", "<unk>", "film", "awful", "dull"]
    assert first["train_x"].tolist() == [[3, 2, 0], [4, 0, 0], [1, 2, 1]]
    assert first["test_y"].tolist() == [0, 1] and first["test_lengths"].tolist() == [2, 2]
    second = text.prepare_imdb(vocab_size=5, max_len=3)
    assert calls == ["imdb"], "the second call must come from the cache"
    assert torch.equal(second["train_x"], first["train_x"])
