"""Runs one case of tests/support/audit_corpus.py in-process through the CLI's entry point and classifies it.

Outcomes (``Outcome.kind``):

- ``error``: a non-zero exit (not 3) with a clear message and no traceback;
- ``warned``: exit 0 and an audit finding (``[rule.id]``) or a ``warning`` line;
- ``silent``: exit 0, nothing said;
- ``internal``: exit 3, "internal error", or a Traceback;
- ``hang``: the time limit was hit.

Cases run one after another in this process (``proctor.cli.main`` with stdout and stderr captured, in the
case's own folder); a run that needs a model gets the tiny random Llama's folder for ``{model}``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from tests.support.audit_corpus import AuditCase

# `[choices.duplicate]`, `[target.all-choices]`: a rule id in brackets (not a Rich markup tag such as [bold])
RULE_ID = re.compile(r"\[([a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)+)\]")
WARNING = re.compile(r"^\s*(?:⚠\s*)?warning\b", re.IGNORECASE | re.MULTILINE)


@dataclass
class Outcome:
    kind: str  # error | warned | silent | internal | hang
    code: Optional[int]
    output: str
    rules: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"{self.kind} (exit {self.code}, rules {self.rules or '-'}):\n{self.output[-3000:]}"


class _TimeLimit(BaseException):
    """Raised by the alarm: a BaseException so that proctor's own ``except Exception`` cannot swallow it."""


def write_files(folder: Path, files: dict) -> None:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def run_cli(args: list[str], folder: Path, limit_s: float) -> tuple[Optional[int], str]:
    """``proctor ARGS`` in this process, in ``folder``: (exit code, or None when the time limit hit; output)."""
    from proctor.cli import main

    out = io.StringIO()
    code: Optional[int] = 0
    before = os.getcwd()
    alarm = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, _raise_time_limit) if alarm else None
    env_before = {k: os.environ.get(k) for k in ("COLUMNS", "PROCTOR_TRACEBACK")}
    os.environ["COLUMNS"] = "400"  # one finding per line: rich would wrap long lines
    os.environ.pop("PROCTOR_TRACEBACK", None)
    try:
        os.chdir(folder)
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, limit_s)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except _TimeLimit:
                code = None
            except Exception:  # main lets nothing through; if it does, that is an internal error
                out.write(traceback.format_exc())
                code = 3
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        os.chdir(before)
        for key, value in env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return code, out.getvalue()


def _raise_time_limit(signum, frame):
    raise _TimeLimit()


def classify(code: Optional[int], output: str) -> Outcome:
    rules = sorted(set(RULE_ID.findall(output)))
    if code is None:
        return Outcome("hang", code, output, rules)
    if code == 3 or "Traceback" in output or "internal error" in output:
        return Outcome("internal", code, output, rules)
    if code != 0:
        return Outcome("error", code, output, rules)
    if rules or WARNING.search(output):
        return Outcome("warned", code, output, rules)
    return Outcome("silent", code, output, rules)


def run_case(case: AuditCase, folder: Path, model: Optional[Path] = None, limit_s: float = 120.0) -> Outcome:
    """Write the case's files into ``folder``, run its ``pre`` commands (each must succeed), then its command."""
    folder.mkdir(parents=True, exist_ok=True)
    write_files(folder, case.files)

    def fill(args: list[str]) -> list[str]:
        return [a.replace("{model}", str(model)).replace("{base_model}", str(model)) for a in args]

    for pre in case.pre:
        code, output = run_cli(fill(pre), folder, limit_s)
        if code != 0:
            return Outcome("setup-failed", code, f"pre-command {pre} failed:\n{output}")
    code, output = run_cli(fill(case.args), folder, limit_s)
    return classify(code, output)


def meets(case: AuditCase, outcome: Outcome) -> Optional[str]:
    """None when the outcome is what the case expects, else why not (for the test's message)."""
    expected = case.expect
    if expected[0] == "ok":
        if outcome.kind == "silent" or (outcome.kind == "warned" and not outcome.rules):
            return None
        return f"a valid control must pass without audit findings, got {outcome.summary()}"
    if expected[0] == "rule":
        if outcome.kind == "error" or (outcome.kind == "warned" and expected[1] in outcome.rules):
            return None
        return f"expected finding [{expected[1]}] (or a clear error), got {outcome.summary()}"
    if expected[0] == "gap":  # not caught yet (audit_corpus.GAPS): it must still end cleanly
        if outcome.kind in ("internal", "hang", "setup-failed"):
            return f"a case the audit does not catch yet must still end cleanly, got {outcome.summary()}"
        return None
    if expected[0] == "error":
        lowered = " ".join(outcome.output.lower().split())
        if outcome.kind == "error" and expected[1].lower() in lowered:
            return None
        return f"expected a clear error naming {expected[1]!r}, got {outcome.summary()}"
    return f"unknown expectation {expected!r}"
