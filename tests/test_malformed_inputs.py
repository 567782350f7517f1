"""Over a hundred malformed inputs across every format and option: each ends with a non-zero exit,
no traceback, and one message naming the file, the row or line, and the field or option, before
any model loads wherever the problem can be known then. The cases live in malformed_cases.py."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from malformed_cases import BASE, CASES, Case

os.environ.setdefault("COLUMNS", "400")  # rich wraps long messages at the terminal width


class ModelLoaded(Exception):
    pass


def write_files(folder: Path, files: dict) -> None:
    for name, content in {**BASE, **files}.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def run_cli(args: list[str]) -> tuple[int, str]:
    """``proctor ARGS`` in this process: (exit code, stdout + stderr)."""
    from proctor.cli import main

    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue()


@pytest.fixture
def no_model(monkeypatch):
    """Loading any model fails loudly: an error found only after that came too late."""
    import proctor.models.registry as registry

    def refuse(*args, **kwargs):
        raise ModelLoaded(f"a model was loaded: {args} {kwargs}")

    monkeypatch.setattr(registry, "load_model", refuse)


def check(case: Case, code: int, output: str) -> None:
    assert code != 0, f"exit 0 for {case.id}:\n{output}"
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    assert "a model was loaded" not in output, f"{case.id}: the error came after the model loaded:\n{output}"
    lowered = " ".join(output.lower().split())
    for word in case.expect:
        assert word.lower() in lowered, f"{case.id}: message does not name {word!r}:\n{output}"


def test_corpus_is_broad():
    assert len(CASES) > 100
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_input_is_a_clear_error(case, tmp_path, monkeypatch, no_model, request):
    write_files(tmp_path, case.files)
    monkeypatch.chdir(tmp_path)
    if not case.before_model:
        monkeypatch.undo()  # these cases are about loading the model itself
        monkeypatch.chdir(tmp_path)
    code, output = run_cli(case.args)
    check(case, code, output)
