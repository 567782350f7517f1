"""The ``proctor`` command run in a fresh interpreter, its input files written and its run folder read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO


def choice_task(
    name: str,
    prompt: str,
    choices: str | list[str] = "{{ choices }}",
    target: str = "{{ label }}",
    metrics: str | None = "acc",
    data: str = "{path: data.jsonl, id: id}",
) -> str:
    """A native multiple-choice task's YAML over ``data`` (YAML as written; by default data.jsonl, an ``id`` a
    row): ``prompt``, ``choices`` (one template, or one each) and ``target`` the templates (written as YAML
    double-quoted strings), scored by ``metrics`` (None: the kind's own)."""
    text = (
        f"name: {name}\nkind: multiple_choice\ndata: {data}\n"
        f"prompt: {json.dumps(prompt)}\nchoices: {json.dumps(choices)}\ntarget: {json.dumps(target)}\n"
    )
    return text + (f"metrics: [{metrics}]\n" if metrics else "")


def quiz_task(name: str) -> str:
    """``choice_task`` named ``name`` over rows {"id", "question", "choices", "label"} ('Q: question' and 'A:')."""
    return choice_task(name, "Q: {{ question }}\nA:")


# A native multiple-choice task over QUESTIONS (as data.jsonl beside it).
QUIZ = quiz_task("quiz")

# Five multiple-choice questions the command-line tests run.
QUESTIONS = [
    {"id": "a", "question": "What colour is the sky on a clear day?", "choices": ["blue", "green", "red"], "label": 0},
    {"id": "b", "question": "How many legs does a spider have?", "choices": ["six", "eight", "four"], "label": 1},
    {"id": "c", "question": "Which animal barks?", "choices": ["cat", "fish", "dog"], "label": 2},
    {"id": "d", "question": "What is frozen water called?", "choices": ["steam", "ice", "sand"], "label": 1},
    {"id": "e", "question": "Which planet do we live on?", "choices": ["Earth", "Mars", "Venus"], "label": 0},
]


def generate_task(
    name: str,
    data: str,
    prompt: str,
    target: str,
    max_tokens: int,
    metrics: str | None = "exact_match",
    temperature: float | None = None,
    stop: str | None = "\n",
) -> str:
    """A native generated task's YAML: rows read from ``data`` (an ``id`` each), ``prompt`` and ``target`` the
    templates (written as YAML double-quoted strings), generation cut at ``max_tokens`` or ``stop`` (None: no
    stop), greedy or sampled at ``temperature``, scored by ``metrics`` (None: the kind's own)."""
    generation = [f"max_tokens: {max_tokens}"]
    generation += [] if stop is None else [f"stop: {json.dumps([stop])}"]
    generation += [] if temperature is None else [f"temperature: {temperature}"]
    text = (
        f"name: {name}\nkind: generate\ndata: {{path: {data}, id: id}}\n"
        f"prompt: {json.dumps(prompt)}\ntarget: {json.dumps(target)}\n"
        f"generation: {{{', '.join(generation)}}}\n"
    )
    return text + (f"metrics: [{metrics}]\n" if metrics else "")


def quiz_folder(folder: Path) -> Path:
    """``QUIZ`` (quiz.yaml) over ``QUESTIONS`` (data.jsonl) written in ``folder``."""
    write(folder / "quiz.yaml", QUIZ)
    jsonl(folder / "data.jsonl", QUESTIONS)
    return folder


def served_run(task: Path | str, url: str, out: Path | str, *extra: str) -> list[str]:
    """The arguments of ``proctor run`` of ``task`` with the model ``openai:toy`` of the OpenAI-compatible server at
    ``url`` (a loopback stand-in), its run folder ``out``, then ``extra``."""
    return ["run", str(task), "--model", "openai:toy", "--base-url", url, "-o", str(out), *extra]


def run_proctor(
    *args: str, cwd: Path, env: dict | None = None, module: str = "proctor.cli"
) -> subprocess.CompletedProcess:
    """``python -m proctor.cli ARGS`` (or another entry ``module``) in a new interpreter, from this
    checkout's source; whatever it ends with."""
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "400", **(env or {})}
    environment.pop("PROCTOR_TRACEBACK", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )


def proctor(*args: str, cwd: Path, env: dict | None = None, module: str = "proctor.cli") -> subprocess.CompletedProcess:
    """``run_proctor``, which must succeed."""
    done = run_proctor(*args, cwd=cwd, env=env, module=module)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done


def proctor_error(*args: str, cwd: Path, env: dict | None = None) -> str:
    """``run_proctor``, which must end as a user error does: exit 2, one message, no traceback; its output."""
    done = run_proctor(*args, cwd=cwd, env=env)
    message = done.stdout + done.stderr
    assert done.returncode == 2, message[-3000:]
    assert "Traceback" not in message and "internal error" not in message, message[-3000:]
    return message


def results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def samples(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run_in_process(args: list[str]) -> tuple[int, str]:
    """``proctor ARGS`` through the CLI's entry point in this process (for the many malformed cases; the
    process boundary is tested with ``proctor``): (exit code, stdout + stderr)."""
    import contextlib
    import io

    from proctor.cli import main

    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue()


# A --plugin file adding the backend ``slow:NAME``: tests.support.fakes.FakeModel, each call taking SECONDS
# (so a test can interrupt a run between two stored batches), its loading LOAD seconds (a file "loading" in
# the working folder says it started). REPO is filled in by ``slow_model_plugin``.
SLOW_MODEL_PLUGIN = """\
import sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.support.fakes import FakeModel


class SlowModel(FakeModel):
    def _log(self, kind, n):
        super()._log(kind, n)
        time.sleep({seconds!r})


def load(rest, **options):
    if {load!r}:
        Path("loading").touch()
        time.sleep({load!r})
    return SlowModel(rest, batch_size=1)


def register(registry):
    registry.add_model_backend("slow", load)
"""


def slow_model_plugin(folder: Path, seconds: float, load: float = 0.0) -> Path:
    """A --plugin file in ``folder`` whose ``slow:NAME`` model takes ``seconds`` per call and ``load`` to load."""
    return write(folder / "slow_model.py", SLOW_MODEL_PLUGIN.format(repo=str(REPO), seconds=seconds, load=load))
