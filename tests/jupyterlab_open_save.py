"""A learner's session in a real JupyterLab, in headless Chromium: the course opens from a working
copy (as `make lab` does), every notebook opens clean with its solutions collapsed (code and
output) and saves unchanged, one short notebook is run with Run All and saved, and afterwards
`git status` is clean: running the course never changes the stored reference notebooks.

Run by `make lab-check` (and so by `.ci/run`), after `.ci/chromium` has made sure Chromium and
chromedriver are installed. Not collected by pytest (no `test_` prefix): it starts its own
JupyterLab on a free 127.0.0.1 port with no token, serving a throwaway working copy under build/,
opens the notebooks in one page a few at a time (their kernels start side by side; all of them at
once on a busy 2-core machine did not come up within 4 minutes), and stops it all at the end.
JupyterLab keeps its state (layout, settings) in build/lab-check-state/, not in ~/.jupyter, and
its log in build/lab-check.log, whose tail is printed when the session fails. Its kernels talk to
the server over Unix sockets in a throwaway folder, not over TCP ports (see `start_lab`). A kernel
that never reports idle is restarted once and counted in the last line. Exit status 1 with one
line per problem.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from helpers import workcopy  # noqa: E402
from helpers.processes import free_port  # noqa: E402

LAB_COPY = ROOT / "build" / "lab-check"  # git-ignored; a learner's own work/ is left alone
LAB_LOG = ROOT / "build" / "lab-check.log"  # the server's own log, its tail printed on a failure
# JupyterLab's own state for this session (the layout it restores, user settings), so that what a
# learner left open in ~/.jupyter is neither reopened here (it was: six notebooks of an earlier
# session came back beside the batch) nor changed by the check.
LAB_STATE = ROOT / "build" / "lab-check-state"
RUN = "03_autograd.ipynb"  # short (about 5 s): run with Run All, as a learner would
BATCH = 6  # notebooks open at once, each with its kernel

# [solution cells shown collapsed (code and output), solution cells] in the open notebook.
SOLUTIONS_HIDDEN = """
const cells = window.jupyterapp.shell.currentWidget.content.widgets.filter(
    c => (c.model.getMetadata('tags') || []).includes('solution'));
return [cells.filter(c => c.inputHidden && c.outputHidden).length, cells.length];
"""
# Every notebook named is open, loaded, and its kernel is up and idle.
ALL_READY = """
const names = arguments[0];
const panels = Array.from(window.jupyterapp.shell.widgets('main')).filter(
    w => w.context && names.includes(w.context.path));
return panels.length === names.length && panels.every(w => w.context.isReady &&
    w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel &&
    w.sessionContext.session.kernel.status === 'idle');
"""
# JupyterLab has started and registered its document and notebook commands.
STARTED = """
const app = window.jupyterapp;
return !!(app && app.commands.hasCommand('docmanager:open') &&
    app.commands.hasCommand('notebook:run-all-cells'));
"""
# Open the notebooks named in the running app (as a double click in the file browser would).
OPEN_ALL = """
const done = arguments[arguments.length - 1];
Promise.all(arguments[0].map(path => window.jupyterapp.commands.execute('docmanager:open', {path})))
    .then(() => done(true), error => done(String(error)));
"""
# Bring the notebook named to the front (the commands below act on the current notebook); true
# once JupyterLab has made it the current one.
ACTIVATE = """
const app = window.jupyterapp;
const w = Array.from(app.shell.widgets('main')).find(
    w => w.context && w.context.path === arguments[0]);
if (app.shell.currentWidget !== w) app.shell.activateById(w.id);
return app.shell.currentWidget === w;
"""
# The notebooks named that are not yet open, loaded and with an idle kernel, with their state.
NOT_READY = """
const names = arguments[0];
const panels = Array.from(window.jupyterapp.shell.widgets('main')).filter(
    w => w.context && names.includes(w.context.path));
return names.filter(n => !panels.some(w => w.context.path === n && w.context.isReady &&
    w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel &&
    w.sessionContext.session.kernel.status === 'idle')).map(n => {
    const w = panels.find(w => w.context.path === n);
    const kernel = w && w.sessionContext.session && w.sessionContext.session.kernel;
    return n + ': ' + (!w ? 'not open' : !w.context.isReady ? 'not loaded' :
        kernel ? 'kernel ' + kernel.status : 'no kernel');
});
"""
# Restart the named notebooks' kernels whose status is unknown or whose connection is not up
# (Kernel > Restart Kernel in the menus); their names. In one CI run a kernel had started but
# stayed 'unknown' for 180 s; under load here one never answered the server's kernel_info, and
# reconnecting did not help.
RECONNECT = """
const names = arguments[0];
const late = Array.from(window.jupyterapp.shell.widgets('main')).filter(
    w => w.context && names.includes(w.context.path) && w.sessionContext &&
    w.sessionContext.session && w.sessionContext.session.kernel).map(
    w => [w.context.path, w.sessionContext.session.kernel]).filter(
    ([, k]) => k.status === 'unknown' || k.connectionStatus !== 'connected');
const said = late.map(([path, k]) => `${path} (kernel ${k.status}, ${k.connectionStatus})`);
for (const [, k] of late) {  // a kernel that never answered kernel_info: restart it
    try { k.restart().catch(() => {}); } catch (e) {}  // a disposed kernel throws at once
}
return said;
"""
DIRTY = "return window.jupyterapp.shell.currentWidget.context.model.dirty;"
# Every code cell has run (an execution count) and the kernel is idle again.
ALL_RAN = """
const w = window.jupyterapp.shell.currentWidget;
const code = w.content.widgets.filter(c => c.model.type === 'code');
return w.sessionContext.session.kernel.status === 'idle' &&
    code.every(c => c.model.executionCount !== null);
"""


def wait_for_server(lab: subprocess.Popen, runtime: Path, timeout: float = 180) -> int:
    """Wait until JupyterLab answers (slow to start on a busy machine); the port it listens on.

    The port is read from the server's own record in ``runtime`` (``jpserver-<pid>.json``), not
    taken from the command line: a server whose port was taken meanwhile moves to another one.
    """
    end = time.time() + timeout
    while time.time() < end:
        if lab.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with code {lab.returncode}")
        for record in runtime.glob("jpserver-*.json"):
            with contextlib.suppress(OSError, ValueError, KeyError):  # half-written: read again
                port = int(json.loads(record.read_text())["port"])
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=5):
                    return port
        time.sleep(0.5)
    raise TimeoutError(f"jupyter lab did not answer within {timeout:g} s")


def wait_for(
    driver: webdriver.Chrome, script: str, timeout: float = 60, args: tuple = ()
) -> object:
    """Run ``script`` (with ``args``) every half second until it returns a true value."""
    end = time.time() + timeout
    while time.time() < end:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.5)
    raise TimeoutError(script)


def command(driver: webdriver.Chrome, name: str, args: dict | None = None) -> None:
    """Run a JupyterLab command (as its menu item would) and wait for it to finish."""
    call = f"{json.dumps(name)}, {json.dumps(args or {})}"
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"window.jupyterapp.commands.execute({call}).then(() => done(), () => done());"
    )


def collapsed(driver: webdriver.Chrome) -> tuple[int, int]:
    """Solution cells shown collapsed and solution cells, once JupyterLab has laid out every cell
    (it renders a long notebook's cells in the background, after the first screen)."""
    all_shown = SOLUTIONS_HIDDEN.replace("return [", "const r = [") + "return r[0] === r[1];"
    with contextlib.suppress(TimeoutError):  # reported by the caller with the counts
        wait_for(driver, all_shown, 20)
    hidden, solutions = driver.execute_script(SOLUTIONS_HIDDEN)
    return hidden, solutions


def wait_until_ready(driver: webdriver.Chrome, batch: list[str]) -> list[str]:
    """Wait until every notebook of ``batch`` is open with an idle kernel: 120 s, then 120 s more
    after restarting any kernel whose status is unknown or whose connection is down (said on
    stdout; returned), else fail with the state of each late notebook."""
    with contextlib.suppress(TimeoutError):
        wait_for(driver, ALL_READY, timeout=120, args=(batch,))
        return []
    reconnected = driver.execute_script(RECONNECT, batch)
    if reconnected:
        print(f"not idle after 120 s, restarted: {'; '.join(reconnected)}", flush=True)
    try:
        wait_for(driver, ALL_READY, timeout=120, args=(batch,))
    except TimeoutError:
        late = driver.execute_script(NOT_READY, batch)
        raise TimeoutError(f"not ready after 240 s: {'; '.join(late)}") from None
    return reconnected


def server_log_tail(lines: int = 40) -> str:
    """The last lines of the JupyterLab server's log (kernel starts, websocket errors)."""
    text = LAB_LOG.read_text(errors="replace").splitlines() if LAB_LOG.exists() else []
    return "\n".join([f"--- the last {lines} lines of {LAB_LOG.relative_to(ROOT)}", *text[-lines:]])


def stop_lab(lab: subprocess.Popen) -> None:
    """Stop JupyterLab and its kernels: terminate, then kill if it is still up after 30 s."""
    lab.terminate()
    try:
        lab.wait(timeout=30)
    except subprocess.TimeoutExpired:
        lab.kill()
        lab.wait()


def start_lab(port: int, log, runtime: Path, ipc: bool = True) -> subprocess.Popen:
    """Start JupyterLab on ``port``, its log to ``log``, its kernels' connection files and sockets
    in ``runtime``.

    The kernels use IPC (Unix sockets named after each kernel), not TCP: over TCP the server picks
    five free ports for a kernel, frees them and hands them to the kernel to bind a second or more
    later, and in a CI run with the site's browser check beside this one another process took such
    a port first. That kernel failed at start-up (`ZMQError: Address already in use`), the
    server did not restart it, and the notebook waited 240 s on a kernel that never answered
    `kernel_info`.
    ``ipc=False`` keeps TCP, for a ``runtime`` whose path is too long for a socket's name.
    """
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)}
    return subprocess.Popen(
        [
            str(ROOT / ".venv/bin/jupyter"),
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.token=",
            "--ServerApp.password=",
            "--ServerApp.allow_root=True",
            "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={LAB_COPY}",
            f"--LabApp.workspaces_dir={LAB_STATE / 'workspaces'}",
            f"--LabApp.user_settings_dir={LAB_STATE / 'user-settings'}",
            f"--KernelManager.transport={'ipc' if ipc else 'tcp'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )


def browser() -> webdriver.Chrome:
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        options.binary_location = chromium
    chromedriver = shutil.which("chromedriver")
    return webdriver.Chrome(
        options=options, service=Service(executable_path=chromedriver) if chromedriver else None
    )


def ran_as_a_learner(path: Path) -> list[str]:
    """Problems in the saved copy of the notebook that was run: every code cell ran, none raised,
    and each exercise's check still prints ✗ for the untouched starter."""
    nb = nbformat.read(path, as_version=4)  # joins the lists of lines JupyterLab writes
    code = [c for c in nb.cells if c.cell_type == "code"]
    not_run = sum(c["execution_count"] is None for c in code)
    problems = [f"{path.name}: {not_run} cells not run"] if not_run else []
    for cell in code:
        for out in cell["outputs"]:
            if out["output_type"] == "error":
                problems.append(f"{path.name}: a cell raised {out['ename']}: {out['evalue']}")
    checks = [c for c in code if re.match(r"(ch|lesson)\d\d\.exercise_", c.source.lstrip())]
    for cell in checks:
        text = "".join(o.get("text", "") for o in cell["outputs"] if o["output_type"] == "stream")
        if not text.startswith("✗"):
            problems.append(f"{path.name}: an exercise check printed {text[:60]!r}, not ✗")
    if not checks:
        problems.append(f"{path.name}: no exercise check cell found")
    return problems


def git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def check_one(driver: webdriver.Chrome, name: str) -> list[str]:
    """Bring the open notebook ``name`` to the front, check it opened clean with its solutions
    collapsed, run it if it is ``RUN``, save it, compare the saved file, stop its kernel."""
    path = workcopy.NOTEBOOKS / name
    try:
        wait_for(driver, ACTIVATE, timeout=20, args=(name,))
    except TimeoutError:
        return [f"{name}: could not be brought to the front"]
    problems = []
    if driver.execute_script(DIRTY):
        problems.append(f"{name}: marked changed once its kernel was up")
    hidden, solutions = collapsed(driver)
    brief = name.startswith("projects/")  # a project's brief has no solution cells
    if hidden != solutions or (not solutions and not brief):
        problems.append(f"{name}: {hidden} of {solutions} solutions collapsed")
    if name == RUN:
        started = time.time()
        command(driver, "notebook:run-all-cells")
        wait_for(driver, ALL_RAN, timeout=240)
        print(f"{name}: Run All finished in {time.time() - started:.1f} s")
    command(driver, "docmanager:save")
    copy = LAB_COPY / name
    same = copy.read_bytes() == path.read_bytes()
    if name == RUN:
        problems += ran_as_a_learner(copy)
        if same:
            problems.append(f"{name}: the run was not saved to the working copy")
    elif not same:
        problems.append(f"{name}: saving it unchanged rewrote the file")
    print(f"{name}: {hidden} of {solutions} solutions collapsed; saved")
    command(driver, "kernelmenu:shutdown")
    return problems


def session(names: list[str], runtime: Path, ipc: bool) -> tuple[list[str], list[str]]:
    """Open, check and save the notebooks ``names`` in a JupyterLab of its own (its files in
    ``runtime``); the problems found and the kernels restarted."""
    problems: list[str] = []
    restarted: list[str] = []
    with LAB_LOG.open("w") as log:
        lab = start_lab(free_port(), log, runtime, ipc)
        driver = None
        try:
            port = wait_for_server(lab, runtime)
            driver = browser()
            driver.set_script_timeout(300)
            driver.get(f"http://127.0.0.1:{port}/lab")
            wait_for(driver, STARTED, timeout=120)
            # A few notebooks at a time in one page, their kernels starting side by side (a page
            # load and a kernel start each, one after the other, took about 8 s a notebook).
            for first in range(0, len(names), BATCH):
                batch = names[first : first + BATCH]
                opened = driver.execute_async_script(OPEN_ALL, batch)
                if opened is not True:
                    raise RuntimeError(f"JupyterLab could not open the notebooks: {opened}")
                restarted += wait_until_ready(driver, batch)
                time.sleep(1)  # let kernel_info land in the metadata
                for name in batch:
                    problems += check_one(driver, name)
                command(driver, "application:close-all")
        except BaseException:
            print(server_log_tail(), file=sys.stderr, flush=True)
            raise
        finally:
            try:
                if driver is not None:
                    driver.quit()
            finally:
                stop_lab(lab)
    return problems, restarted


def main() -> int:
    before = git_status()  # clean in CI; an author's own edits are compared, not judged
    for folder in (LAB_COPY, LAB_STATE):
        shutil.rmtree(folder, ignore_errors=True)
    workcopy.sync(work=LAB_COPY)  # what `make lab` does to work/
    stored = [workcopy.NOTEBOOKS / rel for rel in workcopy.stored()]
    names = [path.relative_to(workcopy.NOTEBOOKS).as_posix() for path in stored]
    # The kernels' sockets are named <runtime>/kernel-<36-character id>-ipc-<n>, and a socket's
    # path must fit in 104 bytes on macOS, 108 on Linux: a short folder in /tmp (not $TMPDIR,
    # which is about 50 characters on macOS), and TCP should even that be too long.
    short = "/tmp" if Path("/tmp").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="lab-", dir=short, ignore_cleanup_errors=True) as tmp:
        ipc = len(tmp) + len("/kernel--ipc-5") + 36 < 100
        if not ipc:
            print(f"{tmp} is too long a path for the kernels' sockets: they use TCP ports")
        problems, restarted = session(names, Path(tmp), ipc)
    after = git_status()
    print("git status after the session:", "unchanged" if after == before else after)
    if after != before:
        problems.append(f"the session changed git status: {after or '(clean)'}")
    for problem in problems:
        print(f"✗ {problem}")
    print(
        f"{len(stored)} notebooks opened and saved, {RUN} run, "
        f"{len(restarted)} kernels restarted: {len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
