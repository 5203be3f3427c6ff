"""helpers.board: event files read back, and a TensorBoard server that always stops."""

from __future__ import annotations

import os

import pytest
import torch
from torch.utils.tensorboard import SummaryWriter

from helpers import board


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) counts as gone
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


@pytest.fixture
def logdir(tmp_path):
    with SummaryWriter(tmp_path / "a") as writer:
        for step in range(3):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_histogram("weights", torch.arange(10.0), 0)
    with SummaryWriter(tmp_path / "b") as writer:
        writer.add_scalar("loss", 5.0, 0)
        writer.add_hparams({"lr": 0.1, "opt": "sgd"}, {"hparam/acc": 0.5}, run_name=".")
    return tmp_path


def test_scalars_are_read_back(logdir):
    df = board.scalars(logdir)
    a = df[(df.run == "a") & (df.tag == "loss")]
    assert a.step.tolist() == [0, 1, 2]
    assert a.value.tolist() == pytest.approx([1.0, 0.5, 1 / 3])
    assert set(df.run) == {"a", "b"}


def test_tags_and_hparams_are_read_back(logdir):
    found = board.tags(logdir)
    assert found["a"]["histograms"] == ["weights"] and found["a"]["scalars"] == ["loss"]
    assert found["b"]["scalars"] == ["hparam/acc", "loss"]
    table = board.hparams(logdir)
    assert table.to_dict("records") == [{"run": "b", "lr": 0.1, "opt": "sgd"}]
    assert list(table.columns) == ["run", "lr", "opt"]


def test_empty_logdir_gives_empty_tables(tmp_path):
    assert board.scalars(tmp_path).empty and board.tags(tmp_path) == {}
    assert board.hparams(tmp_path).empty


def test_server_serves_the_runs_and_stops(logdir):
    with board.serve(logdir) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert sorted(board.get_json(f"{server.url}/data/runs")) == ["a", "b"]
        scalar_tags = board.get_json(f"{server.url}/data/plugin/scalars/tags")
        assert set(scalar_tags["a"]) == {"loss"}
        pid = server.process.pid
    assert server.process.poll() is not None and not alive(pid)


def test_server_stops_when_the_block_raises(logdir):
    with pytest.raises(ZeroDivisionError), board.serve(logdir) as server:
        raise ZeroDivisionError("a failing check inside the block")
    assert not alive(server.process.pid)


def test_server_that_cannot_start_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(board.sys, "executable", "/bin/false")
    with pytest.raises(RuntimeError, match="TensorBoard exited with"), board.serve(tmp_path):
        pass


def test_pr_curve_text_and_embedding_are_read_back(tmp_path):
    labels = torch.tensor([0, 0, 1, 1])
    probs = torch.tensor([0.1, 0.6, 0.4, 0.9])
    with SummaryWriter(tmp_path / "r") as writer:
        writer.add_pr_curve("pr", labels, probs, 0)
        writer.add_text("notes", "hello **world**")
        writer.add_embedding(torch.eye(3), metadata=["a", "b", "c"], tag="emb", global_step=0)
    curve = board.pr_curve(tmp_path / "r", "pr")
    first = curve.iloc[0]
    assert (first.tp, first.fp, first.tn, first.fn) == (2, 2, 0, 0)  # threshold 0: all positive
    middle = curve[curve.threshold >= 0.5].iloc[0]
    assert (middle.tp, middle.fp) == (1, 1)  # above 0.5: 0.6 (wrong) and 0.9 (right)
    assert board.tensor(tmp_path / "r", "notes/text_summary").tolist() == [b"hello **world**"]
    vectors, names = board.embedding(tmp_path / "r", "emb")
    assert vectors.to_numpy().tolist() == torch.eye(3).tolist() and names == ["a", "b", "c"]


def test_show_displays_the_page_lists_the_runs_and_stops(logdir, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    dashboard = board.show(logdir, height=300, timeout=60)
    try:
        assert dashboard.runs() == ["a", "b"]
        assert len(shown) == 1 and shown[0].src == dashboard.url and shown[0].height == 300
        assert alive(dashboard.process.pid)
    finally:
        dashboard.stop()
    dashboard.process.wait(timeout=10)
    assert not alive(dashboard.process.pid)


def test_each_picture_of_tensorboard_is_committed_and_unknown_names_are_refused():
    from helpers.authoring import pictures

    for tab in pictures.TABS:
        image = board.picture(tab)
        assert image.data[:8] == b"\x89PNG\r\n\x1a\n" and len(image.data) > 20_000, tab
    with pytest.raises(ValueError, match=r"no picture 'graphs'.*histograms"):
        board.picture("graphs")


def test_pictures_refuse_a_log_directory_without_the_lesson_s_runs(tmp_path):
    from helpers.authoring import pictures

    with pytest.raises(FileNotFoundError, match="run lesson 08 first"):
        pictures.take(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()
