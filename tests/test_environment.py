"""requirements.txt and environment.yml list the same packages with the same floors, and
requirements-floor.txt pins exactly those floors."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(.*)$")


def parse(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, spec = REQUIREMENT.match(line).groups()
        found[name.lower().replace("_", "-")] = spec.replace(" ", "")
    return found


def requirements() -> dict[str, str]:
    return parse((ROOT / "requirements.txt").read_text().splitlines())


def conda_pip_section() -> dict[str, str]:
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = lines.index("  - pip:") + 1
    return parse([line.strip()[2:] for line in lines[start:] if line.startswith("      - ")])


def test_environment_yml_matches_requirements_txt():
    assert requirements(), "requirements.txt lists no packages"
    assert conda_pip_section() == requirements()


def test_floors_allow_the_torch_on_this_disk():
    reqs = requirements()
    for name in ("torch", "torchvision"):
        assert reqs[name].startswith(">="), f"{name} must be a loose floor, not {reqs[name]}"
    assert "==" not in "".join(reqs.values()), "no exact pins: Colab ships its own versions"


# import name -> distribution name, for what the notebooks and helpers import
DISTRIBUTION = {"sklearn": "scikit-learn", "PIL": "pillow", "torch": "torch"}
PROVIDED_BY_TORCHVISION = {"pillow"}  # torchvision depends on it
STANDARD = set(__import__("sys").stdlib_module_names) | {"helpers"}


def notebook_imports() -> set[str]:
    """Top-level modules imported by any notebook's code cells."""
    import ast

    import nbformat

    from helpers.authoring.course import written_files

    found, own = set(), set()
    for path in sorted((ROOT / "notebooks").glob("**/[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        own |= {Path(name).stem for name in written_files(nb)}  # modules the notebook writes
        for cell in nb.cells:
            if cell.cell_type != "code" or cell.source.lstrip().startswith("%"):
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.split(".")[0])
    return found - STANDARD - own


def pyproject_packages() -> dict[str, str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return parse([*project["dependencies"], *project["optional-dependencies"]["notebooks"]])


def test_the_notebooks_extra_installs_everything_the_notebooks_import():
    """A Colab setup cell installs pytorch-cookbook[notebooks]: it must cover every import."""
    declared = set(pyproject_packages()) | PROVIDED_BY_TORCHVISION
    needed = {DISTRIBUTION.get(name, name).lower() for name in notebook_imports()}
    assert needed, "no imports found in the notebooks"
    assert needed <= declared, f"missing from pyproject.toml: {sorted(needed - declared)}"


def test_pyproject_floors_agree_with_requirements_txt():
    reqs = requirements()
    assert {name: reqs[name] for name in pyproject_packages()} == pyproject_packages()


def test_colab_setup_cells_install_the_notebooks_extra():
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("**/[0-9][0-9]_*.ipynb")):
        setup = nbformat.read(path, as_version=4).cells[1].source
        assert '"pytorch-cookbook[notebooks] @ git+' in setup, path.name


def test_the_lock_pins_every_requirement_exactly():
    """make lab/test install with -c requirements-lock.txt: every package they need is pinned."""
    lock = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            lock[name.lower().replace("_", "-")] = version
    missing = sorted(set(requirements()) - set(lock))
    assert missing == [], f"not pinned in requirements-lock.txt: {missing}"
    assert lock["torch"].startswith("2.") and lock["torchvision"].startswith("0.")
    assert "LOCK   ?= requirements-lock.txt" in (ROOT / "Makefile").read_text()


def test_the_floor_constraints_pin_exactly_the_declared_floors():
    """`make test-floor` installs requirements-floor.txt: it must pin each package of the package
    and its notebooks extra at its declared floor, so the floors are the versions tested."""
    from packaging.version import Version

    floors = parse((ROOT / "requirements-floor.txt").read_text().splitlines())
    declared = pyproject_packages()
    assert set(floors) == set(declared)
    for name, spec in declared.items():
        assert spec.startswith(">="), f"{name}: a floor, not {spec}"
        pin = floors[name].split(",")[0]  # torch also excludes a CPU-only local build
        assert pin.startswith("==") and Version(pin[2:]) == Version(spec[2:]), (
            f"{name}: {floors[name]} vs the floor {spec}"
        )
    assert requirements()["torch"] == declared["torch"] and requirements()["torch"] == ">=2.13"
    makefile = (ROOT / "Makefile").read_text()
    workflow = (ROOT / ".github" / "workflows" / "test.yml").read_text()
    assert "-c requirements-floor.txt" in makefile and "make test-floor" in workflow


def test_every_helpers_package_is_installed_with_it():
    """A Colab install gets only the packages pyproject.toml lists: each folder of helpers/
    that the notebooks import (all but the authors' tools) must be one of them."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    folders = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "helpers").rglob("__init__.py")
        if "authoring" not in p.parts
    }
    assert folders <= listed, f"add to [tool.setuptools] packages: {sorted(folders - listed)}"
