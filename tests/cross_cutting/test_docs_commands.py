"""Every ``proctor`` command in README.md and docs/*.md is checked against the real command line: each
names a command that exists and only options that command has; those without placeholders parse
(values, choices, counts) as click parses them; the cheap ones (``ls``, ``validate`` on paths in the
repository) run in a fresh process and succeed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest
import typer

from proctor.cli import app
from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
ROOT_OPTIONS = {"--version", "--help", "--install-completion", "--show-completion"}
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?:\.\.\.)?|\.\.\.|.*\.\.\.)$")  # RUN_DIR, PATHS..., TASKS, N, ...
INLINE = re.compile(r"`((?:\.venv/bin/)?proctor [^`]+)`")


def _commands() -> list[tuple[str, str]]:
    """(where, command line) for every proctor command in a code block or an inline code span."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        in_block = False
        pending = ""
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            where = f"{path.relative_to(REPO)}:{number}"
            if in_block:
                stripped = pending + line.strip()
                if stripped.endswith("\\"):  # a command continued on the next line
                    pending = stripped[:-1] + " "
                    continue
                pending = ""
                if re.match(r"(\.venv/bin/)?proctor\s", stripped):
                    found.append((where, stripped))
            else:
                found += [(where, m) for m in INLINE.findall(line)]
    return found


def _tokens(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    words = words[1:]  # "proctor" or ".venv/bin/proctor"
    out, depth = [], 0
    for word in words:  # [optional parts] are left out
        if word.startswith("["):
            depth += 1
        if depth == 0:
            out.append(word)
        if word.endswith("]") and depth:
            depth -= 1
    return out


def _cli():
    return typer.main.get_command(app)


def _options(command) -> set[str]:
    return {"--help"} | {flag for p in command.params for flag in (*p.opts, *p.secondary_opts) if flag.startswith("-")}


COMMANDS = _commands()
CLI = _cli()


def _is_command(tokens: list[str]) -> bool:
    return bool(tokens) and (tokens[0] in CLI.commands or tokens[0] in ROOT_OPTIONS)


def test_the_docs_hold_commands():
    assert len([c for c in COMMANDS if _is_command(_tokens(c[1]))]) >= 50  # the extraction still finds them


@pytest.mark.parametrize("where, line", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_each_documented_command_names_real_options(where, line):
    tokens = _tokens(line)
    if not _is_command(tokens):
        pytest.skip("prose, not a command (e.g. 'proctor runs ...')")
    if tokens[0] in ROOT_OPTIONS:
        assert len(tokens) == 1 or tokens[0] == "--show-completion", f"{where}: {line}"
        return
    command = CLI.commands[tokens[0]]
    known = _options(command)
    for token in tokens[1:]:
        if token.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", token):
            assert token.split("=", 1)[0] in known, f"{where}: '{token}' is not an option of 'proctor {tokens[0]}'"
    if len(tokens) == 1 or "--help" in tokens or any(PLACEHOLDER.match(t) for t in tokens[1:]):
        return  # the command named in prose, or placeholders: the option names are what can be checked
    try:  # no placeholders: it parses as the real command line would
        command.make_context(tokens[0], list(tokens[1:]))
    except Exception as exc:  # noqa: BLE001 - click's usage errors (typer bundles its own click)
        pytest.fail(f"{where}: `{line}` does not parse: {exc}")


CARRIED = {
    "--data-dir",
    "--data-path",
    "--var",
    "--trust-task-code",
    "--lmeval-data",
    "--seahelm-data",
}  # what validate shares with run


def _cheap(tokens: list[str]) -> list[str] | None:
    """What runs in seconds without a model: ls / validate as written, or a run on the repository's own
    examples checked by validate (same task files, data and prompts); None for the rest."""
    if not tokens or tokens[0] not in ("ls", "validate", "run"):
        return None
    takes_value = {o for p in CLI.commands[tokens[0]].params if not getattr(p, "is_flag", False) for o in p.opts}
    positional, options, i = [], [], 1
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-"):
            value = [tokens[i + 1]] if token in takes_value and i + 1 < len(tokens) else []
            if tokens[0] != "run" or token in CARRIED:
                options += [token, *value]
            i += 1 + len(value)
        else:
            positional.append(token)
            i += 1
    if not positional or not all(t.startswith("lm_eval:") or (REPO / t).exists() for t in positional):
        return None
    if tokens[0] == "run" and any(t.startswith("lm_eval:") for t in positional):
        return None  # validating a catalogue task reads its hub dataset
    if tokens[0] == "ls" and any(t in ("lm_eval:", "lm_eval:*") for t in positional):
        return None  # the whole catalogue: indexed as for 'lm_eval:mmlu*' (run), a minute more
    return ["validate" if tokens[0] == "run" else tokens[0], *positional, *options]


CHEAP = sorted({shlex.join(cheap) for _, line in COMMANDS if (cheap := _cheap(_tokens(line))) is not None})


def test_some_documented_commands_are_cheap_enough_to_run():
    assert len(CHEAP) >= 3


@pytest.mark.parametrize("line", CHEAP)
def test_cheap_documented_commands_run(line):
    tokens = shlex.split(line)
    if any(t.startswith("lm_eval:") for t in tokens):
        pytest.importorskip("lm_eval")
    if any(t.startswith("../shared") for t in tokens) and not (REPO.parent / "shared").exists():
        pytest.skip("needs the project's shared data")
    proc = subprocess.run(
        [sys.executable, "-m", "proctor.cli", *tokens],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=600,
    )
    # offline, a task whose rows live on the hub fails with the documented message; anything else must pass
    assert proc.returncode == 0 or "dataset not available offline" in proc.stderr, f"`{line}`: {proc.stderr[-2000:]}"
