"""The trust model (docs/trust.md): code a task file names runs only with --trust-task-code and only
from the task's folder, templates render in a sandbox, paths stay in the task's folder or a folder
given on the command line. Every hostile case (hostile_cases.py) ends with a non-zero exit, no
traceback, one message naming the file and the key or row, before any model loads, and no code of
it runs (its code would write PWNED)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli_runs import run_in_process as run_cli  # proctor ARGS in this process: (code, output)
from tests.support.hostile_cases import CASES, EVIL, NATIVE, SECRET, Hostile
from tests.support.malformed_cases import GLM, GLM_ROWS, ROWS, USECASE, jsonl

os.environ.setdefault("COLUMNS", "400")  # rich wraps long messages at the terminal width


class ModelLoaded(Exception):
    pass


@pytest.fixture
def no_model(monkeypatch):
    """Loading any model fails loudly: an error found only after that came too late."""
    import proctor.models.registry as registry

    def refuse(*args, **kwargs):
        raise ModelLoaded(f"a model was loaded: {args} {kwargs}")

    monkeypatch.setattr(registry, "load_model", refuse)


def check(case, code: int, output: str) -> None:
    """Non-zero, no traceback, before any model loaded, and the words the case expects named."""
    assert code != 0, f"exit 0 for {case.id}:\n{output}"
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    assert "a model was loaded" not in output, f"{case.id}: the error came after the model loaded:\n{output}"
    lowered = " ".join(output.lower().split())
    for word in case.expect:
        assert word.lower() in lowered, f"{case.id}: message does not name {word!r}:\n{output}"


def materialise(case: Hostile, folder: Path) -> list[str]:
    """Write the case's files and symlinks into ``folder`` (``{root}`` is the folder); its arguments."""
    root = str(folder)
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{root}", root), encoding="utf-8")
    for name, target in case.links.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(folder / target, folder / name)
    return [a.replace("{root}", root) for a in case.args]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_refused_before_anything_runs(case, tmp_path, monkeypatch, no_model):
    if "lmeval" in case.id:
        pytest.importorskip("lm_eval")
    if case.id.startswith("path-image"):
        pytest.importorskip("PIL")
    args = materialise(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(args)
    check(case, code, output)  # non-zero, no traceback, before the model, file and key named
    assert not (tmp_path / "PWNED").exists(), f"{case.id}: code named by the task ran"
    assert SECRET.strip() not in output  # the private file's content is never shown
    assert not (tmp_path / "out" / "samples.jsonl").exists()


@pytest.mark.fast
def test_the_corpus_covers_every_rule():
    kinds = {c.id.split("-")[0] for c in CASES}
    assert kinds == {"sandbox", "consent", "trusted", "path"} and len(CASES) >= 50


# --- what still works ---------------------------------------------------------------------------------
def _case_folder(tmp_path: Path, files: dict) -> Path:
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    return tmp_path


def test_ls_and_validate_list_a_code_task_without_running_its_code(tmp_path, monkeypatch):
    """Listing needs no consent and runs nothing; validate without the flag refuses, with it imports."""
    _case_folder(
        tmp_path,
        {
            "sub/task.yaml": NATIVE + "task_class: evil.py:Evil\n",
            "sub/data.jsonl": jsonl(ROWS),
            "sub/evil.py": EVIL,
            "sub/glm.yaml": GLM + 'module: "evil.Task"\n',
            "sub/data/test.jsonl": jsonl(GLM_ROWS),
        },
    )
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(["ls", "sub"])
    assert code == 0 and "arith" in output and "glmtask" in output, output
    assert not (tmp_path / "PWNED").exists()
    code, output = run_cli(["validate", "sub/task.yaml"])
    assert code != 0 and "--trust-task-code" in output and not (tmp_path / "PWNED").exists()
    code, output = run_cli(["validate", "sub/task.yaml", "--trust-task-code"])
    assert (tmp_path / "PWNED").read_text() == "ran"  # consent given: the class was imported
    assert code == 0 and "ok arith: 3 samples" in output, output


def test_a_use_case_file_inside_a_folder_is_not_imported(tmp_path, monkeypatch):
    """A .py file among task files is code nobody named: running the folder never imports it."""
    _case_folder(
        tmp_path,
        {
            "sub/task.yaml": NATIVE,
            "sub/data.jsonl": jsonl(ROWS),
            "sub/uc.py": "import pathlib\npathlib.Path('PWNED').write_text('ran')\n" + USECASE,
        },
    )
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(["validate", "sub"])
    assert code == 0 and "ok arith" in output and "uc" not in output.replace("sub", ""), output
    assert not (tmp_path / "PWNED").exists()


def test_the_use_case_dialect_refuses_a_file_it_was_not_named(tmp_path):
    """The dialect's own rule, should a folder ever hand it a .py file: consent first."""
    from proctor.core.errors import TaskDefinitionError
    from proctor.dialects.aisteer.declaration import AISteerDialect

    (tmp_path / "uc.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('PWNED').write_text('ran')\n" + USECASE
    )
    with pytest.raises(TaskDefinitionError, match="--trust-task-code") as info:
        AISteerDialect().load(tmp_path / "uc.py", None, False, AISteerDialect.Options(), [])
    assert info.value.file == str(tmp_path / "uc.py") and not (tmp_path / "PWNED").exists()
    (task,) = AISteerDialect().load(
        tmp_path / "uc.py", None, True, AISteerDialect.Options(), []
    )  # named on the command line
    assert task.name == "uc:Echo" and (tmp_path / "PWNED").exists()


def test_a_symlinked_task_file_in_a_folder_is_a_problem_named_by_file(tmp_path, monkeypatch):
    _case_folder(
        tmp_path,
        {
            "sub/task.yaml": NATIVE,
            "sub/data.jsonl": jsonl(ROWS),
            "elsewhere/other.yaml": NATIVE.replace("arith", "other"),
            "elsewhere/data.jsonl": jsonl(ROWS),
        },
    )
    os.symlink(tmp_path / "elsewhere" / "other.yaml", tmp_path / "sub" / "other.yaml")
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(["validate", "sub"])
    assert code != 0 and "ok arith" in output and "sub/other.yaml" in output and "symlink" in output, output
    code, output = run_cli(["validate", "sub/other.yaml"])  # named on the command line: the user's choice
    assert code == 0 and "ok other" in output, output


def test_data_folders_given_on_the_command_line_are_readable(tmp_path, monkeypatch):
    """--data-dir (${PROCTOR_DATA}), --var NAME=/absolute and a relative path into them all work."""
    _case_folder(
        tmp_path,
        {
            "tasks/a.yaml": NATIVE.replace("data: data.jsonl", "data: ${PROCTOR_DATA}/rows.jsonl"),
            "tasks/b.yaml": NATIVE.replace("arith", "b").replace("data: data.jsonl", "data: ${ROWS}"),
            "tasks/c.yaml": NATIVE.replace("arith", "c").replace("data: data.jsonl", "data: ../data/rows.jsonl"),
            "data/rows.jsonl": jsonl(ROWS),
        },
    )
    monkeypatch.chdir(tmp_path)
    code, output = run_cli(
        ["validate", "tasks", "--data-dir", "data", "--var", f"ROWS={tmp_path / 'data' / 'rows.jsonl'}"]
    )
    assert code == 0 and all(f"ok {n}: 3 samples" in output for n in ("arith", "b", "c")), output
    code, output = run_cli(["validate", "tasks/c.yaml"])  # without --data-dir, ../data climbs out
    assert code != 0 and "tasks/c.yaml" in output and "data.path" in output, output


@pytest.mark.fast
def test_sandboxed_templates_render_as_before():
    """The sandbox changes nothing a task may do: filters, methods on values, loops, str.format."""
    from proctor.core.templates import compile_expression, compile_template

    fields = {"q": "  What is 2+2? ", "choices": ["3", "4"], "label": "1", "n": 3}
    template = compile_template(
        "{{ q.strip() | upper }}|{% for c in choices %}{{ loop.index }}.{{ c }} {% endfor %}"
        "|{{ '{}-{}'.format(n, label) }}"
        "|{{ q | regex_replace('[0-9]', '#') }}|{{ label | int + 1 }}",
        origin="t.yaml",
        field="prompt",
    )
    assert template.render(fields) == "WHAT IS 2+2?|1.3 2.4 |3-1|  What is #+#? |2"
    assert compile_expression("{{ choices + ['5'] }}", origin="t.yaml", field="choices").evaluate(fields) == [
        "3",
        "4",
        "5",
    ]
    assert fields["choices"] == ["3", "4"]


def test_lm_eval_templates_render_identically_in_the_sandbox():
    """lm-eval's own environment and the sandbox proctor swaps in give the same text, byte for byte."""
    utils = pytest.importorskip("lm_eval.utils")
    from proctor.dialects.lmeval.library import compiled_templates

    doc = {"question": "Why?\n", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "B", "ctx": "x  y"}
    templates = [
        "Question: {{question}}\nAnswer:",
        "{{choices.label.index(answerKey)}}",
        "{{choices.text}}",
        "{{ctx | regex_replace('  ', ' ')}}",
        "{% for t in choices.text %}{{ t | upper }}{% endfor %}",
    ]
    plain = [utils.apply_template(t, doc) for t in templates]
    with compiled_templates():
        sandboxed = [utils.apply_template(t, doc) for t in templates]
    assert sandboxed == plain and plain[1] == "1"


def test_consent_reaches_the_command_line_in_a_fresh_process(tmp_path):
    """The real entry point: a GLM module refused without the flag (exit 2, no traceback, nothing ran)."""
    _case_folder(
        tmp_path,
        {"sub/glm.yaml": GLM + 'module: "evil.Task"\n', "sub/data/test.jsonl": jsonl(GLM_ROWS), "sub/evil.py": EVIL},
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "400"}
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "validate", "sub/glm.yaml", "--data-path", "sub"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert (
        done.returncode == 2
        and "Traceback" not in output
        and "--trust-task-code" in output
        and "sub/glm.yaml" in output
    ), output
    assert not (tmp_path / "PWNED").exists()
