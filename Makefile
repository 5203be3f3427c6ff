# The course's two commands are `make lab` and `make test`; each sets up what it needs.
# The other targets are for authors: `make notebooks` re-executes notebooks in place
# (NB=notebooks/01_tensors.ipynb for one), `make index` regenerates the generated docs.

PYTHON ?= python3
VENV   := .venv
PY     := $(CURDIR)/$(VENV)/bin/python
STAMP  := $(VENV)/.installed
NB     ?= notebooks/[0-9]*.ipynb
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup lab data test lint pytest notebooks index clean

setup: $(STAMP)

# Reinstall only when the requirements or the package metadata change.
$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt -e .
	@touch $@

# Bound to 127.0.0.1 only; root (containers, workshop VMs) needs allow_root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--ServerApp.allow_root=True)

lab: $(STAMP)
	$(PY) -m jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=notebooks $(ROOT_FLAG)

data: $(STAMP)
	$(PY) -m helpers.data fetch

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Unit tests and nbval over every notebook in one pytest run; exit code 5 (nothing collected)
# is a failure with its own message.
pytest: $(STAMP)
	@$(PY) -m pytest tests notebooks --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg --nbval-cell-timeout=600; \
	rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$rc

test: $(STAMP) data lint pytest

notebooks: $(STAMP) data
	$(PY) -m helpers.course execute $(NB)
	$(PY) -m helpers.course index

index: $(STAMP)
	$(PY) -m helpers.course index

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
