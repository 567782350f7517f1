"""The one-minute tier (issue 48): a bare ``pytest`` runs the tests marked fast, ``--full`` runs every test, and
every package of ``src/proctor/`` is touched by at least one fast test."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support import fast_tier
from tests.support.tier_coverage import fast_files, packages, touched

pytestmark = pytest.mark.fast


def test_every_package_has_a_fast_test():
    touching = touched(REPO / "tests", REPO / "src")
    assert len(touching) >= 19, sorted(touching)  # the 13 top-level packages and the six dialects, at least
    missing = sorted(package for package, files in touching.items() if not files)
    assert not missing, (
        f"no fast test touches {missing}: mark a quick test of each fast "
        "(tests/README.md, 'The fast tier'), in its folder or importing it from a module marked fast"
    )


def test_the_scan_sees_every_fast_test_pytest_collected(request):
    # The scan reads markers from the source; pytest applies them. A marking the scan misses (an alias, say)
    # would let the package check above pass on files that are not in the tier, or fail on files that are.
    tests = REPO / "tests"
    scanned = fast_files(tests)
    collected = {
        Path(item.path).relative_to(tests).as_posix()
        for item in request.session.items
        if item.get_closest_marker("fast") is not None and Path(item.path).is_relative_to(tests)
    }
    assert collected, "this very file is marked fast"
    assert collected <= scanned, sorted(collected - scanned)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_scan_credits_folders_and_whole_module_imports(tmp_path):
    for package in ("alpha", "beta", "gamma", "dialects", "dialects/x", "dialects/y"):
        _write(tmp_path / "src" / "proctor" / package / "__init__.py", "")
    (tmp_path / "src" / "proctor" / "static").mkdir()  # no __init__.py: not a package
    tests = tmp_path / "tests"
    _write(
        tests / "alpha" / "test_a.py",
        """
        import pytest
        from proctor.dialects.x.metrics import f

        pytestmark = [pytest.mark.fast, pytest.mark.slow]
        """,
    )
    # One fast test: credits its folder and what it imports itself, not what the module imports (proctor.gamma)
    # for its slow test.
    _write(
        tests / "dialects" / "y" / "test_y.py",
        """
        import pytest
        from proctor import gamma

        @pytest.mark.fast
        def test_one():
            run("python", "-c", "import json; from proctor.beta.inner import f")

        def test_two():
            from proctor.alpha import g
        """,
    )
    _write(tests / "beta" / "test_b.py", "import pytest\npytestmark = pytest.mark.slow\n")
    _write(tests / "support" / "test_helper.py", "import pytest\npytestmark = pytest.mark.fast\n")

    assert packages(tmp_path / "src") == [
        "proctor.alpha",
        "proctor.beta",
        "proctor.dialects.x",
        "proctor.dialects.y",
        "proctor.gamma",
    ]
    assert touched(tests, tmp_path / "src") == {
        "proctor.alpha": ["alpha/test_a.py"],
        "proctor.beta": ["dialects/y/test_y.py"],
        "proctor.dialects.x": ["alpha/test_a.py"],
        "proctor.dialects.y": ["dialects/y/test_y.py"],
        "proctor.gamma": [],
    }
    assert fast_files(tests) == {"alpha/test_a.py", "dialects/y/test_y.py"}


class _Ran:
    """The tests an inner pytest session ran, and the ones it deselected."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.deselected: list[str] = []
        self.collected_files: list[str] = []

    def pytest_collectreport(self, report):
        if report.nodeid.endswith(".py"):
            self.collected_files.append(report.nodeid)

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.ran.append(report.nodeid.rsplit("::", 1)[-1])

    def pytest_deselected(self, items):
        self.deselected += [item.name for item in items]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A small project wired like this one: testpaths, the fast marker, tests/conftest.py naming the hooks."""
    _write(
        tmp_path / "pyproject.toml",
        """
        [tool.pytest.ini_options]
        testpaths = ["t"]
        markers = ["fast: the fast tier", "slow: slow"]
        """,
    )
    _write(
        tmp_path / "t" / "conftest.py",
        """
        from tests.support.fast_tier import pytest_addoption, pytest_configure, pytest_report_header  # noqa: F401
        """,
    )
    _write(
        tmp_path / "t" / "test_quick.py",
        """
        import pytest
        pytestmark = pytest.mark.fast
        def test_q1(): pass
        def test_q2(): pass
        """,
    )
    _write(
        tmp_path / "t" / "test_mixed.py",
        """
        import pytest
        @pytest.mark.fast
        def test_m_fast(): pass
        @pytest.mark.slow
        def test_m_slow(): pass
        def test_m_plain(): pass
        """,
    )
    _write(tmp_path / "t" / "test_long.py", "def test_l1(): pass\ndef test_l2(): pass\n")
    monkeypatch.chdir(tmp_path)
    # The inner sessions need none of the installed plugins, whose loading is most of their time.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return tmp_path


def _pytest(*args: str) -> tuple[int, _Ran]:
    ran = _Ran()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--import-mode=importlib", *args], plugins=[ran])
    return int(code), ran


def test_a_bare_pytest_runs_the_fast_tier_and_full_runs_every_test(project, capsys, monkeypatch):
    code, bare = _pytest()
    assert code == 0
    assert sorted(bare.ran) == ["test_m_fast", "test_q1", "test_q2"]
    # test_long.py names no fast test: it is not even imported; test_mixed.py's other tests are deselected.
    assert sorted(bare.deselected) == ["test_m_plain", "test_m_slow"]
    assert bare.collected_files == ["t/test_mixed.py", "t/test_quick.py"]
    output = capsys.readouterr().out
    assert "fast tier: 3 tests ran; 2 deselected and 1 test files without fast tests not collected" in output
    assert "does it belong in the tier?" not in output

    # A fast test over the time hint is named at the end (every test is, with a bound below zero).
    monkeypatch.setattr(fast_tier, "SLOW_FAST_TEST_S", -1.0)
    _pytest()
    hints = [line for line in capsys.readouterr().out.splitlines() if "does it belong in the tier?" in line]
    assert len(hints) == 3 and any(line.startswith("fast tier: t/test_quick.py::test_q1 ran ") for line in hints)

    code, full = _pytest("--full")
    assert code == 0
    assert len(full.ran) == 7 and full.deselected == [] and len(full.collected_files) == 3


def test_named_paths_and_marker_expressions_select_as_they_always_did(project):
    # Whoever names a file or a marker means those tests, fast or not.
    assert sorted(_pytest("t/test_mixed.py")[1].ran) == ["test_m_fast", "test_m_plain", "test_m_slow"]
    assert sorted(_pytest("-m", "slow")[1].ran) == ["test_m_slow"]
    assert sorted(_pytest("-m", "not fast")[1].ran) == ["test_l1", "test_l2", "test_m_plain", "test_m_slow"]
    # --fast keeps only the fast tests of the paths given.
    assert _pytest("--fast", "t/test_mixed.py")[1].ran == ["test_m_fast"]


def test_full_and_fast_together_is_a_usage_error(project, capsys):
    code, ran = _pytest("--full", "--fast")
    assert code == pytest.ExitCode.USAGE_ERROR and ran.ran == []
    assert "--full runs every test and --fast only the fast tier: give one of them" in capsys.readouterr().err
