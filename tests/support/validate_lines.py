"""``proctor validate`` through the CLI's entry point on task files written for a test: the console's output
(``validate_output``) or its audit lines (``audit_lines``) (test helpers for the audit's rule tests, which each
wrote their own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from proctor.cli import main


def jsonl_text(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def audit_lines(folder: Path, files: dict[str, str], capsys: Any, args: list[str] | None = None) -> list[str]:
    """Write ``files`` (name -> text) into ``folder`` and run ``proctor validate`` on its ``t.yaml`` (or
    ``args``): the lines that name an audit rule. A non-zero exit fails the test, with the output."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    output = validate_output(args or [str(folder / "t.yaml")], capsys)
    return [line for line in output.splitlines() if "audit [" in line]


def validate_output(args: list[str], capsys: Any) -> str:
    """What ``proctor validate ARGS`` prints (out and err). A non-zero exit fails the test, with the output."""
    try:
        main(["validate", *args])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr()
    return out.out + out.err
