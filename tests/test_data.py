"""helpers.data: fetching from a mirror or a download, and every fault it must survive."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import pickle
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers import data

TOY_FILES = {"toy/a/1.txt": b"one", "toy/a/2.txt": b"two", "toy/b/3.txt": b"three"}
TOY_COUNTS = {"a": 2, "b": 1}


def make_tar(path: Path, files: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    """Write a .tar.gz holding ``files`` (name -> bytes) and symlinks (name -> target)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return path


def digest(path: Path, alg: str = "sha256") -> str:
    return hashlib.new(alg, path.read_bytes()).hexdigest()


def leftovers(root: Path) -> list[str]:
    """Names under root that a failed fetch must not leave (partial folders, the target)."""
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".partial-", "toy")))


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    folder = tmp_path / "mirror"
    folder.mkdir()
    make_tar(folder / "toy.tar.gz", TOY_FILES)
    return folder


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch, mirror: Path) -> data.DataSpec:
    """Register a small data set 'toy' whose mirror archive is the fixture's."""
    archive = mirror / "toy.tar.gz"
    spec = data.DataSpec(
        name="toy",
        folder="toy",
        title="toy data",
        mirror_file="toy.tar.gz",
        sha256=digest(archive),
        url="http://127.0.0.1:9/toy.tar.gz",
        official_sha256=digest(archive),
        counts=TOY_COUNTS,
        convert=lambda archive, out: data.safe_extract(archive, out),
    )
    monkeypatch.setitem(data.DATASETS, "toy", spec)
    monkeypatch.delenv(data.MIRROR_ENV, raising=False)
    return spec


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_fetch_from_mirror_extracts_and_marks_complete(toy, mirror, root):
    folder = data.fetch("toy", root=root, mirror=mirror)
    assert folder == root / "toy"
    assert (folder / "a" / "2.txt").read_bytes() == b"two"
    assert (folder / data.MARKER).is_file()
    assert leftovers(root) == ["toy"]


def test_mirror_is_read_from_the_environment(toy, mirror, root, monkeypatch):
    monkeypatch.setenv(data.MIRROR_ENV, str(mirror))
    assert (data.fetch("toy", root=root) / "b" / "3.txt").read_bytes() == b"three"


def test_second_fetch_does_no_work(toy, mirror, root):
    data.fetch("toy", root=root, mirror=mirror)
    (mirror / "toy.tar.gz").unlink()  # any attempt to re-read the archive would now fail
    start = time.perf_counter()
    assert data.fetch("toy", root=root, mirror=mirror) == root / "toy"
    assert time.perf_counter() - start < 0.5


def test_checksum_mismatch_names_file_and_hashes_then_retry_works(toy, mirror, root):
    archive = mirror / "toy.tar.gz"
    good = archive.read_bytes()
    make_tar(archive, {**TOY_FILES, "toy/b/4.txt": b"intruder"})
    with pytest.raises(data.ChecksumError) as err:
        data.fetch("toy", root=root, mirror=mirror)
    message = str(err.value)
    assert str(archive) in message and toy.sha256 in message and digest(archive) in message
    assert leftovers(root) == []

    archive.write_bytes(good)  # the archive is fixed: the same call now succeeds
    assert (data.fetch("toy", root=root, mirror=mirror) / "a" / "1.txt").is_file()


def test_truncated_archive_is_not_taken_as_complete(toy, mirror, root, monkeypatch):
    archive = mirror / "toy.tar.gz"
    archive.write_bytes(archive.read_bytes()[:-40])
    with pytest.raises(data.ChecksumError):  # the sha256 catches it first
        data.fetch("toy", root=root, mirror=mirror)
    # Even with a hash that matches the truncated file, extraction refuses to finish.
    monkeypatch.setitem(data.DATASETS, "toy", replace(toy, sha256=digest(archive)))
    with pytest.raises(data.IncompleteDataError, match="truncated or corrupt"):
        data.fetch("toy", root=root, mirror=mirror)
    assert leftovers(root) == []


def test_archive_missing_files_is_incomplete(toy, mirror, root, monkeypatch):
    archive = make_tar(mirror / "toy.tar.gz", {"toy/a/1.txt": b"one", "toy/b/3.txt": b"3"})
    monkeypatch.setitem(data.DATASETS, "toy", replace(toy, sha256=digest(archive)))
    with pytest.raises(data.IncompleteDataError, match="a: 1 files, expected 2"):
        data.fetch("toy", root=root, mirror=mirror)
    assert leftovers(root) == []


@pytest.mark.parametrize(
    ("files", "links", "why"),
    [
        ({"/tmp/cookbook-evil.txt": b"x"}, {}, "absolute path"),
        ({"toy/../../cookbook-evil.txt": b"x"}, {}, "'..' component"),
        ({}, {"toy/a/evil": "/etc/passwd"}, "link"),
    ],
)
def test_unsafe_members_are_refused(toy, mirror, root, monkeypatch, files, links, why):
    archive = make_tar(mirror / "toy.tar.gz", {**TOY_FILES, **files}, links)
    monkeypatch.setitem(data.DATASETS, "toy", replace(toy, sha256=digest(archive)))
    with pytest.raises(data.UnsafeArchiveError, match=why):
        data.fetch("toy", root=root, mirror=mirror)
    assert leftovers(root) == []
    assert not (root.parent / "cookbook-evil.txt").exists()
    assert not Path("/tmp/cookbook-evil.txt").exists()


def test_no_network_and_no_mirror_says_how_to_use_a_mirror(toy, root):
    with pytest.raises(data.DataUnavailableError) as err:
        data.fetch("toy", root=root)  # the spec's URL is a closed port on this machine
    message = str(err.value)
    assert "could not download toy" in message
    assert data.MIRROR_ENV in message and "toy.tar.gz" in message
    assert leftovers(root) == []


def test_mirror_without_the_archive_is_a_clear_error(toy, mirror, root):
    (mirror / "toy.tar.gz").unlink()
    with pytest.raises(data.DataUnavailableError, match=r"has no toy\.tar\.gz"):
        data.fetch("toy", root=root, mirror=mirror)


def test_mirror_that_is_not_a_folder_is_a_clear_error(toy, tmp_path, root):
    with pytest.raises(data.DataUnavailableError, match="is not a folder"):
        data.fetch("toy", root=root, mirror=tmp_path / "nowhere")


def test_interrupted_fetch_is_rebuilt(toy, mirror, root):
    (root / ".partial-toy-abc" / "toy").mkdir(parents=True)  # a killed extraction
    (root / "toy" / "a").mkdir(parents=True)  # a target without its marker
    (root / "toy" / "a" / "1.txt").write_text("stale")
    folder = data.fetch("toy", root=root, mirror=mirror)
    assert (folder / "a" / "1.txt").read_bytes() == b"one"
    assert leftovers(root) == ["toy"]


def test_damaged_folder_is_fetched_again(toy, mirror, root, capsys):
    folder = data.fetch("toy", root=root, mirror=mirror)
    (folder / "a" / "2.txt").unlink()  # a file deleted by hand: the marker is still there
    assert not data.is_complete(toy, folder)
    assert data.missing_files(toy, folder) == {"a": (1, 2)}
    assert data.fetch("toy", root=root, mirror=mirror) == folder
    assert (folder / "a" / "2.txt").read_bytes() == b"two"
    assert "is damaged (a: 1 files, expected 2); fetching it again" in capsys.readouterr().err
    assert leftovers(root) == ["toy"]


def _fetch_and_read(root: Path, mirror: Path, start: float, results) -> None:
    """Child process: fetch 'toy' when the clock reaches ``start``, then read it for 1 s."""
    time.sleep(max(0.0, start - time.time()))
    try:
        folder = data.fetch("toy", root=root, mirror=mirror)
        until = time.time() + 1.0
        while time.time() < until:
            contents = {p.name: p.read_bytes() for p in sorted(folder.rglob("*.txt"))}
            assert contents == {"1.txt": b"one", "2.txt": b"two", "3.txt": b"three"}, contents
        results.put("ok")
    except BaseException as err:
        results.put(f"{type(err).__name__}: {err}")


def test_concurrent_fetches_build_once_and_never_pull_the_folder_away(
    toy, mirror, root, monkeypatch
):
    """Four processes fetch one data set at the same moment into an empty data folder."""
    import multiprocessing

    slow_extract = data.safe_extract

    def slow(*args, **kwargs):  # widen the window in which the processes overlap
        time.sleep(0.3)
        return slow_extract(*args, **kwargs)

    monkeypatch.setattr(data, "safe_extract", slow)
    context = multiprocessing.get_context("fork")  # children inherit the 'toy' registration
    results = context.Queue()
    start = time.time() + 0.5
    procs = [
        context.Process(target=_fetch_and_read, args=(root, mirror, start, results))
        for _ in range(4)
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=10)
    assert outcomes == ["ok"] * 4
    assert leftovers(root) == ["toy"]


def test_unknown_name_lists_the_data_sets():
    with pytest.raises(ValueError, match="cifar2, imdb"):
        data.fetch("mnist")


def test_command_line_prints_paths_and_errors_without_traceback(toy, mirror, capsys, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(mirror.parent / "cli-data"))
    monkeypatch.setenv(data.MIRROR_ENV, str(mirror))
    assert data._main(["fetch", "toy"]) == 0
    assert "toy: " in capsys.readouterr().out
    assert data._main(["fetch", "mnist"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unknown data set 'mnist'") and "Traceback" not in err


# --- the official-source path, served from this machine ---------------------------------------


@pytest.fixture
def server(mirror: Path) -> Iterator[str]:
    """Serve the mirror folder over HTTP on a free loopback port; yield its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(mirror), **kwargs)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    thread.join(timeout=5)


def test_download_from_official_source(toy, server, root, monkeypatch):
    monkeypatch.setitem(data.DATASETS, "toy", replace(toy, url=f"{server}/toy.tar.gz"))
    folder = data.fetch("toy", root=root)
    assert (folder / "b" / "3.txt").read_bytes() == b"three"
    assert (root / ".downloads" / "toy.tar.gz").is_file()


def test_download_with_wrong_sha256_keeps_nothing(toy, server, root, monkeypatch):
    spec = replace(toy, url=f"{server}/toy.tar.gz", official_sha256="0" * 64)
    monkeypatch.setitem(data.DATASETS, "toy", spec)
    with pytest.raises(data.ChecksumError, match="0" * 64):
        data.fetch("toy", root=root)
    assert leftovers(root) == []
    assert list((root / ".downloads").iterdir()) == []


# --- converting the official archives ---------------------------------------------------------


def test_convert_imdb_keeps_only_labelled_reviews(tmp_path):
    files = {
        "aclImdb/README": b"readme",
        "aclImdb/imdb.vocab": b"the\n",
        "aclImdb/train/pos/0_9.txt": b"great",
        "aclImdb/train/neg/1_2.txt": b"awful",
        "aclImdb/train/unsup/2_0.txt": b"unlabelled",
        "aclImdb/train/labeledBow.feat": b"0:1",
        "aclImdb/test/pos/3_8.txt": b"fine",
    }
    archive = make_tar(tmp_path / "aclImdb_v1.tar.gz", files)
    data._convert_imdb(archive, tmp_path / "out")
    kept = sorted(
        p.relative_to(tmp_path / "out").as_posix()
        for p in (tmp_path / "out").rglob("*")
        if p.is_file()
    )
    assert kept == [
        "aclImdb/README",
        "aclImdb/imdb.vocab",
        "aclImdb/test/pos/3_8.txt",
        "aclImdb/train/neg/1_2.txt",
        "aclImdb/train/pos/0_9.txt",
    ]


def test_convert_cifar2_writes_classes_0_and_1_as_jpegs(tmp_path):
    rng = np.random.default_rng(0)

    def batch(labels: list[int]) -> bytes:
        pixels = rng.integers(0, 256, (len(labels), 3 * 32 * 32), dtype=np.uint8)
        return pickle.dumps({b"data": pixels, b"labels": labels})

    files = {f"cifar-10-batches-py/data_batch_{i}": batch([0, 1, 2, 1]) for i in range(1, 6)}
    files["cifar-10-batches-py/test_batch"] = batch([3, 0, 1])
    archive = make_tar(tmp_path / "cifar-10-python.tar.gz", files)
    out = tmp_path / "out"
    data._convert_cifar2(archive, out)
    count = {
        p.relative_to(out / "cifar2").as_posix(): len(list(p.iterdir()))
        for p in (out / "cifar2").glob("*/*")
    }
    assert count == {
        "train/0_airplane": 5,
        "train/1_automobile": 10,
        "test/0_airplane": 1,
        "test/1_automobile": 1,
    }
    with Image.open(out / "cifar2" / "train" / "1_automobile" / "9.jpg") as image:
        assert image.size == (32, 32) and image.mode == "RGB"
    assert not (out / "_cifar10").exists()


# --- the real registry ------------------------------------------------------------------------

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.skipif(not (SHARED / "SHA256SUMS").is_file(), reason="no ../shared/data mirror")
def test_registry_hashes_match_the_shared_mirror():
    sums = dict(reversed(line.split()) for line in (SHARED / "SHA256SUMS").read_text().splitlines())
    for spec in data.DATASETS.values():
        assert sums[spec.mirror_file] == spec.sha256, spec.name


@pytest.fixture
def official(toy, monkeypatch) -> data.DataSpec:
    """'toy' whose official archive has another name than the course's mirror file."""
    spec = replace(toy, url="http://127.0.0.1:9/toy-official.tar.gz")
    monkeypatch.setitem(data.DATASETS, "toy", spec)
    return spec


def test_a_mirror_may_hold_the_official_archive_instead(official, mirror, root):
    """An instructor copies data/.downloads/ of a networked machine onto a USB stick."""
    (mirror / "toy.tar.gz").rename(mirror / data.official_name(official))
    folder = data.fetch("toy", root=root, mirror=mirror)
    assert (folder / "a" / "1.txt").read_bytes() == b"one"
    assert json.loads((folder / data.MARKER).read_text())["source"] == "official"


def test_a_corrupt_official_archive_in_the_mirror_is_named(official, mirror, root):
    (mirror / "toy.tar.gz").unlink()
    (mirror / data.official_name(official)).write_bytes(b"truncated")
    with pytest.raises(data.ChecksumError, match="sha256 is"):
        data.fetch("toy", root=root, mirror=mirror)
    assert leftovers(root) == []


def test_extracted_files_are_plain_whatever_the_archive_recorded(tmp_path):
    """An archive's owners and modes (setuid, world-writable) are not carried over."""
    archive = tmp_path / "modes.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, mode, kind in (("d", 0o777, tarfile.DIRTYPE), ("d/f.txt", 0o4777, None)):
            info = tarfile.TarInfo(name)
            info.mode, info.uid, info.gid, info.uname = mode, 4321, 4321, "someone"
            if kind:
                info.type = kind
                tar.addfile(info)
            else:
                info.size = 2
                tar.addfile(info, io.BytesIO(b"hi"))
    assert data.safe_extract(archive, tmp_path / "out") == 2
    folder, file = tmp_path / "out" / "d", tmp_path / "out" / "d" / "f.txt"
    assert (folder.stat().st_mode & 0o7777, file.stat().st_mode & 0o7777) == (0o755, 0o644)
    assert file.stat().st_uid == os.getuid() and file.read_text() == "hi"
