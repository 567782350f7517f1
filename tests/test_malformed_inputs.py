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


# --- SEA-HELM folders (the shared sentiment_analysis config, its hub dataset mapped to a local copy) ----

SEAHELM_ROWS = [{"id": i, "label": label, "prompts": [{"text": text}], "metadata": {"language": "id"}}
                for i, (label, text) in enumerate([("Positif", "Bagus"), ("Negatif", "Buruk"), ("Netral", "Biasa")])]


def _lines(rows) -> str:
    return "\n".join(__import__("json").dumps(r) for r in rows)


SEAHELM_CASES = {
    "invalid-json": (_lines(SEAHELM_ROWS[:1]) + "\n{bad\n", ["eval.jsonl", "row 2", "json"]),
    "non-utf8": ((_lines(SEAHELM_ROWS[:1]) + "\n").encode() + b'{"id": "\xff"}\n', ["eval.jsonl:2", "utf-8"]),
    "missing-label": (_lines([SEAHELM_ROWS[0], {k: v for k, v in SEAHELM_ROWS[1].items() if k != "label"}]), ["copy", "row 2", "label"]),
    "null-label": (_lines([SEAHELM_ROWS[0], {**SEAHELM_ROWS[1], "label": None}]), ["copy", "row 2", "label"]),
    "empty": ("", ["config.yaml", "copy", "no rows"]),
    "missing-prompts": (_lines([SEAHELM_ROWS[0], {k: v for k, v in SEAHELM_ROWS[1].items() if k != "prompts"}]),
                        ["config.yaml", "row 2", "prompt_template"]),
}


@pytest.mark.parametrize("name", sorted(SEAHELM_CASES))
def test_malformed_seahelm_data_is_a_clear_error(name, tmp_path, monkeypatch, no_model):
    import shutil

    from conftest import shared_path

    folder = shared_path("examples", "seahelm", "seahelm_tasks", "nlu", "sentiment_analysis")
    shutil.copytree(folder, tmp_path / "sa")
    copy = tmp_path / "copy" / "id"
    copy.mkdir(parents=True)
    content, expect = SEAHELM_CASES[name]
    (copy / "eval.jsonl").write_bytes(content if isinstance(content, bytes) else content.encode())
    (copy / "examples.jsonl").write_text(_lines(SEAHELM_ROWS))
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(["run", "sa", "-o", "out", "--tasks", "sentiment/id",
                            "--seahelm-data", f"aisingapore/NLU-Sentiment-Analysis={tmp_path / 'copy'}"])
    check(Case(f"seahelm-{name}", [], expect), code, output)


# --- the real entry point, in subprocesses ---------------------------------------------------------

SUBPROCESS_CASES = [
    (["run", "task.yaml", "--limt", "3"], ["--limt"], 2),
    (["run", "task.yaml", "--limit", "-1"], ["--limit"], 2),
    (["run", "task.yaml", "--batch-size", "0"], ["--batch-size"], 2),
    (["run", "task.yaml", "--chat-template", "yes"], ["--chat-template"], 2),
    (["run", "task.yaml", "uc.py", "--temperature", "0.5"], ["use case files", "gen_kwargs"], 2),
    (["run", "task.yaml", "--device", "gpu", "-o", "out"], ["--device", "gpu"], 2),
    (["validate", "emptydir"], ["emptydir", "no tasks"], 2),
]


@pytest.mark.parametrize("args,expect,code", SUBPROCESS_CASES, ids=[" ".join(c[0][:4]) for c in SUBPROCESS_CASES])
def test_real_entry_point_usage_errors(args, expect, code, tmp_path):
    from malformed_cases import USECASE

    write_files(tmp_path, {"uc.py": USECASE, "emptydir/readme.md": "x"})
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "400"}
    done = subprocess.run([sys.executable, "-c", "from proctor.cli import main; main()", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == code, output
    assert "Traceback" not in output and "internal error" not in output, output
    for word in expect:
        assert word.lower() in " ".join(output.lower().split()), output


def test_both_click_copies_are_handled(monkeypatch, capsys):
    """typer >= 0.29 raises its bundled click's exceptions; plain click's must be caught too."""
    import click

    import proctor.cli as cli

    errors, aborts = cli.click_exception_classes()
    assert click.ClickException in errors and click.exceptions.Abort in aborts
    try:
        from typer._click.exceptions import ClickException as BundledClickException
    except ImportError:  # an older typer uses plain click itself
        BundledClickException = None
    if BundledClickException is not None:
        assert BundledClickException in errors
    for raised in [click.BadParameter("plain click says no", param_hint="'--plain'")] + (
            [BundledClickException("bundled click says no")] if BundledClickException else []):
        def app(*args, _raised=raised, **kwargs):
            raise _raised

        monkeypatch.setattr(cli, "app", app)
        with pytest.raises(SystemExit) as info:
            cli.main(["run"])
        assert info.value.code != 0
        err = capsys.readouterr().err
        assert "says no" in err and "Traceback" not in err


def test_an_unexpected_exception_is_one_line_not_a_traceback(monkeypatch, capsys):
    import proctor.cli as cli

    def app(*args, **kwargs):
        raise RuntimeError("something broke")

    monkeypatch.setattr(cli, "app", app)
    monkeypatch.delenv("PROCTOR_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as info:
        cli.main(["run"])
    err = capsys.readouterr().err
    assert info.value.code == 3 and "internal error: RuntimeError: something broke" in err and "Traceback" not in err
