"""The course website read in a real browser: headless Debian Chromium, driven by Selenium.

Not collected by a plain ``pytest`` (the file name has no ``test_`` prefix): ``make site-test``
runs it after ``make site``, and ``.ci/run`` does so after installing Chromium (``.ci/chromium``).
It opens the offline copy, ``build/pytorch-cookbook-site.zip`` unpacked into a temporary
folder, from disk (``file://``), with every host name unresolvable and a dead proxy: what loads
must come from the zip. Screenshots go to ``build/site-screenshots/``.
"""

from __future__ import annotations

import json
import re
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_plus, unquote, urlsplit

import pytest

from helpers.authoring import course, site

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS = site.BUILD / "site-screenshots"
# query -> (page, words the section's anchor holds): the section that answers the query, found by
# hand in the notebooks. Three kinds: an API name, an error message pasted whole (or its first
# line, as notebooks/ERRORS.md lists it), a task in a practitioner's words.
BOOK = "cookbook/"
VIEW_ERROR = (
    "RuntimeError: view size is not compatible with input tensor's size and stride (at least one "
    "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
)
DETECTION = f"{BOOK}07_training_loop_detection_recipes.html"
SEARCHES = {
    # API names: the section that teaches the name, not the first page that calls it.
    "ModuleList": (f"{BOOK}04_modules_recipes.html", "build-a-model-three-ways"),
    "FlopCounterMode": (f"{BOOK}10_speedups_recipes.html", "hardware-limit"),
    "pack_padded_sequence": (f"{BOOK}05_datasets_dataloaders_recipes.html", "pack-padded-sequence"),
    "DistributedSampler": (
        f"{BOOK}09_ddp_syncbn_recipes.html",
        "own-shard-with-distributedsampler",
    ),
    "register_forward_hook": (f"{BOOK}04_modules_recipes.html", "forward-hooks"),
    # Error messages: the recipe that explains and fixes the error.
    VIEW_ERROR: (f"{BOOK}02_contiguity_strides_recipes.html", "fix-view-size-is-not-compatible"),
    "view size is not compatible with input tensor's size and stride": (
        f"{BOOK}02_contiguity_strides_recipes.html",
        "fix-view-size-is-not-compatible",
    ),
    "Trying to backward through the graph a second time": (
        f"{BOOK}03_autograd_recipes.html",
        "pitfall-trying-to-backward-through-the-graph",
    ),
    "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.": (
        f"{BOOK}03_autograd_recipes.html",
        "pitfall-a-leaf-variable",
    ),
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
    "cpu!": (f"{BOOK}13_reproducibility_debugging_recipes.html", "fix-a-device-mismatch"),
    "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 3] at entry 1": (
        f"{BOOK}01_tensors_recipes.html",
        "pitfall-stack-expects",
    ),
    # Tasks in a practitioner's words: every chapter's "Summary" must not win "model summary".
    "model summary": (f"{BOOK}04_modules_recipes.html", "count-its-parameters"),
    "count parameters": (f"{BOOK}04_modules_recipes.html", "count-its-parameters"),
    "FLOPs": (f"{BOOK}10_speedups_recipes.html", "hardware-limit"),
    "gradient checkpointing": (f"{BOOK}11_memory_recipes.html", "activation-checkpointing"),
    "learning rate schedule": (
        f"{BOOK}07_training_loop_recipes.html",
        "schedule-the-learning-rate",
    ),
    "early stopping": (f"{BOOK}07_training_loop_recipes.html", "stop-early"),
    # The questions most asked about PyTorch on Stack Overflow and the forums, typed as a reader
    # types them: the cookbook recipe or the lesson section that answers each.
    "view vs reshape": (f"{BOOK}01_tensors_recipes.html", "reshape-with-view"),
    "gather": (f"{BOOK}01_tensors_recipes.html", "index-select-gather"),
    "one-hot": (f"{BOOK}01_tensors_recipes.html", "one-hot"),
    "Can't call numpy() on Tensor that requires grad": (
        f"{BOOK}01_tensors_recipes.html",
        "pitfall-can-t-call-numpy",
    ),
    "zero_grad": (f"{BOOK}03_autograd_recipes.html", "reset-gradients"),
    "model.eval() and torch.no_grad()": (
        f"{BOOK}03_autograd_recipes.html",
        "use-model-eval-and-torch-no-grad",
    ),
    "nn.init": (f"{BOOK}04_modules_recipes.html", "initialise"),
    "freeze layers": (f"{BOOK}04_modules_recipes.html", "freeze-layers"),
    "nn.functional vs nn": (f"{BOOK}04_modules_recipes.html", "modules-and-f-xxx-functions"),
    'Unexpected key(s) in state_dict: "module.conv1.weight"': (
        f"{BOOK}04_modules_recipes.html",
        "unexpected-key-s-module",
    ),
    "map_location": (f"{BOOK}04_modules_recipes.html", "attempting-to-deserialize"),
    "num_workers": (f"{BOOK}05_datasets_dataloaders_recipes.html", "choose-num-workers"),
    "sample index": (f"{BOOK}05_datasets_dataloaders_recipes.html", "return-each-sample-s-index"),
    "LSTM input shape": (f"{BOOK}05_datasets_dataloaders_recipes.html", "rnn-lstm-or-gru"),
    "WeightedRandomSampler": (
        f"{BOOK}05_datasets_dataloaders_recipes.html",
        "weightedrandomsampler",
    ),
    "softmax dim": (f"{BOOK}06_losses_recipes.html", "softmax-over-the-wrong-dimension"),
    "current learning rate": (f"{BOOK}07_training_loop_recipes.html", "current-learning-rate"),
    "gradient clipping": (f"{BOOK}07_training_loop_recipes.html", "clip-gradients"),
    "AttributeError: 'DataParallel' object has no attribute 'fc'": (
        f"{BOOK}09_ddp_syncbn_recipes.html",
        "reach-the-wrapped-model",
    ),
    "mat1 and mat2 shapes cannot be multiplied": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "mat1-and-mat2-shapes-cannot-be-multiplied",
    ),
    "mat1 and mat2 must have the same dtype, but got Double and Float": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "same-dtype-but-got-double-and-float",
    ),
    "expected target dtype to be Long or Byte, but got Float": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "expected-target-dtype-to-be-long",
    ),
    "RuntimeError: CUDA error: device-side assert triggered": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "device-side-assert-triggered",
    ),
    "manual_seed": ("13_reproducibility_debugging.html", "same-seed-same-run"),
    "model not learning": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "model-that-does-not-learn",
    ),
    # Other words for a section's heading (website/conf.py's search aliases), and an error
    # pasted with the reader's own sizes, which the search leaves out.
    "initialize weights": (f"{BOOK}04_modules_recipes.html", "initialise-reset-and-copy"),
    "transfer learning": (f"{BOOK}04_modules_recipes.html", "fine-tune-a-pretrained-backbone"),
    "train test split": (f"{BOOK}05_datasets_dataloaders_recipes.html", "split-into-training"),
    "loss not decreasing": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "model-that-does-not-learn",
    ),
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x400 and 256x10)": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "mat1-and-mat2-shapes-cannot-be-multiplied",
    ),
    # A word no page holds (a platform, a GPU the course never names): the other words still find
    # the section, where a search that wants every word found nothing.
    "DataLoader hangs on OpenShift": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "dataloader-that-hangs",
    ),
    "training hangs on OpenShift": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "find-where-a-run-hangs",
    ),
    # "hang" is inside "chang" (the stem of "changes"): a short word's match inside a longer key
    # had sent this to "train() and eval(): batch norm changes what it computes"
    "training hangs": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "find-where-a-run-hangs",
    ),
    "torch.compile graph breaks on H100": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "graph-breaks-and-recompilations",
    ),
    # Detection, as the trackers ask it (pytorch/vision#2740, #8376, #1574; pytorch/pytorch#1512):
    # the pasted assertion, the symptom, the task.
    "AssertionError: All bounding boxes should have positive height and width. Found invalid box "
    "[500.7, 533.3, 231.1, 255.2] for target at index 0.": (DETECTION, "all-bounding-boxes"),
    "targets should not be none when in training mode": (DETECTION, "targets-should-not-be-none"),
    "Expected input images to be of floating type (in range [0, 1])": (DETECTION, "floating-type"),
    "fine-tune Faster R-CNN on my own dataset": (DETECTION, "fine-tune-a-detector"),
    "object detection": (DETECTION, "fine-tune-a-detector"),
    "bounding box augmentation": (DETECTION, "flip-and-crop"),
    "detection collate_fn": (DETECTION, "different-numbers-of-boxes"),
    "stack expects each tensor to be equal size boxes": (DETECTION, "stack-expects"),
    "validation loss Faster R-CNN": (DETECTION, "validation-loss"),
    # Training jobs, as the forums and trackers ask (pytorch/pytorch#44511; the DataLoader in
    # containers; DistributedSampler across epochs; weights_only with what people store).
    "UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`.": (
        f"{BOOK}07_training_loop_recipes.html",
        "detected-call-of-lr-scheduler-step",
    ),
    "RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error. It is possible "
    "that dataloader's workers are out of shared memory": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "dataloader",  # the shared-memory note of "Turn a DataLoader that hangs into an error"
    ),
    "DistributedSampler same order every epoch": (
        f"{BOOK}09_ddp_syncbn_recipes.html",
        "own-shard-with-distributedsampler",
    ),
    "WeightsUnpickler error: Unsupported global: GLOBAL numpy._core.multiarray.scalar was not "
    "an allowed global by default": (
        f"{BOOK}07_training_loop_recipes.html",
        "weights-only",  # the recipe, or its pitfall for NumPy numbers and a Namespace
    ),
    "_pickle.UnpicklingError: Weights only load failed": (
        f"{BOOK}07_training_loop_recipes.html",
        "weights-only",
    ),
    # torch.compile on a machine without a C++ compiler (pytorch/pytorch#92745).
    "torch._inductor.exc.InductorError: InvalidCxxCompiler: No working C++ compiler found in "
    "torch._inductor.config.cpp.cxx: (None, 'g++')": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "no-working-c",
    ),
    # Apple silicon: the two messages people paste from MPS.
    "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't "
    "support float64. Please use float32 instead.": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "apple-silicon",
    ),
    "NotImplementedError: The operator 'aten::unique_dim' is not currently implemented for the "
    "MPS device. If you want this op to be added in priority during the prototype phase of this "
    "feature, please comment on https://github.com/pytorch/pytorch/issues/77764. As a temporary "
    "fix, you can set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as "
    "a fallback for this op. WARNING: this will be slower than running natively on MPS.": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "apple-silicon",
    ),
    # An environment variable typed alone: the section that says what it does.
    "PYTORCH_ENABLE_MPS_FALLBACK": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "apple-silicon",
    ),
    "torch._inductor.exc.InductorError: CppCompileError: C++ compile error": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "cppcompileerror",
    ),
    # torch.export on an `if` that reads a value: today's message, the old strict-export one.
    "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on "
    "data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  (Size-like symbols: none)": (
        f"{BOOK}12_deployment_recipes.html",
        "could-not-guard-on-data-dependent",
    ),
    "torch._dynamo.exc.UserError: Dynamic control flow is not supported at the moment. Please "
    "use functorch.experimental.control_flow.cond to explicitly capture the control flow": (
        f"{BOOK}12_deployment_recipes.html",
        "could-not-guard-on-data-dependent",
    ),
    "torch._dynamo.exc.Unsupported: Data-dependent branching": (
        f"{BOOK}12_deployment_recipes.html",
        "could-not-guard-on-data-dependent",
    ),
    "torch.export data-dependent control flow": (
        f"{BOOK}12_deployment_recipes.html",
        "could-not-guard-on-data-dependent",
    ),
    # A practitioner's Function has its own name (the notebook's is OneGradientBackward).
    "RuntimeError: function GradReverseBackward returned an incorrect number of gradients "
    "(expected 2, got 1)": (f"{BOOK}03_autograd_recipes.html", "incorrect-number-of-gradients"),
    "TypeError: save_for_backward can only save variables, but argument 0 is of type float": (
        f"{BOOK}03_autograd_recipes.html",
        "can-only-save-variables",
    ),
    "gradient reversal layer": (f"{BOOK}03_autograd_recipes.html", "gradient-reversal-layer"),
    "channels_last slower than contiguous": (
        f"{BOOK}02_contiguity_strides_recipes.html",
        "channels-last-made-a-step-slower",
    ),
    "channels_last training slower on CPU": (
        f"{BOOK}02_contiguity_strides_recipes.html",
        "channels-last-made-a-step-slower",
    ),
    "gradcheck fails float32": (f"{BOOK}03_autograd_recipes.html", "gradcheck-fails"),
    # An independent set of practitioners' queries (forum and tracker threads), in their words:
    "expected 4-dimensional input got 3-dimensional input": (
        f"{BOOK}04_modules_recipes.html",
        "channels",  # the pitfall that names the old message
    ),
    "SummaryWriter tensorboard shows no data flush": (
        f"{BOOK}08_tensorboard_recipes.html",
        "tensorboard-shows-no-data",
    ),
    "add_hparams creates new subfolder run": (
        f"{BOOK}08_tensorboard_recipes.html",
        "add-hparams",
    ),
    "reserved but unallocated expandable_segments": (
        f"{BOOK}11_memory_recipes.html",
        "caching-allocator",
    ),
    "torch.distributed Address already in use MASTER_PORT": (
        f"{BOOK}09_ddp_syncbn_recipes.html",
        "address-already-in-use",
    ),
    "num_workers windows can't pickle lambda": (
        f"{BOOK}05_datasets_dataloaders_recipes.html",
        "pickle",
    ),
    "DDP hangs watchdog collective operation timeout": (
        f"{BOOK}09_ddp_syncbn_recipes.html",
        "watchdog",
    ),
    "element 0 of tensors does not require grad": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "element-0-of-tensors",
    ),
    # Warnings pasted whole, as ERRORS.md lists them (expect_warning's lines):
    "UserWarning: Using a target size (torch.Size([3])) that is different to the input size "
    "(torch.Size([3, 1])). This will likely lead to incorrect results due to broadcasting.": (
        f"{BOOK}06_losses_recipes.html",
        "broadcast",
    ),
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone()": (
        f"{BOOK}02_contiguity_strides_recipes.html",
        "clone",
    ),
    "optimizer state on the wrong device after resuming load_state_dict": (
        f"{BOOK}07_training_loop_recipes.html",
        "after-resuming",
    ),
    "only batches of spatial targets supported (3D tensors) but got targets of dimension: 4": (
        f"{BOOK}07_training_loop_detection_recipes.html",
        "segmentation-targets",
    ),
    "segmentation mask augmentation v2 nearest": (
        f"{BOOK}07_training_loop_detection_recipes.html",
        "segmentation-targets",
    ),
    "loss nan fp16 autocast GradScaler skips every step": (
        f"{BOOK}07_training_loop_recipes.html",
        "under-float16-autocast",
    ),
    # pytorch/pytorch#11201: batches kept alive hold a file descriptor each.
    "RuntimeError: Too many open files. Communication with the workers is no longer possible. "
    "Please increase the limit using `ulimit -n` in the shell or change the sharing strategy by "
    "calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
    "your code": (
        f"{BOOK}13_reproducibility_debugging_recipes.html",
        "too-many-open-files",
    ),
    "AttributeError: Can't pickle local object 'get_transform.<locals>.<lambda>'": (
        f"{BOOK}05_datasets_dataloaders_recipes.html",
        "pickle",
    ),
    # pytorch/pytorch#40497: a nan many steps in, with a model in float16 and Adam.
    "adam nan after many steps model.half() eps": (
        f"{BOOK}07_training_loop_recipes.html",
        "adam-turns-the-weights",
    ),
    "AttributeError: Can't get local object 'get_transform.<locals>.<lambda>'": (
        f"{BOOK}05_datasets_dataloaders_recipes.html",
        "pickle",
    ),
    "WeightsUnpickler error: Unsupported global: GLOBAL numpy._core.multiarray._reconstruct was "
    "not an allowed global by default": (
        f"{BOOK}07_training_loop_recipes.html",
        "weights-only",
    ),
}
LOCAL_SCHEMES = {"file", "data", "blob", "about", "chrome", "chrome-extension", "devtools"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline copy, unpacked: the folder holding index.html."""
    if not site.ZIP.is_file():
        pytest.fail(f"no {site.ZIP.relative_to(course.ROOT)}: run `make site` first")
    out = tmp_path_factory.mktemp("offline-site")
    with zipfile.ZipFile(site.ZIP) as zf:
        zf.extractall(out)
    (folder,) = out.iterdir()
    return folder


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    """Headless Chromium that can reach no other machine; fails (never skips) without it."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail(
            "Chromium is missing: run .ci/chromium (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--window-size=1280,900", "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    chrome = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    chrome.set_page_load_timeout(60)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield chrome
    chrome.quit()


def open_page(driver, url: str) -> None:
    """Load ``url`` and wait until its scripts settled: document loaded, MathJax typeset."""
    driver.get(url)
    for _ in range(200):
        if driver.execute_script("return document.readyState") == "complete":
            break
        time.sleep(0.05)
    driver.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const mj = window.MathJax;
        if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(done, done);
        else done();"""
    )


def jump_to(driver, element, block: str) -> None:
    """Scroll ``element`` into view at once (the theme scrolls smoothly, and a click during the
    animation lands where the element was)."""
    driver.execute_script(
        "arguments[0].scrollIntoView({block: arguments[1], behavior: 'instant'});", element, block
    )


def read_logs(driver) -> tuple[list[str], set[str]]:
    """Return the console errors and the URLs requested since the last call."""
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    requested = set()
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.add(message["params"]["request"]["url"])
    return errors, requested


def broken_images(driver) -> list[str]:
    """Return the images of the page that did not load (each scrolled into view first)."""
    return driver.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const images = Array.from(document.images);
        images.forEach((img) => { img.loading = "eager"; img.scrollIntoView(); });
        Promise.all(images.map((img) => img.decode().catch(() => null))).then(() =>
            done(images.filter((img) => !(img.complete && img.naturalWidth > 0))
                       .map((img) => img.getAttribute("src"))));"""
    )


@dataclass
class Visit:
    """What one page showed when opened: console errors, images that did not load, requests to
    other machines, every link's target, and its notebook header (stamp, run time shown)."""

    errors: list[str]
    broken: list[str]
    remote: list[str]
    hrefs: list[str]
    stamp: str
    run_time_shown: bool


@pytest.fixture(scope="module")
def visits(driver, root: Path) -> dict[str, Visit]:
    """Every page of the site opened once, by its path under the root (the tests below read it)."""
    from selenium.webdriver.common.by import By

    seen = {}
    read_logs(driver)
    for page in site.pages(root):
        open_page(driver, page.as_uri())
        broken = broken_images(driver)
        errors, requested = read_logs(driver)
        hrefs = driver.execute_script(
            "return Array.from(document.querySelectorAll('a[href]'), (a) => a.href);"
        )
        stamps = driver.find_elements(By.CSS_SELECTOR, ".verified-stamp")
        run_time = driver.find_elements(By.XPATH, "//p[strong[text()='Run time:']]")
        seen[page.relative_to(root).as_posix()] = Visit(
            errors=errors,
            broken=broken,
            remote=sorted(u for u in requested if urlsplit(u).scheme not in LOCAL_SCHEMES),
            hrefs=hrefs,
            stamp=stamps[0].text if stamps else "",
            run_time_shown=bool(run_time) and run_time[0].is_displayed(),
        )
    return seen


def test_every_page_opens_from_disk_without_errors(visits: dict[str, Visit]):
    """Each page: no JavaScript error in the console, every image loaded, no remote request."""
    assert len(visits) >= 19, list(visits)
    for name, visit in visits.items():
        assert visit.errors == [], f"{name}: console errors {visit.errors}"
        assert visit.broken == [], f"{name}: images not loaded {visit.broken}"
        assert visit.remote == [], f"{name}: requests to other machines {visit.remote}"


def test_math_renders_offline(driver, root: Path):
    open_page(driver, (root / "03_autograd.html").as_uri())
    rendered = driver.execute_script("return document.querySelectorAll('mjx-container').length")
    failed = driver.execute_script("return document.querySelectorAll('mjx-merror').length")
    assert rendered > 10 and failed == 0, (rendered, failed)


@pytest.mark.parametrize("query", list(SEARCHES))
def test_search_leads_to_the_section_that_answers(driver, root: Path, query: str):
    from selenium.webdriver.common.by import By

    page, word = SEARCHES[query]
    url = (root / "search.html").as_uri() + "?q=" + quote_plus(query)
    if query == VIEW_ERROR or urlsplit(driver.current_url).path != urlsplit(url).path:
        open_page(driver, url)  # as a reader arrives: the query in the address
    else:
        # The search page is open: the query goes into its address (the course's scorer reads
        # it there) and the page's own search function runs it, the call the page makes on
        # loading (reloading the page and its index for each of the ~70 queries took ~50 s).
        driver.execute_script(
            """Search.stopPulse();
            history.replaceState(null, '', '?q=' + encodeURIComponent(arguments[0]));
            document.getElementById('search-results').replaceChildren();
            document.querySelectorAll('input[name="q"]').forEach((el) => (el.value = arguments[0]));
            Search.performSearch(arguments[0]);""",
            query,
        )
    summary = ""
    for _ in range(200):
        found = driver.find_elements(By.CSS_SELECTOR, "#search-results p.search-summary")
        summary = found[0].text if found else ""
        if summary.strip():
            break
        time.sleep(0.05)
    links = driver.find_elements(By.CSS_SELECTOR, "#search-results ul.search li > a")
    assert links, f"{query!r}: no results ({summary!r})"
    first = urlsplit(links[0].get_attribute("href"))
    # The page as a path under the site's root: cookbook pages lie in a folder.
    name = Path(unquote(first.path)).resolve().relative_to(root.resolve()).as_posix()
    anchor = first.fragment
    record = SHOTS / "search-results.json"
    results = json.loads(record.read_text()) if record.is_file() else {}
    results[query] = f"{name}#{anchor} ({links[0].text})"
    record.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    if query == VIEW_ERROR:
        driver.save_screenshot(str(SHOTS / "search-results.png"))
    assert (name, word in anchor) == (page, True), f"{query!r}: first result {name}#{anchor}"
    assert not read_logs(driver)[0]
    # The section is there, headed (read from the page's file: loading each result page in the
    # browser too took a minute over the searches; the pages are opened by the tests above).
    html = (root / name).read_text(encoding="utf-8")
    assert re.search(rf'<section id="{re.escape(anchor)}">\s*<h[1-4]', html), (
        f"{query!r}: no section #{anchor} on {name}"
    )


def test_buttons_of_every_notebook_page(visits: dict[str, Visit], root: Path):
    """Open in Colab points at this notebook (the one repository URL), the download is this
    notebook as stored, "view source" shows it on GitHub."""
    for path in course.notebook_paths():
        visit = visits[f"{site.docname(path)}.html"]
        colab = {h for h in visit.hrefs if h.startswith("https://colab.research.google.com/")}
        assert colab == {course.colab_url(path)}, f"{path.name}: {colab}"
        source = f"{course.REPO_URL}/blob/{course.BRANCH}/notebooks/{course.rel(path)}?plain=1"
        assert source in visit.hrefs, f"{path.name}: no view-source link {source}"
        download = root / "_sources" / course.rel(path)
        assert download.as_uri() in visit.hrefs, f"{path.name}: no download link"
        stored = json.loads(path.read_text(encoding="utf-8"))
        offered = json.loads(download.read_text(encoding="utf-8"))
        assert [c["source"] for c in offered["cells"]] == [c["source"] for c in stored["cells"]]
        assert f"torch {site.torch_version()}" in visit.stamp, visit.stamp
        assert visit.run_time_shown, f"{path.name}: the run time is not shown"


def test_a_solution_is_hidden_until_its_toggle_is_clicked(driver, root: Path):
    from selenium.webdriver.common.by import By

    open_page(driver, (root / "01_tensors.html").as_uri())
    cells = driver.find_elements(By.CSS_SELECTOR, "div.cell.tag_solution")
    assert cells, "no solution cell on 01_tensors.html"
    cell = cells[0]
    code = cell.find_element(By.CSS_SELECTOR, "div.cell_input")
    assert not code.is_displayed(), "the solution shows before it is opened"
    toggle = cell.find_element(By.CSS_SELECTOR, "details > summary")
    # The theme scrolls smoothly: jump instead, so the click lands where the toggle is.
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'});", toggle
    )
    toggle.click()
    for _ in range(100):
        if code.is_displayed():
            break
        time.sleep(0.05)
    assert code.is_displayed(), "the solution did not open"
    assert "✓" in cell.text, "the opened solution shows its check"
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'start', behavior: 'instant'});", cell
    )
    driver.execute_script("window.scrollBy({top: -120, behavior: 'instant'});")
    driver.save_screenshot(str(SHOTS / "solution-opened.png"))


def test_screenshot_of_a_notebook_page_with_a_plot(driver, root: Path):
    from selenium.webdriver.common.by import By

    open_page(driver, (root / "06_losses.html").as_uri())
    plots = driver.find_elements(By.CSS_SELECTOR, "div.cell_output img")
    assert plots, "no plot on 06_losses.html"
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'});", plots[0]
    )
    assert driver.execute_script("return arguments[0].naturalWidth", plots[0]) > 0
    driver.save_screenshot(str(SHOTS / "notebook-plot.png"))


def test_an_old_link_to_a_recipe_that_moved_lands_on_it_in_the_cookbook(driver, root: Path):
    """Chapters 01-13 were recipe notebooks; their recipes moved to the cookbook pages. A link
    to a recipe on the lesson's page (made before the move) goes on to the same section of the
    cookbook page; a link to one of the lesson's own sections stays."""
    goes_on(
        driver,
        root / "01_tensors.html",
        "know-float16-and-bfloat16",
        "cookbook/01_tensors_recipes.html",
    )
    own = (root / "01_tensors.html").as_uri() + "#an-image-is-a-grid-of-numbers"
    open_page(driver, own)
    time.sleep(0.5)
    assert urlsplit(driver.current_url).path.endswith("/01_tensors.html"), driver.current_url
    # Chapter 10's cookbook continues in a second page: the first page sends the link on.
    goes_on(
        driver,
        root / "10_speedups.html",
        "compile-a-model-and-time-the-compilation-separately",
        "cookbook/10_speedups_inference_recipes.html",
    )
    # Chapter 09's cookbook too: an old link to FSDP2 on its first page goes on to the second.
    goes_on(
        driver,
        root / "cookbook" / "09_ddp_syncbn_recipes.html",
        "shard-a-model-with-fsdp2",
        "cookbook/09_ddp_syncbn_big_models_recipes.html",
    )
    # And chapter 12's, from the lesson: on to the first cookbook page, then to the second.
    goes_on(
        driver,
        root / "12_deployment.html",
        "compile-ahead-of-time-with-aotinductor",
        "cookbook/12_deployment_routes_recipes.html",
    )


def goes_on(driver, page: Path, anchor: str, lands_on: str) -> None:
    """Open ``page#anchor`` and wait until the site's script has sent it on to ``lands_on``,
    the page that holds the section."""
    open_page(driver, page.as_uri() + "#" + anchor)
    deadline = time.monotonic() + 20  # a loaded machine takes its time; a quiet one, 0.1 s
    while not driver.current_url.split("#")[0].endswith(lands_on) and time.monotonic() < deadline:
        time.sleep(0.05)
    moved = urlsplit(driver.current_url)
    assert moved.path.endswith("/" + lands_on) and moved.fragment == anchor, driver.current_url
    assert driver.execute_script("return !!document.getElementById(arguments[0])", anchor)


def test_a_code_cell_shows_nearly_the_course_s_line_length_at_1280_px(driver, root: Path):
    """Code runs to 100 characters a line; at a 1280 px window (the driver's) a lesson's code
    column shows at least 96 of them before its scroll bar (it showed about 80 with the theme's
    defaults)."""
    open_page(driver, (root / "09_ddp_syncbn.html").as_uri())
    width, per_char = driver.execute_script(
        """const pre = document.querySelector('div.cell_input pre');
        const probe = document.createElement('span');
        probe.textContent = 'x'.repeat(100);
        pre.appendChild(probe);
        const result = [pre.clientWidth, probe.getBoundingClientRect().width / 100];
        probe.remove();
        return result;"""
    )
    assert width / per_char >= 96, f"{width} px hold {width / per_char:.0f} characters"


def test_the_tensorboard_pictures_are_taken_from_the_real_tensorboard(driver, tmp_path):
    """Lesson 08 shows pictures of TensorBoard's pages for readers who cannot run it: the code
    that makes them (helpers.authoring.pictures) takes them again from the lesson's runs, with a
    real TensorBoard and this Chromium, as pictures of the committed ones' size with the page's
    many colours (a blank or error page has few)."""
    from PIL import Image

    from helpers.authoring import pictures
    from helpers.board import PICTURES

    if not all((pictures.LESSON_RUNS / run).is_dir() for run in pictures.RUNS):
        execute_in_memory(course.NOTEBOOKS / "08_tensorboard.ipynb")  # it writes the runs
    for path in pictures.take(pictures.LESSON_RUNS, tmp_path):
        taken, committed = Image.open(path), Image.open(PICTURES / path.name)
        assert taken.size == committed.size, path.name
        assert pictures.colours(path.read_bytes()) > pictures.MIN_COLOURS, path.name


def execute_in_memory(path: Path) -> None:
    """Run a notebook in its folder without writing it (nbclient)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(path.parent)}}).execute()
