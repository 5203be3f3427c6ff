"""Open every notebook in a real JupyterLab, let its kernel start, save it, and report whether
JupyterLab marked it changed and whether it shows every solution cell collapsed. Not collected by
pytest: it needs Chromium, chromedriver and Selenium, which the course does not install. Run it by
hand after changing notebook metadata::

    apt-get install chromium chromium-driver        # Debian/Ubuntu
    python3 -m venv /tmp/sel && /tmp/sel/bin/pip install selenium
    /tmp/sel/bin/python tests/jupyterlab_open_save.py

It starts `.venv/bin/jupyter lab` on a free 127.0.0.1 port with no token, and stops it at the end.
Exit status 1 when a notebook was dirty after its kernel started, showed a solution expanded, or
changed on disk when saved.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[1]


# [solution cells whose input JupyterLab shows collapsed, solution cells] in the open notebook.
SOLUTIONS_HIDDEN = """
const cells = window.jupyterapp.shell.currentWidget.content.widgets.filter(
    c => (c.model.getMetadata('tags') || []).includes('solution'));
return [cells.filter(c => c.inputHidden).length, cells.length];
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(port: int, lab: subprocess.Popen, timeout: float = 180) -> None:
    """Wait until JupyterLab answers on ``port`` (slow to start on a busy machine)."""
    end = time.time() + timeout
    while time.time() < end:
        if lab.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with code {lab.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"jupyter lab did not answer on port {port} within {timeout:g} s")


def wait_for(driver: webdriver.Chrome, script: str, timeout: float = 60) -> object:
    end = time.time() + timeout
    while time.time() < end:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.5)
    raise TimeoutError(script)


def main() -> int:
    port = free_port()
    lab = subprocess.Popen(
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
            f"--ServerApp.root_dir={ROOT / 'notebooks'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = None
    dirty, shown = [], []
    try:
        wait_for_server(port, lab)
        chromedriver = shutil.which("chromedriver")
        service = Service(executable_path=chromedriver) if chromedriver else None
        driver = webdriver.Chrome(options=options, service=service)
        for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
            driver.get(f"http://127.0.0.1:{port}/lab/tree/{path.name}")
            opened = "return !!(window.jupyterapp && window.jupyterapp.shell.currentWidget)"
            wait_for(driver, opened)
            status = (
                "const w = window.jupyterapp.shell.currentWidget;"
                "return !!(w && w.context && w.context.isReady && w.sessionContext && "
                "w.sessionContext.session && w.sessionContext.session.kernel && "
                "w.sessionContext.session.kernel.status === 'idle');"
            )
            wait_for(driver, status, timeout=120)
            time.sleep(3)  # let kernel_info land in the metadata
            was_dirty = driver.execute_script(
                "return window.jupyterapp.shell.currentWidget.context.model.dirty;"
            )
            hidden, solutions = driver.execute_script(SOLUTIONS_HIDDEN)
            if hidden != solutions:
                shown.append(path.name)
            driver.execute_script("window.jupyterapp.commands.execute('docmanager:save');")
            time.sleep(2)
            driver.execute_script("window.jupyterapp.commands.execute('kernelmenu:shutdown');")
            print(
                f"{path.name}: {'DIRTY on open' if was_dirty else 'clean on open'}; "
                f"{hidden} of {solutions} solutions collapsed; saved"
            )
            if was_dirty:
                dirty.append(path.name)
            driver.execute_script("window.jupyterapp.commands.execute('application:close-all');")
            time.sleep(1)
    finally:
        if driver is not None:
            driver.quit()
        lab.terminate()
        lab.wait(timeout=30)
    changed = subprocess.run(
        ["git", "status", "--short", "notebooks"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    print("git status --short notebooks:", changed.strip() or "(clean)")
    if shown:
        print("solutions not collapsed in:", ", ".join(shown))
    return 1 if dirty or shown or changed.strip() else 0


if __name__ == "__main__":
    sys.exit(main())
