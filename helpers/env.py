"""Device choice, seeding and the one-line environment report of every setup cell."""

from __future__ import annotations

import getpass
import logging
import os
import platform
import random
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch


def pick_device() -> torch.device:
    """Return the best available device: cuda, then mps, then cpu.

    >>> pick_device().type in {"cuda", "mps", "cpu"}
    True
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int = 0) -> int:
    """Seed Python's, NumPy's and torch's generators (all devices); return the seed.

    >>> seed_everything(42)
    42
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32), got {seed!r}")
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by worker processes started later
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA and MPS device
    return seed


def report(device: torch.device | str) -> str:
    """Return one line naming the device and the versions that matter.

    >>> report("cpu").startswith("device: cpu · torch ")
    True
    """
    device = torch.device(device)
    where = device.type
    if device.type == "cuda":
        where += f" ({torch.cuda.get_device_name(device)})"
    return f"device: {where} · torch {torch.__version__} · python {platform.python_version()}"


def cpu_name() -> str:
    """Return the CPU's model name and its count of logical cores: ``"AMD EPYC · 2 cores"``.

    >>> cpu_name().endswith("cores") or cpu_name().endswith("core")
    True
    """
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        name = models[0] if models else name
    except OSError:  # not Linux
        pass
    cores = os.cpu_count() or 1
    return f"{name} · {cores} core{'s' if cores != 1 else ''}"


# What makes an AVX-512 machine take the AVX2 code paths (an AMD Zen 3's, a laptop's): ATen's
# kernels, oneDNN's and MKL's, each read once when the library starts. The tests run with them.
AVX2_SETTINGS = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


def separate_compile_cache() -> str | None:
    """Under ISA limits (any of ``AVX2_SETTINGS`` set), give ``torch.compile`` a cache folder of
    its own, named by the limits and the torch version (``$TORCHINDUCTOR_CACHE_DIR``, inherited
    by kernels and scripts started later); return it, or None where nothing is limited or a
    folder was already chosen. :func:`setup` calls it, so a notebook gets it too.

    A folder set beforehand is kept, unless it is Inductor's default (Inductor sets the variable
    itself the first time it looks, as importing torchvision does). Inductor's cache is not keyed
    on these settings: a kernel compiled on the default code paths
    and loaded under ``ATEN_CPU_CAPABILITY=avx2`` computed other outputs (max |diff| 8.9e30 for
    the course's CNN), and one compiled under the limits crashed a default run, both on the same
    machine.
    """
    limits = [
        f"{name}={os.environ[name]}" for name in sorted(AVX2_SETTINGS) if os.environ.get(name)
    ]
    if not limits:
        return None
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    # Inductor writes its default folder into the variable the first time it asks for it, which
    # importing torchvision does: a notebook's imports come before setup(), so that value is
    # Inductor's, not a choice, and is replaced (kept, it let kernels compiled under the limits
    # into the default folder, where a later run on the default code paths crashed on them).
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    if chosen and os.path.abspath(chosen) != os.path.abspath(default_cache_dir()):
        return None
    user = "".join(c for c in getpass.getuser() if c.isalnum()) or "user"
    named = re.sub(r"[^A-Za-z0-9=]+", "-", "_".join(limits))  # case kept: ATen reads it as is
    version = re.sub(r"[^A-Za-z0-9.]+", "-", torch.__version__)
    folder = Path(tempfile.gettempdir(), f"torchinductor_{user}_{named}_torch-{version}")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    if chosen and "torch._inductor.utils" in sys.modules:  # forget paths found under the old one
        sys.modules["torch._inductor.utils"].clear_caches()
    return str(folder)


# oneDNN limits its instruction sets to ONEDNN_MAX_CPU_ISA (DNNL_MAX_CPU_ISA in older releases);
# these limits leave out every VNNI instruction.
NO_VNNI_LIMITS = {"SSE41", "AVX", "AVX2", "AVX512_CORE"}
VNNI_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}


def cpu_model() -> str:
    """Return an x86 CPU's family and model numbers, ``"family 25 model 17"``, which tell apart
    CPUs sold under one name (an AMD EPYC of 2020 and one of 2022); empty where Linux does not
    list them.

    >>> cpu_model() == "" or cpu_model().startswith("family ")
    True
    """
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("cpu family", "model") and key.strip() not in fields:
                    fields[key.strip()] = value.strip()
                if not line.strip():  # the first CPU's block ends
                    break
    except OSError:  # not Linux
        pass
    if len(fields) < 2:
        return ""
    return f"family {fields['cpu family']} model {fields['model']}"


def cpu_flags() -> set[str]:
    """Return the CPU's feature flags as Linux lists them in ``/proc/cpuinfo`` (empty elsewhere).

    >>> isinstance(cpu_flags(), set)
    True
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:  # not Linux
        pass
    return set()


def onednn_has_vnni(flags: set[str] | None = None, environ: dict | None = None) -> bool:
    """Return whether oneDNN's int8 kernels multiply with VNNI instructions here: the CPU has
    them (AVX512-VNNI, AVX-VNNI or AMX) and ``ONEDNN_MAX_CPU_ISA`` does not rule them out.

    Without VNNI, x86 int8 kernels multiply uint8 activations by int8 weights in pairs summed
    into a *saturating* int16, which overflows for 8-bit activations: quantize with 7-bit ones
    (``reduce_range=True``) there. False where it cannot tell (not Linux): the safe choice.

    >>> onednn_has_vnni({"avx2", "avx512_vnni"}, {}), onednn_has_vnni({"avx2"}, {})
    (True, False)
    >>> onednn_has_vnni({"avx512_vnni"}, {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    False
    """
    flags = cpu_flags() if flags is None else flags
    environ = os.environ if environ is None else environ
    limit = (environ.get("ONEDNN_MAX_CPU_ISA") or environ.get("DNNL_MAX_CPU_ISA") or "").upper()
    if limit in NO_VNNI_LIMITS:
        return False
    if limit.startswith("AVX2_VNNI"):
        return "avx_vnni" in flags
    if limit.startswith(("AVX512_CORE", "AVX10")):  # AVX-512 limits leave AVX-VNNI out
        return "avx512_vnni" in flags
    return bool(flags & VNNI_FLAGS)


@contextmanager
def quiet_logger(name: str, level: int = logging.ERROR) -> Iterator[logging.Logger]:
    """Raise the logger ``name`` to ``level`` inside the block (its own level comes back after):
    for a library's log lines that are noise where they appear, never to hide errors.

    >>> with quiet_logger("torch.export") as logger:
    ...     logger.getEffectiveLevel() == logging.ERROR
    True
    """
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(level)
    try:
        yield logger
    finally:
        logger.setLevel(previous)


def minimal_tracebacks() -> bool:
    """In Jupyter or IPython, show an error as its last line, ``Type: message``; return whether
    that applied (False in plain Python).

    The same as ``%xmode Minimal``, without its printed line: a pitfall cell the reader runs shows
    the error the stored notebook shows, not 40 lines of library frames. ``%xmode Context``
    brings full tracebacks back.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.InteractiveTB.set_mode(mode="Minimal")
    return True


def spare_a_core() -> int:
    """Use one intra-op thread fewer than the machine has cores (at least 1); return the count.

    On a CPU with few cores, PyTorch's default (one thread per core) makes every parallel operation
    wait for the slowest core: when another program keeps one core busy, each of those waits costs
    a scheduler time slice, and training can become 20 times slower. One core left free avoids
    that, and on 2 cores one thread measured as fast as two. ``OMP_NUM_THREADS``, when set, wins.
    """
    if os.environ.get("OMP_NUM_THREADS"):
        return torch.get_num_threads()
    threads = max(1, (os.cpu_count() or 1) - 1)
    torch.set_num_threads(threads)
    return threads


def setup(seed: int = 0) -> torch.device:
    """Seed everything, make tracebacks minimal in Jupyter, leave a CPU core free, pick the
    device, print the report line and return the device."""
    seed_everything(seed)
    minimal_tracebacks()
    spare_a_core()
    separate_compile_cache()  # only under ISA limits: not the default code paths' kernels
    device = pick_device()
    print(report(device))
    return device
