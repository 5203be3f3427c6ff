"""requirements.txt and environment.yml list the same packages with the same floors."""

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
