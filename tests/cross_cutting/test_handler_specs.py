"""A task run by a dialect's handler has a spec of its own: the handler named, its options a typed model.

No dialect fills the native template fields with placeholders its handler fills in ("{{ _lmeval_prompt }}"),
core code reads no dialect's option keys, and a spec read back from its dump gets its typed options again.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from proctor.api import load_tasks
from proctor.core.task_spec import TaskSpec
from tests.conftest import EXAMPLES, REPO, shared_path

PLACEHOLDER = re.compile(r"\{\{\s*(_\w+)")  # a template reading an underscore field
TEMPLATE_FIELDS = ("prompt", "target", "choices", "text")

LM_EVAL_TASK = """\
task: quiz
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: answer
metric_list:
  - metric: acc
"""


def _lm_eval_task(tmp_path: Path) -> Path:
    pytest.importorskip("lm_eval")
    data = tmp_path / "quiz.jsonl"
    data.write_text('{"question": "2+2?", "choices": ["3", "4"], "answer": 1}\n')
    task = tmp_path / "quiz.yaml"
    task.write_text(LM_EVAL_TASK.format(data=data))
    return task


def _handler_tasks(tmp_path: Path) -> dict[str, list]:
    """Tasks of every dialect whose tasks run through a handler, loaded from upstream-format files."""
    seahelm = EXAMPLES / "seahelm"
    glm = shared_path("examples", "glm130b")
    from tests.support.probsem_cogsci import COGSCI_PROMPT, COGSCI_SUITE  # the CogSci2023 branch's suite format

    probsem = tmp_path / "probsem"
    probsem.mkdir()
    (probsem / "tug-of-war.txt").write_text(COGSCI_PROMPT, encoding="utf-8")
    (probsem / "tug-of-war_AV-1a.json").write_text(json.dumps(COGSCI_SUITE), encoding="utf-8")
    shutil.copytree(shared_path("examples", "probsem", "inputs"), probsem, dirs_exist_ok=True)  # probsem's own format
    return {
        "lm-eval": load_tasks([_lm_eval_task(tmp_path)]),
        "seahelm": [t for t in load_tasks([seahelm]) if t.dialect == "seahelm"][:20],
        "glm": [t for t in load_tasks([glm]) if t.spec.handler is not None],
        "probsem": load_tasks([probsem]),
    }


def _placeholders(spec: TaskSpec) -> list[str]:
    """Fields the templates read that only a handler could make: ``_name`` fields the task's data does not
    define."""
    defined = {name for data in spec.data for name in (*data.constants, *data.fields)}
    values = []
    for name in TEMPLATE_FIELDS:
        value = getattr(spec, name)
        values += value if isinstance(value, list) else [value]
    return [name for v in values if isinstance(v, str) for name in PLACEHOLDER.findall(v) if name not in defined]


def test_handler_tasks_name_their_handler_with_typed_options_and_no_placeholder_templates(tmp_path):
    by_dialect = _handler_tasks(tmp_path)
    for dialect, tasks in by_dialect.items():
        assert tasks, f"no {dialect} task with a handler was loaded"
        for task in tasks:
            handler = task.spec.handler
            assert handler is not None and task.spec.task_class is None, (dialect, task.name)
            assert isinstance(handler.options, BaseModel) and type(handler.options) is not BaseModel, (
                dialect,
                task.name,
            )
            assert not _placeholders(task.spec), (dialect, task.name, _placeholders(task.spec))
            # no templates at all, nor data constants standing in for them (probsem's suites once had both)
            assert [f for f in TEMPLATE_FIELDS if getattr(task.spec, f) is not None] == [], (dialect, task.name)
            assert not any(data.constants for data in task.spec.data), (dialect, task.name)
            assert task.spec.task_options == {}, (dialect, task.name)  # task_options is for a task file's own class


def test_a_spec_changed_by_an_override_keeps_its_typed_options(tmp_path):
    from proctor.core.run_overrides import with_spec_changes
    from proctor.core.task_spec import GenerationSpec

    for tasks in _handler_tasks(tmp_path).values():
        task = tasks[0]
        changed = with_spec_changes(task, description="changed", generation=GenerationSpec(max_tokens=3)).spec
        assert changed.handler == task.spec.handler and type(changed.handler.options) is type(task.spec.handler.options)
        assert changed.description == "changed" and changed.generation.max_tokens == 3


def test_handler_options_given_as_a_mapping_are_refused():
    """A mapping would validate as an empty model: the options would be lost without a word."""
    raw = {
        "name": "t",
        "kind": "generate",
        "data": "x.jsonl",
        "handler": {"name": "lm-eval.generate", "options": {"task": "t"}},
    }
    with pytest.raises(ValueError, match="typed model its dialect declares"):
        TaskSpec.model_validate(raw)


def test_handler_options_changed_through_the_spec_are_checked_by_the_handlers_model(tmp_path):
    (task,) = load_tasks([_lm_eval_task(tmp_path)])
    changed = task.spec.with_handler_options(bootstrap_iters=7)
    assert changed.handler.options.bootstrap_iters == 7 and task.spec.handler.options.bootstrap_iters == 100_000
    with pytest.raises(ValueError, match="bootstrap_iters"):
        task.spec.with_handler_options(bootstrap_iters="many")
    with pytest.raises(ValueError, match="nope"):
        task.spec.with_handler_options(nope=1)


def test_an_unregistered_handler_or_foreign_options_are_refused_by_name(tmp_path):
    from proctor.core.dialect import NoOptions
    from proctor.core.errors import TaskDefinitionError
    from proctor.core.task_spec import HandlerSpec
    from proctor.kinds.custom import load_handler

    (task,) = load_tasks([_lm_eval_task(tmp_path)])
    unknown = task.spec.model_copy(update={"handler": HandlerSpec(name="no.such", options=NoOptions())})
    with pytest.raises(TaskDefinitionError, match="no task handler 'no.such' is registered"):
        load_handler(unknown)
    foreign = task.spec.model_copy(update={"handler": HandlerSpec(name=task.spec.handler.name, options=NoOptions())})
    with pytest.raises(TaskDefinitionError, match="takes LmEvalTaskOptions options, got "):
        load_handler(foreign)


def test_core_packages_read_no_dialect_option_keys():
    """The layers below the dialects know no dialect's options: no ``task_options[...]`` lookups of theirs."""
    below = ["core", "data", "prompts", "scoring", "kinds", "engine", "runs", "models", "api"]
    offenders = []
    for name in below:
        root = REPO / "src" / "proctor" / name
        for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for pattern in (r"task_options\s*\[", r"task_options\b.*\.get\(", r"_lmeval_|_seahelm_|_glm_|_probsem_"):
                if re.search(pattern, text):
                    offenders.append(f"{path.relative_to(REPO)}: {pattern}")
    assert not offenders, offenders


def test_a_handler_task_runs_from_the_command_line_with_its_numbers(tmp_path, tiny_model_dir):
    """The lm-eval task above through ``proctor run`` in a fresh process: its accuracy is lm-eval's rule
    (the higher summed log-likelihood wins) applied to the log-likelihoods the run recorded."""
    import subprocess

    task = _lm_eval_task(tmp_path)
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(task),
            "--model",
            f"hf:{tiny_model_dir}",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    (sample,) = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    logprobs = sample["logprobs"]
    expected = float(max(range(len(logprobs)), key=lambda i: logprobs[i]) == 1)
    assert results["tasks"]["quiz"]["metrics"]["acc,none"]["value"] == expected
    assert sample["prompt"] == "2+2?" and sample["choices"] == ["3", "4"]
