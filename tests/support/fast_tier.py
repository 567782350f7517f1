"""The one-minute tier: which tests a plain ``pytest`` runs (issue 48). ``tests/conftest.py`` names these hooks.

A test joins the tier by carrying the ``fast`` marker (``pytestmark = pytest.mark.fast`` at the top of a module,
or ``@pytest.mark.fast`` on one test): opting in, so that a new slow test lands in the full suite by default and
the tier's minute cannot grow unnoticed. Which runs select the tier:

- a bare ``pytest`` (no paths, no ``-m``): the fast tier; the rest is reported as deselected;
- ``pytest --full``: every test (what ``.ci/run`` runs);
- ``pytest PATH...`` or ``pytest -m EXPR``: every test the paths or the expression select, as before, because
  whoever names a file or a marker means those tests;
- ``pytest --fast [PATH...]``: only the fast tests, of the paths given too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

MARKER = "fast"
# Cheap and lenient: any file that may hold a fast test. The rest are not even imported in a fast-tier run,
# since importing every test module (torch, transformers, lm-eval...) takes longer than the tier's minute.
_MAY_BE_FAST = re.compile(r"\bmark\.fast\b")
# A fast test whose call takes longer than this (seconds) is named at the end of a fast-tier run: a hint to
# whoever made it slow, never a failure (timings depend on the machine's load). Setup is left out: the first
# user of a session fixture (the tiny Llama of tests/conftest.py) pays for every later one.
SLOW_FAST_TEST_S = 5.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tiers", "test tiers (tests/README.md, 'The fast tier')")
    group.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run every test (the CI suite); a bare `pytest` runs only the one-minute tier (tests marked fast)",
    )
    group.addoption(
        "--fast",
        action="store_true",
        default=False,
        help="run only the tests marked fast, of the paths given too",
    )


def fast_tier_only(config: pytest.Config) -> bool:
    """Whether this run keeps only the fast tests (the rules in this module's docstring)."""
    full, fast = config.getoption("--full"), config.getoption("--fast")
    if full or fast:
        return bool(fast)
    bare = config.args_source == pytest.Config.ArgsSource.TESTPATHS
    return bare and not config.option.markexpr


def may_hold_fast_tests(path: Path) -> bool:
    """Whether a test file's source names the fast marker (``pytest.mark.fast``, ``mark.fast``)."""
    return bool(_MAY_BE_FAST.search(path.read_text(encoding="utf-8", errors="replace")))


_TIER = pytest.StashKey["_FastTier"]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--full") and config.getoption("--fast"):
        raise pytest.UsageError("--full runs every test and --fast only the fast tier: give one of them")
    if fast_tier_only(config):
        tier = config.stash[_TIER] = _FastTier()
        config.pluginmanager.register(tier, "proctor-fast-tier")


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("--full"):
        return "tier: full (every test)"
    if _TIER in config.stash:
        return "tier: fast (tests marked fast; `pytest --full` runs every test)"
    return None


class _FastTier:
    """A fast-tier run: leaves out the files without fast tests and the tests not marked fast, times the calls
    of the rest, and says at the end what ran and which fast tests were slow."""

    def __init__(self) -> None:
        self.files_left_out = 0
        self.seconds: dict[str, float] = {}

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        is_test_file = collection_path.suffix == ".py" and collection_path.name.startswith("test_")
        if is_test_file and collection_path.is_file() and not may_hold_fast_tests(collection_path):
            self.files_left_out += 1
            return True
        return None

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep = [item for item in items if item.get_closest_marker(MARKER) is not None]
        if len(keep) < len(items):
            kept = set(map(id, keep))
            config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
            items[:] = keep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds.setdefault(report.nodeid, 0.0)  # every test that ran, its setup at least
        if report.when == "call":
            self.seconds[report.nodeid] += report.duration

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        deselected = len(terminalreporter.stats.get("deselected", []))
        terminalreporter.write_line(
            f"fast tier: {len(self.seconds)} tests ran; {deselected} deselected and "
            f"{self.files_left_out} test files without fast tests not collected; "
            "`pytest --full` runs every test (tests/README.md)"
        )
        slow = sorted(((s, n) for n, s in self.seconds.items() if s > SLOW_FAST_TEST_S), reverse=True)
        for seconds, nodeid in slow:
            terminalreporter.write_line(
                f"fast tier: {nodeid} ran {seconds:.1f}s (over {SLOW_FAST_TEST_S:.0f}s: does it belong in the tier?)"
            )
