"""The transformers range in pyproject.toml stops below the first release that removes a keyword proctor
passes: the installed transformers announces its removals (``deprecate_kwarg(name, version)``), and
every announced name proctor's source uses must be removed no earlier than the range's upper bound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO

transformers = pytest.importorskip("transformers")
tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml with tomllib")

SRC = REPO / "src" / "proctor"
PYPROJECT = REPO / "pyproject.toml"
ANNOUNCED = re.compile(r'deprecate_kwarg\(\s*"(\w+)"[^)]*?(?:version=)?"v?(\d+\.\d+(?:\.\d+)?)"')


def _transformers_requirement() -> Requirement:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    (spec,) = [Requirement(r) for r in extras["hf"] if Requirement(r).name == "transformers"]
    return spec


def test_the_transformers_range_ends_before_a_removal_proctor_would_trip_on():
    spec = _transformers_requirement()
    assert Version(transformers.__version__) in spec.specifier, "the installed transformers is outside proctor's range"
    uppers = [Version(s.version) for s in spec.specifier if s.operator == "<"]
    assert uppers, "transformers has no upper bound in pyproject.toml"
    installed = Version(transformers.__version__)
    removals: dict[str, Version] = {}
    for path in Path(transformers.__file__).parent.rglob("*.py"):
        for name, version in ANNOUNCED.findall(path.read_text(encoding="utf-8", errors="replace")):
            if Version(version) > installed:
                removals[name] = min(removals.get(name, Version(version)), Version(version))
    assert removals, "no announced removal found: the pattern no longer matches transformers' decorator"
    source = "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py"))
    used = {name: when for name, when in removals.items() if re.search(rf"\b{name}\s*=", source)}
    for name, when in used.items():
        assert min(uppers) <= when, f"proctor passes '{name}', removed in transformers {when}: bound the range below it"
