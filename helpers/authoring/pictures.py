"""Pictures of the real TensorBoard showing lesson 08's runs, for readers who cannot run it
(the website, a printed page, a machine without a browser on the kernel's side).

Headless Chromium opens each tab of a TensorBoard server that reads the lesson's own event files
(``notebooks/runs/08_lesson``, written when the lesson runs) and saves a screenshot to
``helpers/pictures/tensorboard_<tab>.png``, which ``helpers.board.picture`` shows::

    python -m helpers.authoring.pictures      # after lesson 08 has run
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time
from pathlib import Path

from helpers import board

LESSON_RUNS = Path(__file__).resolve().parents[2] / "notebooks" / "runs" / "08_lesson"
RUNS = ("lr=0.003", "lr=0.0003")  # the lesson's two training runs, compared on every tab
TABS = {  # tab -> the page's address after the server's URL
    # no smoothing and no outliers left out: with 2 validation points both hide the curve
    "scalars": "/#scalars&tagFilter=loss%7Caccuracy&_smoothingWeight=0&_ignoreYOutliers=false",
    "images": "/#images",
    "histograms": "/#histograms&tagFilter=8%5C.0%5C.weight",  # the conv the lesson checks
}
SIZE = (1280, 900)
# The page fetches its data, then draws, and no event says when it is done: a picture is taken
# when two screenshots half a second apart are the same and have a drawn page's many colours (a
# blank or loading page has few), or after RENDER_S at most.
RENDER_S = 12.0
MIN_COLOURS = 1500


def colours(png: bytes) -> int:
    """How many different colours a PNG has (a drawn TensorBoard page: thousands)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as picture:
        return len(picture.convert("RGB").getcolors(1 << 20) or [])


def settled(driver, most: float = RENDER_S) -> bytes:
    """Return a screenshot of the page once it has stopped changing and looks drawn."""
    deadline = time.monotonic() + most
    last = b""
    while True:
        time.sleep(0.5)
        png = driver.get_screenshot_as_png()
        if (png == last and colours(png) > MIN_COLOURS) or time.monotonic() > deadline:
            return png
        last = png


def browser(chromium: str = "/usr/bin/chromium", driver: str = "/usr/bin/chromedriver"):
    """A headless Chromium driven by Selenium, the window ``SIZE``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options

    for path in (chromium, driver):
        if not Path(path).exists():
            raise FileNotFoundError(
                f"{path} is missing: install Debian's chromium and chromium-driver "
                "(`sudo apt-get install chromium chromium-driver`, or `bash .ci/chromium`)"
            )
    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={SIZE[0]},{SIZE[1]}")
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(driver))


def take(logdir: Path = LESSON_RUNS, out: Path = board.PICTURES) -> list[Path]:
    """Save a screenshot of each of ``TABS`` for the ``RUNS`` of ``logdir``; return the files."""
    missing = [run for run in RUNS if not (logdir / run).is_dir()]
    if missing:
        raise FileNotFoundError(
            f"{logdir} has no run {missing}: run lesson 08 first (it writes them), "
            "e.g. `make test` or Run All in JupyterLab"
        )
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with tempfile.TemporaryDirectory() as tmp:
        shown = Path(tmp) / "runs" / logdir.name  # the page names the folder: as in the lesson
        for run in RUNS:  # only the runs the pictures are about
            shutil.copytree(logdir / run, shown / run)
        with board.serve(shown, timeout=60) as server:
            driver = browser()
            try:
                for tab, address in TABS.items():
                    driver.get(server.url + address)
                    path = out / f"tensorboard_{tab}.png"
                    partial = path.with_suffix(".part.png")
                    partial.write_bytes(settled(driver))
                    partial.replace(path)  # never a half-written picture
                    saved.append(path)
            finally:
                driver.quit()
    return saved


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.authoring.pictures")
    parser.add_argument("--logdir", type=Path, default=LESSON_RUNS)
    parser.add_argument("--out", type=Path, default=board.PICTURES)
    args = parser.parse_args(argv)
    for path in take(args.logdir, args.out):
        print(f"wrote: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
