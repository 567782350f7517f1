"""A YAML alias bomb (nine lists of nine aliases of the list before, nine levels deep: 387 million values from
a 500-byte file) is refused in every dialect's YAML, with an error naming the file, instead of a run that
hangs or fills the memory; through the CLI's entry point in this process. lm-eval's own loader (and the
files it ``include``s) gets the same check."""

from __future__ import annotations

import pytest

from proctor.core.yaml_bounds import MAX_EXPANDED, safe_load
from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, run_in_process, write
from tests.support.lmeval_quiz import JSON_TASK as LMEVAL_TASK
from tests.support.seahelm_fixtures import seahelm_tree

pytestmark = pytest.mark.fast

BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{name}: &{name} [{', '.join(['*' + before] * 9)}]\n" for before, name in zip("abcdefgh", "bcdefghi")
)
REFUSED = "(an alias bomb?)"


def _refused(args: list[str], *words: str) -> str:
    code, output = run_in_process(args)
    assert code == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert REFUSED in output, output
    for word in words:
        assert word in output, output
    return output


def _indented(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def test_native(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ + "metadata:\n" + _indented(BOMB))
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    _refused(["validate", "quiz.yaml"], "quiz.yaml:1: invalid YAML: the aliases (*name) of the document expand it")


def test_glm(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t.yaml", "name: t\ntype: gen\npath: d\n" + BOMB)
    _refused(["validate", "t.yaml"], "t.yaml:1: invalid YAML")


def test_lmeval_task_file(tmp_path, monkeypatch):
    pytest.importorskip("lm_eval")
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", LMEVAL_TASK + BOMB)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    _refused(["validate", "quiz.yaml"], "quiz.yaml:1: invalid YAML")


def test_a_file_lm_eval_includes_is_read_by_its_own_loader_with_the_check(tmp_path, monkeypatch):
    pytest.importorskip("lm_eval")
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "base.yaml", BOMB + "output_type: multiple_choice\n")
    write(tmp_path / "quiz.yaml", "include: base.yaml\n" + LMEVAL_TASK)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    _refused(["validate", "quiz.yaml"], "quiz.yaml", f"of {tmp_path / 'base.yaml'} expand it")


def test_seahelm_config(tmp_path, monkeypatch):
    tasks, _ = seahelm_tree(tmp_path)
    config = tasks / "nlr" / "causal" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + BOMB, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _refused(["validate", str(config)], "config.yaml")


def test_a_long_document_without_aliases_and_a_few_aliases_load():
    long = "items:\n" + "".join(f"  - {i}\n" for i in range(MAX_EXPANDED // 100))
    assert len(safe_load(long)["items"]) == MAX_EXPANDED // 100
    shared = safe_load("base: &base {a: 1, b: [1, 2]}\none: *base\ntwo: {<<: *base, c: 3}\n")
    assert shared["one"] == {"a": 1, "b": [1, 2]} and shared["two"] == {"a": 1, "b": [1, 2], "c": 3}


def test_an_alias_inside_its_own_anchor_is_refused():
    with pytest.raises(Exception, match="refers to itself"):
        safe_load("a: &a [1, *a]\n")
