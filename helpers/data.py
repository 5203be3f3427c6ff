"""The course's data sets, fetched once into ``data/``, checked, and never left half-written.

``fetch("imdb")`` returns the extracted folder. It takes, in order:

1. the folder already under ``data/``, when a previous fetch finished it (no work at all);
2. the archive in a mirror folder named by ``$COOKBOOK_DATA_MIRROR``, checked by sha256;
3. the official archive, downloaded with a progress bar and checked by sha256.

Extraction goes to a temporary folder beside the target; the file counts are checked and a
marker written before one rename makes it the real folder. A failure at any point leaves
nothing behind. A file lock (``data/.NAME.lock``) makes concurrent fetches of one data set, from
several notebooks or processes, build it once: the others wait, then use that folder. A folder
whose file counts no longer match its marker (a file deleted by hand) is fetched again.
Command line: ``python -m helpers.data fetch [NAME ...]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import shutil
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pooch
from filelock import FileLock, Timeout
from tqdm.auto import tqdm

MIRROR_ENV = "COOKBOOK_DATA_MIRROR"
DATA_DIR_ENV = "COOKBOOK_DATA_DIR"
MARKER = ".complete.json"


class DataError(RuntimeError):
    """A data set could not be fetched; the message says why and what to do."""


class ChecksumError(DataError):
    """An archive's hash is not the expected one."""


class UnsafeArchiveError(DataError):
    """An archive holds a member that would land outside the target folder."""


class IncompleteDataError(DataError):
    """An archive is truncated or corrupt, or its contents are not all there."""


class DataUnavailableError(DataError):
    """Neither a mirror nor the official source could provide the archive."""


@dataclass(frozen=True)
class DataSpec:
    """One data set: where its archive comes from and what the extracted folder holds."""

    name: str
    folder: str  # the folder created under the data directory
    title: str
    mirror_file: str  # archive name in the mirror folder (the course's own layout)
    sha256: str  # of mirror_file
    url: str  # official archive
    official_sha256: str  # of the official archive, checked before anything in it is unpickled
    counts: dict[str, int]  # sub-folder of `folder` -> number of files it must hold
    convert: Callable[[Path, Path], None]  # (official archive, empty dir) -> fills dir/folder


# ---------------------------------------------------------------------------------------------
# Archives


def _member_is_unsafe(member: tarfile.TarInfo) -> str | None:
    """Return why a tar member must not be extracted, or None when it is a plain safe entry."""
    path = PurePosixPath(member.name)
    if member.name.startswith(("/", "\\")) or (len(member.name) > 1 and member.name[1] == ":"):
        return "an absolute path"
    if ".." in path.parts:
        return "a '..' component"
    if not (member.isfile() or member.isdir()):
        return "a link or special file"
    return None


def _plain_file(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """Extract a checked member as the current user's, readable, not executable (folders
    enterable), whatever owner and mode the archive recorded."""
    mode = 0o755 if member.isdir() else 0o644
    return member.replace(uid=None, gid=None, uname=None, gname=None, mode=mode, deep=False)


def safe_extract(
    archive: Path, dest: Path, keep: Callable[[str], bool] | None = None, desc: str = ""
) -> int:
    """Extract the plain files and folders of ``archive`` into ``dest``; return how many.

    Refuses the whole archive (extracting nothing) when any member has an absolute path, a
    ``..`` component, or is a link; raises :class:`IncompleteDataError` when the archive cannot
    be read to its end. ``keep(name)`` selects members.
    """
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()  # reads the whole archive: truncation shows up here
            for member in members:
                why = _member_is_unsafe(member)
                if why:
                    raise UnsafeArchiveError(
                        f"{archive}: refusing to extract, member {member.name!r} has {why}"
                    )
            chosen = [m for m in members if keep is None or keep(m.name)]
            # Every member was checked above, so a cheap filter is enough (tarfile's "data"
            # filter resolves each path again: half the time of an IMDB extraction).
            extra = {"filter": _plain_file} if hasattr(tarfile, "data_filter") else {}
            progress = tqdm(
                chosen,
                desc=desc or f"extract {archive.name}",
                unit="file",
                leave=False,
                disable=None,
            )
            tar.extractall(dest, members=progress, **extra)
    except (tarfile.TarError, EOFError, zlib.error) as err:
        if isinstance(err, UnsafeArchiveError):
            raise
        raise IncompleteDataError(
            f"{archive}: cannot be read to the end ({err}); it is truncated or corrupt. "
            "Delete it and fetch again."
        ) from err
    return len(chosen)


def sha256_of(path: Path) -> str:
    """Return the hex sha256 of a file."""
    return pooch.file_hash(str(path), alg="sha256")


# ---------------------------------------------------------------------------------------------
# Converting the official archives into the course's layout


def _convert_imdb(archive: Path, out: Path) -> None:
    """Extract the labelled reviews of the official aclImdb_v1.tar.gz (no unsup, no features)."""

    def keep(name: str) -> bool:
        parts = PurePosixPath(name).parts
        if len(parts) <= 2:
            return parts[-1] in {"aclImdb", "README", "imdb.vocab", "imdbEr.txt", "train", "test"}
        return parts[2] in {"pos", "neg"} and (len(parts) == 3 or parts[3].endswith(".txt"))

    safe_extract(archive, out, keep=keep, desc="extract IMDB")


def _convert_cifar2(archive: Path, out: Path) -> None:
    """Write CIFAR-10's classes 0 (airplane) and 1 (automobile) as JPEGs in ImageFolder layout."""
    import numpy as np
    from PIL import Image

    raw = out / "_cifar10"
    safe_extract(archive, raw, desc="extract CIFAR-10")
    batches = raw / "cifar-10-batches-py"
    splits = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
    classes = {0: "0_airplane", 1: "1_automobile"}
    for split, names in splits.items():
        counter = dict.fromkeys(classes, 0)
        for name in names:
            with open(batches / name, "rb") as f:  # official archive, checked by sha256 above
                batch = pickle.load(f, encoding="bytes")
            images = batch[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
            for image, label in zip(images, batch[b"labels"], strict=True):
                if label not in classes:
                    continue
                folder = out / "cifar2" / split / classes[label]
                folder.mkdir(parents=True, exist_ok=True)
                Image.fromarray(np.ascontiguousarray(image)).save(
                    folder / f"{counter[label]}.jpg", quality=95
                )
                counter[label] += 1
    shutil.rmtree(raw)


DATASETS: dict[str, DataSpec] = {
    "imdb": DataSpec(
        name="imdb",
        folder="aclImdb",
        title="IMDB Large Movie Review Dataset v1.0, labelled part (50,000 reviews)",
        mirror_file="aclImdb_v1_labeled.tar.gz",
        sha256="9d73e87cbe44ca8078a6dc9ed4671047a8587136493438f3970ecc9e12208373",
        url="https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
        official_sha256="c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe",
        counts={"train/pos": 12500, "train/neg": 12500, "test/pos": 12500, "test/neg": 12500},
        convert=_convert_imdb,
    ),
    "cifar2": DataSpec(
        name="cifar2",
        folder="cifar2",
        title="CIFAR2: CIFAR-10's airplane and automobile classes (12,000 JPEGs)",
        mirror_file="cifar2.tar.gz",
        sha256="502f3e7e14642f82e2b1e39df42bb37b9cdd6971300044588a101fe83728c39f",
        url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        official_sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
        counts={
            "train/0_airplane": 5000,
            "train/1_automobile": 5000,
            "test/0_airplane": 1000,
            "test/1_automobile": 1000,
        },
        convert=_convert_cifar2,
    ),
}


# ---------------------------------------------------------------------------------------------
# Fetching


def data_dir() -> Path:
    """Return where data sets live: ``$COOKBOOK_DATA_DIR``, else the checkout's ``data/``,
    else ``./data`` (e.g. on Colab, where ``helpers`` is installed without the checkout)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[1] / "data"
    if (checkout / "README.md").is_file():
        return checkout
    return Path.cwd() / "data"


def cache_path(name: str) -> Path:
    """Return the path of a cache file under ``data/cache/`` (derived data, safe to delete)."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"a cache name is a plain file name, got {name!r}")
    return data_dir() / "cache" / name


def load_cache(path: Path) -> object | None:
    """Return what ``helpers.checkpoint.atomic_save`` wrote at ``path`` (loaded with
    ``weights_only=True``), or None when there is no usable file (an unreadable one is
    deleted)."""
    import torch

    try:
        return torch.load(path, weights_only=True)
    except FileNotFoundError:
        return None
    except Exception:  # truncated or foreign: torch raises many types; rebuild it
        path.unlink(missing_ok=True)
        return None


def _spec(name: str) -> DataSpec:
    try:
        return DATASETS[name]
    except KeyError:
        known = ", ".join(sorted(DATASETS))
        raise ValueError(f"unknown data set {name!r}; the course has: {known}") from None


def _count_files(folder: Path) -> int:
    return sum(1 for entry in os.scandir(folder) if entry.is_file()) if folder.is_dir() else -1


def _describe(wrong: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{sub}: {got} files, expected {n}" for sub, (got, n) in wrong.items())


def _check_counts(spec: DataSpec, folder: Path) -> None:
    wrong = missing_files(spec, folder)
    if wrong:
        raise IncompleteDataError(
            f"{spec.name}: the extracted data is incomplete ({_describe(wrong)})"
        )


def missing_files(spec: DataSpec, folder: Path) -> dict[str, tuple[int, int]]:
    """Return ``{sub-folder: (files found, files expected)}`` for each count that is wrong."""
    found = {sub: _count_files(folder / sub) for sub in spec.counts}
    return {sub: (n, spec.counts[sub]) for sub, n in found.items() if n != spec.counts[sub]}


def _has_marker(spec: DataSpec, folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return marker.get("counts") == spec.counts


def is_complete(spec: DataSpec, folder: Path) -> bool:
    """True when a fetch of this version of ``spec`` finished ``folder`` and every file is there.

    Counting the files (no reading) takes a few milliseconds, even for IMDB's 50,000.
    """
    return _has_marker(spec, folder) and not missing_files(spec, folder)


def official_name(spec: DataSpec) -> str:
    """Return the file name of ``spec``'s official archive (as `make data` downloads it)."""
    return PurePosixPath(spec.url).name


def mirror_archive(spec: DataSpec, mirror: Path) -> tuple[Path, str]:
    """The course's archive from the mirror, else the official one there (both by sha256)."""
    archive = mirror / spec.mirror_file
    official = mirror / official_name(spec)
    if not mirror.is_dir():
        raise DataUnavailableError(
            f"{MIRROR_ENV}={mirror} is not a folder. Point it at a folder holding "
            f"{spec.mirror_file} (the layout of the course's shared/data mirror), or unset it "
            "to download from the official source."
        )
    if not archive.is_file() and official.is_file():  # copied from data/.downloads
        actual = sha256_of(official)
        if actual != spec.official_sha256:
            raise ChecksumError(
                f"{official}: sha256 is {actual}, expected {spec.official_sha256}. The file is "
                "corrupt or truncated: copy it again."
            )
        return official, "official"
    if not archive.is_file():
        raise DataUnavailableError(
            f"the mirror {mirror} (from {MIRROR_ENV}) has no {spec.mirror_file} (nor the "
            f"official {official.name}). Copy the course's {spec.mirror_file} there, or unset "
            f"{MIRROR_ENV} to download {spec.name} from {spec.url}."
        )
    actual = sha256_of(archive)
    if actual != spec.sha256:
        raise ChecksumError(
            f"{archive}: sha256 is {actual}, expected {spec.sha256}. The file is corrupt, "
            "truncated or not the course's archive: replace it and fetch again."
        )
    return archive, "mirror"


def _archive_from_source(spec: DataSpec, root: Path) -> tuple[Path, str]:
    import requests  # pooch's own dependency

    try:
        path = pooch.retrieve(
            spec.url,
            known_hash=f"sha256:{spec.official_sha256}",
            fname=official_name(spec),
            path=root / ".downloads",
            progressbar=True,
        )
    except ValueError as err:  # pooch: hash mismatch; the bad download is already deleted
        raise ChecksumError(f"{spec.name}: {err}") from None
    except (requests.RequestException, OSError) as err:
        raise DataUnavailableError(
            f"could not download {spec.name} from {spec.url} ({type(err).__name__}). "
            f"If this machine is offline, set {MIRROR_ENV} to a folder holding "
            f"{spec.mirror_file} (e.g. `export {MIRROR_ENV}=/path/to/shared/data`) and fetch "
            "again."
        ) from None
    return Path(path), "official"


@dataclass
class _Staging:
    """A temporary folder beside the target, removed unless it is renamed into place."""

    root: Path
    name: str

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(prefix=f".partial-{self.name}-", dir=self.root))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def fetch(name: str, *, root: Path | str | None = None, mirror: Path | str | None = None) -> Path:
    """Return the folder of data set ``name``, fetching it first if needed.

    ``root`` defaults to :func:`data_dir`; ``mirror`` to ``$COOKBOOK_DATA_MIRROR``.

    >>> fetch("cifar2")  # doctest: +SKIP
    PosixPath('.../data/cifar2')
    """
    spec = _spec(name)
    root = Path(root) if root is not None else data_dir()
    target = root / spec.folder
    if is_complete(spec, target):
        return target
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root, spec):
        if is_complete(spec, target):  # another process finished it while we waited
            return target
        if _has_marker(spec, target):
            detail = _describe(missing_files(spec, target))
            print(f"{target} is damaged ({detail}); fetching it again", file=sys.stderr)
        return _build(spec, root, target, mirror)


@contextlib.contextmanager
def _lock(root: Path, spec: DataSpec) -> Iterator[None]:
    """Hold the lock of ``spec``'s fetch; say so when another process holds it first."""
    lock = FileLock(root / f".{spec.name}.lock")
    try:
        lock.acquire(timeout=1)
    except Timeout:
        print(f"waiting for another process that is fetching {spec.name}…", file=sys.stderr)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _build(spec: DataSpec, root: Path, target: Path, mirror: Path | str | None) -> Path:
    """Fetch, extract, check and swap ``spec`` into ``target``; the caller holds the lock."""
    for stale in root.glob(f".partial-{spec.name}-*"):  # left by a fetch that was killed
        shutil.rmtree(stale, ignore_errors=True)
    if mirror is None and os.environ.get(MIRROR_ENV):
        mirror = os.environ[MIRROR_ENV]
    if mirror is not None:
        archive, source = mirror_archive(spec, Path(mirror).expanduser())
    else:
        archive, source = _archive_from_source(spec, root)

    with _Staging(root, spec.name) as staging:
        if source == "mirror":
            safe_extract(archive, staging, desc=f"extract {spec.name}")
        else:
            spec.convert(archive, staging)
        built = staging / spec.folder
        _check_counts(spec, built)
        marker = {
            "name": spec.name,
            "source": source,
            "archive": archive.name,
            "counts": spec.counts,
        }
        (built / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        if target.exists():  # unfinished or damaged, and nobody else writes it: replace it
            shutil.rmtree(target)
        built.rename(target)
    return target


def _main(argv: list[str] | None = None) -> int:
    summary = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m helpers.data", description=summary)
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("fetch", help="fetch data sets (all when none are named)")
    get.add_argument("names", nargs="*", metavar="NAME", help=", ".join(DATASETS))
    args = parser.parse_args(argv)

    for name in args.names or list(DATASETS):
        start = time.perf_counter()
        try:
            path = fetch(name)
        except (DataError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(f"{name}: {path} ({time.perf_counter() - start:.2f} s) · {_spec(name).title}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
