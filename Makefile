# The course's two commands are `make lab` and `make test`; each sets up what it needs.
# The other targets are for authors: `make notebooks` builds notebooks from their text twins
# and executes them (NB=notebooks/01_tensors.ipynb for one), `make index` regenerates the
# generated docs, `make bench` measures chapter 10's speedup ladder, `make lock` re-pins the
# tested environment, `make test-latest` runs the suite against the newest releases unpinned
# (`make drift` reports what they change),
# `make site` builds the course website from the stored notebooks (build/site/ and an offline
# zip), `make site-test` checks it: links, pages, and headless Chromium (CI: .ci/run).
# `make test-avx2` runs the tests on the AVX2 code paths (what .ci/run does), `make test-floor`
# runs every notebook on the oldest versions the course declares.

PYTHON ?= python3
VENV   := .venv
PY     := $(CURDIR)/$(VENV)/bin/python
STAMP  := $(VENV)/.installed
NB     ?= notebooks/[0-9]*.ipynb
# The exact versions the stored outputs were made with (pip constraints); `make lab LOCK=`
# installs without them, e.g. on a Python the lock has no wheels for.
LOCK   ?= requirements-lock.txt
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup lab restore data doctor student test lint pytest notebooks twins index pictures durations bench lock latest-venv test-latest drift test-load test-colab test-floor test-avx2 site student-site site-test site-check lab-check clean

setup: $(STAMP)

# Reinstall only when the requirements, the lock or the package metadata change.
# Byte-code: pip compiles every module of every wheel (~18,000 files: half of the lock's install,
# 72 s -> 36 s on 2 cores without it), while Python compiles a module itself the first time it is
# imported and keeps the result: the course imports ~5,000 of them (about 15 CPU-s, once). So the
# install skips it (--no-compile) unless PYTHONDONTWRITEBYTECODE is set: then nothing imported
# would be kept, and every process would compile torch again.
COMPILE := $(if $(PYTHONDONTWRITEBYTECODE),,--no-compile)
# With the lock, its pins go in first with two pips side by side (helpers/authoring/lockinstall.py,
# about 1.6x faster on 2 cores: one pip unpacks and compiles on one core); the plain install then
# only adds the project, or does it all where the lock was made for another Python or platform.
$(STAMP): requirements.txt pyproject.toml $(LOCK)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(LOCK),$(PY) helpers/authoring/lockinstall.py $(LOCK) $(COMPILE))
	$(PY) -m pip install -q $(COMPILE) -r requirements.txt $(if $(LOCK),-c $(LOCK)) -e .
	@touch $@

# Bound to 127.0.0.1 only; root (containers, workshop VMs) needs allow_root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True)

# The course opens from work/, the learner's git-ignored copy of notebooks/ (seeded the first
# time, never overwritten), so running a notebook never changes its stored reference outputs.
# Authors open the tracked notebooks with `make lab LAB_DIR=notebooks`.
LAB_DIR ?= work
lab: $(STAMP)
	$(if $(filter work,$(LAB_DIR)),$(PY) -m helpers.workcopy sync)
	$(PY) -m jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(LAB_DIR) $(ROOT_FLAG)

# Put back the stored version of notebooks in work/: `make restore WHICH="01 03"` or WHICH=all.
restore: $(STAMP)
	@test -n "$(WHICH)" || { echo 'make restore: say which, e.g. WHICH="01 03" or WHICH=all' >&2; exit 2; }
	$(PY) -m helpers.workcopy restore $(if $(filter all,$(WHICH)),--all,$(WHICH))

data: $(STAMP)
	$(PY) -m helpers.data fetch

# Pre-flight check of this machine for a workshop: versions, devices, data, disk, JupyterLab.
doctor: $(STAMP)
	$(PY) -m helpers.doctor

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Unit tests and nbval over every notebook in one pytest run, two files at a time side by side
# (pytest-xdist; a notebook's cells stay together in one kernel, longest notebooks first): the
# notebooks' checks hold with the other core busy. JOBS=0: one at a time, in one process (the
# run times for the headers are recorded only then). Exit code 5 (nothing collected) is a
# failure with its own message.
JOBS ?= 2
pytest: $(STAMP)
	@$(PY) -m pytest tests notebooks --nbval --nbval-current-env -n $(JOBS) --dist loadfile \
		--no-loadscope-reorder \
		--nbval-sanitize-with tests/sanitize.cfg --nbval-cell-timeout=600 $(PYTEST_ARGS); \
	rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$rc

test: $(STAMP) data lint pytest

# The notebooks' checks under load: nbval runs LOAD_NB LOAD_TIMES times while another process
# keeps one core busy (timing claims strict, as under `make test`); prints each round's result
# and fails if any round failed.
LOAD_NB ?= notebooks/07_training_loop.ipynb notebooks/09_ddp_syncbn.ipynb \
	notebooks/10_speedups.ipynb notebooks/12_deployment.ipynb
LOAD_TIMES ?= 5
test-load: $(STAMP) data
	@mkdir -p build
	@$(PY) -c "while True: pass" & spinner=$$!; trap 'kill $$spinner' EXIT; failed=0; \
	for round in $$(seq $(LOAD_TIMES)); do \
		COOKBOOK_STRICT_CLAIMS=1 $(PY) -m pytest -q -p no:cacheprovider $(LOAD_NB) --nbval \
			--nbval-current-env --nbval-sanitize-with tests/sanitize.cfg > build/load-$$round.log 2>&1; \
		rc=$$?; echo "test-load: round $$round of $(LOAD_TIMES): exit $$rc, $$(tail -n 1 build/load-$$round.log)"; \
		[ $$rc -eq 0 ] || failed=$$((failed + 1)); \
	done; \
	echo "test-load: $$failed of $(LOAD_TIMES) rounds failed (logs: build/load-N.log)"; [ $$failed -eq 0 ]

# Student copies: every notebook without its solutions, with what it needs to run, the website
# built without solutions (site/), and a zip (student/pytorch-cookbook/ and
# student/pytorch-cookbook-student.zip, git-ignored).
student: $(STAMP)
	$(PY) -m helpers.authoring.student

# The course website: the notebooks as stored (nothing executed), the indexes and the guide,
# built by Sphinx with website/conf.py into build/site/, zipped into
# build/pytorch-cookbook-site.zip, which opens from disk with no network. Warnings are errors.
site: $(STAMP)
	$(PY) -m helpers.authoring.site

# A learner's session in headless Chromium (tests/jupyterlab_open_save.py): JupyterLab on a
# working copy, every notebook opened and saved unchanged, 03 run with Run All, git status
# unchanged. Needs Debian's chromium and chromium-driver (.ci/chromium).
lab-check: $(STAMP)
	$(PY) tests/jupyterlab_open_save.py

# The built site's checks (tests/site_built.py: links and anchors, nothing loaded from elsewhere,
# the pages; tests/site_browser.py: headless Chromium on the offline zip, screenshots in
# build/site-screenshots/). Needs Debian's chromium and chromium-driver (.ci/chromium).
site-test: site student-site
	@$(MAKE) --no-print-directory site-check

# The student bundle's website alone (no solutions, the student README as landing page), in
# build/site-work-student/site/, which site-check checks too.
student-site: $(STAMP)
	$(PY) -m helpers.authoring.student --site-only

# The same checks on the sites as last built (.ci/run builds them while the tests run).
site-check: $(STAMP)
	$(PY) -m pytest tests/site_built.py tests/site_browser.py

# Build each notebook from its twin in notebooks/src/, execute it, regenerate the index.
notebooks: $(STAMP) data
	$(PY) -m helpers.authoring.course execute $(NB)
	$(PY) -m helpers.authoring.course index

# Write the twins from the notebooks (after editing a notebook in JupyterLab without jupytext).
twins: $(STAMP)
	$(PY) -m helpers.authoring.course twins $(NB)

index: $(STAMP)
	$(PY) -m helpers.authoring.course index

# Lesson 08's pictures of TensorBoard's pages (helpers/pictures/), taken by headless Chromium
# from a real TensorBoard on the lesson's runs: after the lesson has run (`make test`).
pictures: $(STAMP)
	$(PY) -m helpers.authoring.pictures

# Record the notebook durations of the last `make test` (helpers/results/durations.json) and
# regenerate the run-time lines of the headers and the README from them.
durations: $(STAMP)
	$(PY) -m helpers.authoring.course durations

# Chapter 10's speedup ladder on this machine's best device (DEVICE=cpu to choose); writes
# helpers/results/ladder-<device>.json, which chapter 10 shows with its provenance.
bench: $(STAMP) data
	$(PY) -m helpers.ladder $(if $(DEVICE),--device $(DEVICE))

# Re-pin: install the newest releases that requirements.txt allows into a scratch venv and
# freeze them. Then `make notebooks` and `make test`, and commit the lock with the outputs.
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q -r requirements.txt
	{ echo "# The tested environment: exact versions for 'pip install -r requirements.txt -c $(LOCK)'."; \
	  echo "# Made by 'make lock' with Python $$(.venv-lock/bin/python -c 'import platform; print(platform.python_version())') on $$(uname -sm); do not edit by hand."; \
	  .venv-lock/bin/python -m pip freeze --exclude-editable; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	rm -rf .venv-lock

# The suite against the newest releases, without the lock, in its own venv: drift shows up here
# on purpose (stored outputs made with the lock may differ) before `make lock` adopts it.
LATEST_VENV := .venv-latest
latest-venv:
	rm -rf $(LATEST_VENV)
	$(PYTHON) -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install -q --upgrade pip
	$(LATEST_VENV)/bin/python -m pip install -q -r requirements.txt -e .
	@touch $(LATEST_VENV)/.installed
	$(LATEST_VENV)/bin/python -m pip freeze --exclude-editable | grep -iE '^(torch|torchvision|numpy)=='

test-latest: latest-venv
	$(MAKE) data lint pytest VENV=$(LATEST_VENV) LOCK=

# What the newest releases change, as a report (the weekly workflow's artifact): the tests and
# every notebook on the newest releases, then build/drift/report.md (versions against the lock,
# changed stored outputs, failed checks and tests). Exits 1 when an output, a check or a test
# changed. It also resolves the requirements for Python 3.13, which every run leaves to it.
DRIFT := build/drift
drift: latest-venv
	rm -rf $(DRIFT)
	mkdir -p $(DRIFT)
	-COOKBOOK_NEWER_PYTHONS="3.12 3.13" $(MAKE) data pytest VENV=$(LATEST_VENV) LOCK= \
		PYTEST_ARGS="--junitxml=$(DRIFT)/junit.xml -o junit_family=xunit1"
	$(LATEST_VENV)/bin/python -m helpers.authoring.drift --junit $(DRIFT)/junit.xml \
		--lock requirements-lock.txt --python $(LATEST_VENV)/bin/python --out $(DRIFT)

# The Colab route, without Colab: a fresh venv with only what a notebook's setup cell installs
# (the package with its `notebooks` extra, newest releases, no lock), then each notebook alone
# in an empty folder (build/colab/NN_name/), run top to bottom ignoring cell tags, data from
# $$COOKBOOK_DATA_MIRROR or the official sources into its ./data. Not part of `make test`.
COLAB_VENV := .venv-colab
test-colab: $(STAMP)
	rm -rf $(COLAB_VENV)
	$(PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install -q --upgrade pip
	$(COLAB_VENV)/bin/python -m pip install -q ".[notebooks]" ipykernel
	$(COLAB_VENV)/bin/python -m pip freeze | grep -iE '^(torch|torchvision|numpy)=='
	$(PY) -m helpers.authoring.colab --python $(COLAB_VENV)/bin/python $(filter-out notebooks/[0-9]*.ipynb,$(NB))

# The declared floors, tested: a fresh venv with exactly the oldest versions pyproject.toml allows
# (requirements-floor.txt, torch 2.13 as Colab may ship it), then every notebook run the Colab
# way as in test-colab. The runner works from that venv too (nbclient beside the course's
# packages), so this needs one venv (about 6 GB), not the locked one as well. Not part of
# `make test`; the GitHub workflow runs it as its own job.
FLOOR_VENV := .venv-floor
test-floor:
	rm -rf $(FLOOR_VENV)
	$(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -m pip install -q --upgrade pip
	PIP_NO_CACHE_DIR=1 $(FLOOR_VENV)/bin/python -m pip install -q ".[notebooks]" ipykernel \
		nbclient nbformat -c requirements-floor.txt
	$(FLOOR_VENV)/bin/python -m pip freeze | grep -iE '^(torch|torchvision|numpy|torchao)=='
	$(FLOOR_VENV)/bin/python -m helpers.authoring.colab --python $(FLOOR_VENV)/bin/python \
		$(filter-out notebooks/[0-9]*.ipynb,$(NB))

# The tests on the AVX2 code paths, whatever this CPU has (an AVX-512 machine included): ATen's,
# oneDNN's and MKL's kernels limited to AVX2, as on an AMD Zen 3 or an older laptop. .ci/run
# runs `make test` this way (a stand-in: ONNX Runtime and numpy still see the real CPU); the
# stored outputs are recorded on the default path.
AVX2_ENV := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
test-avx2:
	$(AVX2_ENV) $(MAKE) test

clean:
	rm -rf $(VENV) .venv-lock .venv-latest $(COLAB_VENV) $(FLOOR_VENV) .pytest_cache .ruff_cache build
