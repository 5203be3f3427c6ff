"""helpers.env, helpers.check and helpers.bench."""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from helpers.bench import compare, time_in_turns, time_it
from helpers.check import ClaimFailed, check
from helpers.env import (
    AVX2_SETTINGS,
    cpu_flags,
    pick_device,
    quiet_logger,
    report,
    seed_everything,
    setup,
)


def test_seed_everything_repeats_every_generator():
    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    seed_everything(7)
    first = draw()
    seed_everything(7)
    assert draw() == first


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "0", True])
def test_seed_everything_rejects_bad_seeds(bad):
    with pytest.raises(ValueError, match="seed must be an int"):
        seed_everything(bad)


def test_pick_device_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert pick_device() == torch.device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device() == torch.device("cpu")


def test_report_and_setup_print_one_line(capsys):
    assert report("cpu").startswith(f"device: cpu · torch {torch.__version__} · python ")
    device = setup(seed=3)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"device: {device.type}")
    with pytest.raises(RuntimeError):
        report("no-such-device")


def test_check_prints_or_raises(capsys):
    check(True, "it holds")
    assert capsys.readouterr().out == "✓ it holds\n"
    with pytest.raises(ClaimFailed, match="✗ it does not hold"):
        check(0, "it does not hold")
    with pytest.raises(ValueError, match="needs a claim"):
        check(True, "")


def test_time_it_and_compare(capsys):
    assert 0 < time_it(lambda: sum(range(10)), min_run_time=0.01) < 0.1
    times = compare({"slow": lambda: sum(range(10_000)), "fast": lambda: None}, min_run_time=0.01)
    assert list(times) == ["slow", "fast"] and times["fast"] < times["slow"]
    assert "speed vs first" in capsys.readouterr().out
    with pytest.raises(TypeError):
        time_it(42)
    with pytest.raises(ValueError):
        time_it(lambda: None, min_run_time=0)
    with pytest.raises(ValueError):
        compare({})


def test_compare_by_cpu_time_counts_only_this_threads_work(capsys):
    """With cpu_time=True (compare and time_in_turns), time spent off the CPU (here asleep, as
    when another program has the core) is not counted: the same work with a 2 ms sleep costs
    about what the work alone does, while the wall clock adds the 2 ms."""
    fns = {
        "work": lambda: sum(range(20_000)),
        "work, then asleep": lambda: (sum(range(20_000)), time.sleep(0.002)),
    }
    by_cpu = compare(fns, min_run_time=0.02, threads=1, cpu_time=True)
    by_wall = compare(fns, min_run_time=0.02, threads=1)
    assert by_cpu["work, then asleep"] < 2 * by_cpu["work"] + 0.0002 < 0.002
    assert by_wall["work, then asleep"] >= 0.002
    out = capsys.readouterr().out
    assert "best (CPU)" in out and out.count("speed vs first") == 2
    in_turns = time_in_turns(fns, rounds=2, min_run_time=0.01, threads=1, cpu_time=True)
    assert in_turns["work, then asleep"] < 2 * in_turns["work"] + 0.0002
    for timer in (compare, time_in_turns):
        with pytest.raises(ValueError, match="threads=1"):
            timer(fns, cpu_time=True)


def test_compare_by_cpu_time_refuses_work_on_other_threads():
    """Work that runs on another thread is not on this thread's clock: refused, not mis-timed."""
    import threading

    def elsewhere() -> None:
        worker = threading.Thread(target=lambda: sum(range(200_000)))
        worker.start()
        worker.join()

    with pytest.raises(ValueError, match="other threads"):
        compare({"elsewhere": elsewhere}, min_run_time=0.01, threads=1, cpu_time=True)


def test_time_it_gives_the_median_block_or_with_best_the_fastest(monkeypatch):
    from torch.utils.benchmark import Timer
    from torch.utils.benchmark.utils.common import Measurement

    def blocks(self, min_run_time):
        return Measurement(1, [3.0, 1.0, 2.0, 5.0, 4.0], self._task_spec)

    monkeypatch.setattr(Timer, "blocked_autorange", blocks)
    assert time_it(lambda: None) == 3.0
    assert time_it(lambda: None, best=True) == 1.0
    # in turns too: the fastest round's median, or with best the fastest block of any round
    assert time_in_turns({"a": lambda: None}, rounds=2) == {"a": 3.0}
    assert time_in_turns({"a": lambda: None}, rounds=2, best=True) == {"a": 1.0}


def test_time_it_runs_on_the_threads_asked_and_restores_the_setting():
    before = torch.get_num_threads()
    seen = []
    time_it(lambda: seen.append(torch.get_num_threads()), min_run_time=0.01, threads=1)
    assert set(seen) == {1}
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"):
        time_it(lambda: None, threads=0)


def test_importing_the_timer_logs_no_cuda_home_warning(capfd):
    import subprocess
    import sys

    code = "from helpers.bench import time_it; time_it(lambda: None, min_run_time=0.01)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "cpp_extension" not in result.stderr, result.stderr


def test_minimal_tracebacks_is_a_no_op_outside_ipython():
    from helpers.env import minimal_tracebacks

    assert minimal_tracebacks() is False


def test_check_logs_measured_claims_only_where_asked(tmp_path, monkeypatch, capsys):
    from helpers.check import CLAIMS_LOG_ENV, read_claims

    log = tmp_path / "claims.jsonl"
    monkeypatch.delenv(CLAIMS_LOG_ENV, raising=False)
    check(True, "not logged", measured="2.0×")
    monkeypatch.setenv(CLAIMS_LOG_ENV, str(log))
    check(True, "no value, not logged")
    check(3.1 > 1.5, "at least 1.5× faster", measured="3.1×")
    with pytest.raises(ClaimFailed, match=r"at least 5× faster \(measured 3\.1×\)"):
        check(3.1 > 5, "at least 5× faster", measured="3.1×")
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["✓ not logged", "✓ no value, not logged", "✓ at least 1.5× faster"]
    assert read_claims(log) == [
        {"claim": "at least 1.5× faster", "measured": "3.1×", "ok": True},
        {"claim": "at least 5× faster", "measured": "3.1×", "ok": False},
    ]
    assert read_claims(tmp_path / "missing.jsonl") == []


def test_spare_a_core_leaves_one_core_unless_omp_num_threads_is_set(monkeypatch):
    from helpers.env import spare_a_core

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        monkeypatch.setattr("os.cpu_count", lambda: 8)
        assert spare_a_core() == 7 and torch.get_num_threads() == 7
        monkeypatch.setattr("os.cpu_count", lambda: 1)
        assert spare_a_core() == 1
        torch.set_num_threads(3)
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert spare_a_core() == 3  # the user's setting wins
    finally:
        torch.set_num_threads(before)


def test_cpu_name_names_the_cores():
    from helpers.env import cpu_name

    name = cpu_name()
    assert name.split(" · ")[-1].split()[0].isdigit()


def test_onednn_has_vnni_follows_the_cpu_flags_and_the_isa_limit():
    from helpers.env import onednn_has_vnni

    zen3 = {"avx2", "fma"}  # AMD Zen 3: AVX2, no AVX-512, no VNNI
    icelake = {"avx2", "avx512f", "avx512_vnni"}
    alder = {"avx2", "avx_vnni"}
    assert not onednn_has_vnni(zen3, {})
    assert onednn_has_vnni(icelake, {}) and onednn_has_vnni(alder, {})
    for limit in ("AVX2", "avx512_core", "AVX"):
        assert not onednn_has_vnni(icelake, {"ONEDNN_MAX_CPU_ISA": limit})
    assert not onednn_has_vnni(icelake, {"DNNL_MAX_CPU_ISA": "AVX2"})
    assert onednn_has_vnni(alder, {"ONEDNN_MAX_CPU_ISA": "AVX2_VNNI"})
    assert not onednn_has_vnni(icelake, {"ONEDNN_MAX_CPU_ISA": "AVX2_VNNI"})
    assert onednn_has_vnni(icelake, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"})
    assert not onednn_has_vnni(alder, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"})
    assert not onednn_has_vnni(set(), {})  # cannot tell: the safe answer


def test_the_avx2_settings_are_honoured_by_the_installed_torch():
    """ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA, read when torch and oneDNN start, move an
    AVX-512 machine onto the AVX2 paths that the course's tests run (.ci/run)."""
    import subprocess
    import sys

    probe = (
        "import torch; print(torch.backends.cpu.get_cpu_capability(), "
        "torch.ops.mkldnn._is_mkldnn_bf16_supported())"
    )
    plain = {k: v for k, v in os.environ.items() if k not in AVX2_SETTINGS}

    def run(env: dict) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    assert run({**plain, **AVX2_SETTINGS}) == ["AVX2", "False"]
    capability, bf16 = run(plain)
    if "avx512bw" in cpu_flags():  # an AVX-512 machine: the settings changed what it runs
        assert capability.startswith("AVX512") and bf16 == "True"


def test_isa_limits_get_a_compile_cache_of_their_own(monkeypatch):
    from helpers.env import separate_compile_cache

    for name in (*AVX2_SETTINGS, "TORCHINDUCTOR_CACHE_DIR"):
        monkeypatch.setenv(name, "")  # so that monkeypatch puts back what was there, or nothing
        monkeypatch.delenv(name)
    assert separate_compile_cache() is None and "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    for name, value in AVX2_SETTINGS.items():
        monkeypatch.setenv(name, value)
    folder = separate_compile_cache()
    assert folder and os.environ["TORCHINDUCTOR_CACHE_DIR"] == folder and "avx2" in folder
    assert "ATEN-CPU-CAPABILITY=avx2" in folder and "ONEDNN-MAX-CPU-ISA=AVX2" in folder
    assert folder.endswith(f"_torch-{torch.__version__.replace('+', '-')}"), folder
    assert separate_compile_cache() is None, "a folder already chosen is kept"
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == folder


def test_inductors_own_default_folder_is_not_taken_for_a_choice(monkeypatch, tmp_path):
    """Importing torchvision makes Inductor write its default folder into the variable; under the
    limits that value is replaced, while a folder a person chose is kept."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    from helpers.env import separate_compile_cache

    for name, value in AVX2_SETTINGS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())
    folder = separate_compile_cache()
    assert folder and os.environ["TORCHINDUCTOR_CACHE_DIR"] == folder and "avx2" in folder
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    assert separate_compile_cache() is None
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path)


def test_a_notebooks_imports_then_setup_under_isa_limits_use_the_limits_folder():
    """A notebook imports the course's helpers (torchvision among them) before setup(): the
    kernels it then compiles under the limits must not go to Inductor's default folder."""
    code = (
        "import os\n"
        "from helpers.images import load_cifar2\n"
        "from helpers.models import small_cnn\n"
        "from helpers.env import setup\n"
        "setup(seed=0)\n"
        "from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
        "print(cache_dir())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env |= AVX2_SETTINGS
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "ATEN-CPU-CAPABILITY=avx2" in out.splitlines()[-1], out


def test_setup_gives_a_notebook_under_isa_limits_its_own_compile_cache(monkeypatch, capsys):
    """A notebook run by hand under the AVX2 settings (not through the tests' conftest) must not
    load kernels compiled on the default code paths."""
    from helpers.env import setup

    threads = torch.get_num_threads()
    for name in (*AVX2_SETTINGS, "TORCHINDUCTOR_CACHE_DIR"):
        monkeypatch.setenv(name, "")  # so that monkeypatch puts back what was there, or nothing
        monkeypatch.delenv(name)
    for name, value in AVX2_SETTINGS.items():
        monkeypatch.setenv(name, value)
    try:
        setup(seed=0)
    finally:
        torch.set_num_threads(threads)
    assert "ATEN-CPU-CAPABILITY=avx2" in os.environ["TORCHINDUCTOR_CACHE_DIR"]


def test_quiet_logger_drops_lines_below_its_level_and_restores_the_level(caplog):
    logger = logging.getLogger("cookbook.test.quiet")
    logger.setLevel(logging.INFO)
    with caplog.at_level(logging.DEBUG, logger="cookbook.test.quiet"):
        logger.setLevel(logging.INFO)
        with quiet_logger("cookbook.test.quiet"):
            logger.warning("noise")
            logger.error("an error still shows")
        logger.warning("after the block")
    assert [r.getMessage() for r in caplog.records] == ["an error still shows", "after the block"]
    assert logger.level == logging.INFO
