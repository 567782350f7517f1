"""Which files and splits a task really evaluates (``audit/source_file_rules.py``), through ``proctor validate``'s
entry point: an lm-eval task evaluating its training split beside a test split it names, or mapping its test split to
a training file (``data.split``); a glob reading a dev and a validation file beside the test file (``data.split``);
a glob reading a README, a licence or a script as rows (``data.stray-file``), native and GLM-130B. Each finding
names its rule, file, row or line and field; each right twin is silent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.audit_corpus import QUIZ, csv_text, jsonl, task_yaml
from tests.support.validate_lines import audit_lines

pytestmark = pytest.mark.fast

TRAIN = [{**r, "id": "t" + r["id"], "question": "Train: " + r["question"]} for r in QUIZ]


def _lmeval(test_split: str, data_files: str) -> str:
    return (
        "task: quiz\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        + data_files
        + f"output_type: multiple_choice\ntest_split: {test_split}\n"
        + 'doc_to_text: "Q: {{question}}\\nA:"\ndoc_to_choice: choices\ndoc_to_target: label\n'
    )


BOTH = "    train: train.jsonl\n    test: test.jsonl\n"


def _lines(folder: Path, files: dict[str, str], capsys, monkeypatch, name: str = "quiz.yaml") -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)  # lm-eval reads data_files from the working folder
    return audit_lines(folder, files, capsys, [str(folder / name)])


def _hits(lines: list[str], rule: str) -> list[str]:
    return [line for line in lines if f"[{rule}]" in line]


def _data(test: list[dict] = QUIZ, train: list[dict] = TRAIN) -> dict[str, str]:
    return {"test.jsonl": jsonl(test), "train.jsonl": jsonl(train)}


def test_lmeval_test_split_train_beside_a_test_split(tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    broken = _lines(tmp_path / "b", {"quiz.yaml": _lmeval("train", BOTH), **_data()}, capsys, monkeypatch)
    (line,) = _hits(broken, "data.split")
    assert re.search(r"b/quiz\.yaml:8, field 'test_split'", line), line
    assert "test_split 'train' evaluates the training split (train.jsonl)" in line
    assert "also names split 'test' (test.jsonl)" in line
    right = _lines(tmp_path / "r", {"quiz.yaml": _lmeval("test", BOTH), **_data()}, capsys, monkeypatch)
    assert not _hits(right, "data.split"), right


def test_lmeval_train_split_of_a_dataset_with_no_other_is_left_alone(tmp_path, capsys, monkeypatch):
    """Many of lm-eval's own tasks evaluate 'train' because their dataset has no other split: not named."""
    pytest.importorskip("lm_eval")
    only = "    train: train.jsonl\n"
    lines = _lines(tmp_path, {"quiz.yaml": _lmeval("train", only), **_data()}, capsys, monkeypatch)
    assert not _hits(lines, "data.split"), lines


def test_lmeval_data_files_map_the_test_split_to_a_training_file(tmp_path, capsys, monkeypatch):
    pytest.importorskip("lm_eval")
    wrong = "    train: train.jsonl\n    test: train.jsonl\n"
    broken = _lines(tmp_path / "b", {"quiz.yaml": _lmeval("test", wrong), **_data()}, capsys, monkeypatch)
    (line,) = _hits(broken, "data.split")
    assert re.search(r"b/quiz\.yaml:6, field 'dataset_kwargs\.data_files\.test'", line), line
    assert "the evaluated split 'test' (test_split) reads train.jsonl, a file named as a training split" in line


MMLU_COLUMNS = ["question", "A", "B", "C", "D", "answer"]
MMLU = dict(
    data={"path": "mmlu/*.csv", "columns": MMLU_COLUMNS},
    prompt="{{ question }}\nA. {{ A }}\nB. {{ B }}\nC. {{ C }}\nD. {{ D }}\nAnswer:",
    choices=[" A", " B", " C", " D"],
    target="{{ 'ABCD'.index(answer) }}",
)


def _mmlu_rows(subject: str, n: int) -> str:
    return csv_text(None, [[f"{subject} question {i}?", "w", "x", "y", "z", "ABCD"[i % 4]] for i in range(n)])


def test_a_glob_reading_dev_and_validation_files_beside_the_test_file(tmp_path, capsys):
    files = {
        "mmlu/anatomy_test.csv": _mmlu_rows("anatomy", 8),
        "mmlu/anatomy_dev.csv": _mmlu_rows("facts", 5),
        "mmlu/anatomy_val.csv": _mmlu_rows("marketing", 6),
    }
    broken = audit_lines(tmp_path / "b", {"t.yaml": task_yaml(**MMLU), **files}, capsys)
    (line,) = _hits(broken, "data.split")
    assert re.search(r"mmlu/anatomy_dev\.csv, row 1, field 'data'", line), line
    assert "reads anatomy_dev.csv, a validation or dev split's file (1 more such file), beside the test file (" in line
    # the glob narrowed to the test files, and a glob of test files of several subjects: silent
    narrowed = {**MMLU, "data": {"path": "mmlu/*_test.csv", "columns": MMLU_COLUMNS}}
    right = audit_lines(tmp_path / "r", {"t.yaml": task_yaml(**narrowed), **files}, capsys)
    assert not _hits(right, "data.split"), right
    subjects = {f"mmlu/{s}_test.csv": _mmlu_rows(s, 6) for s in ("anatomy", "marketing", "virology")}
    right = audit_lines(tmp_path / "s", {"t.yaml": task_yaml(**MMLU), **subjects}, capsys)
    assert not _hits(right, "data.split"), right


TEXTS = {
    "corpus/a.txt": "The cat sat on the mat and looked out of the window.\n",
    "corpus/b.txt": "Rain fell all day over the hills and the river rose.\n",
}
STRAYS = {
    "corpus/LICENSE": "Permission is hereby granted, free of charge, to any person obtaining a copy.\n",
    "corpus/README.md": "# Corpus\n\nTwo short stories, one per file.\n",
}
PERPLEXITY = dict(kind="perplexity", data={"path": "corpus/*", "format": "text"}, text="{{ text }}")
PERPLEXITY.update(prompt=None, choices=None, target=None)


def test_a_glob_reading_a_licence_and_a_readme_as_texts(tmp_path, capsys):
    broken = audit_lines(tmp_path / "b", {"t.yaml": task_yaml(**PERPLEXITY), **TEXTS, **STRAYS}, capsys)
    (line,) = _hits(broken, "data.stray-file")
    assert re.search(r"corpus/LICENSE, row 1, field 'data'", line), line
    assert "reads LICENSE, which is no data" in line and "and README.md" in line
    narrowed = {**PERPLEXITY, "data": {"path": "corpus/*.txt", "format": "text"}}
    right = audit_lines(tmp_path / "r", {"t.yaml": task_yaml(**narrowed), **TEXTS, **STRAYS}, capsys)
    assert not _hits(right, "data.stray-file"), right
    alone = audit_lines(tmp_path / "a", {"t.yaml": task_yaml(**PERPLEXITY), **TEXTS}, capsys)
    assert not _hits(alone, "data.stray-file"), alone
    # documents without a suffix (most of the files) beside one with: none is taken for a licence
    bare = {f"corpus/doc{i}": text for i, text in enumerate([*TEXTS.values(), "A third story.\n"])}
    bare["corpus/index.txt"] = "doc0 doc1 doc2\n"
    lines = audit_lines(tmp_path / "n", {"t.yaml": task_yaml(**PERPLEXITY), **bare}, capsys)
    assert not _hits(lines, "data.stray-file"), lines


GLM_LM = 'name: "wiki"\ntype: "lm"\npath: "data"\nfile-pattern:\n  test: "%s"\nmax_seq_length: 512\n'


def test_a_glm_language_model_pattern_reading_a_readme_and_a_script(tmp_path, capsys):
    stories = {f"data/story{i}.txt": text for i, text in enumerate(TEXTS.values())}
    strays = {"data/README.md": "# Stories\n", "data/get.sh": "#!/bin/sh\nwget https://example.org/stories.tar\n"}
    folder = tmp_path / "b"
    broken = audit_lines(folder, {"glm.yaml": GLM_LM % "**/*", **stories, **strays}, capsys, _glm(folder))
    (line,) = _hits(broken, "data.stray-file")
    assert re.search(r"data/README\.md, row 1, field 'data'", line), line
    assert "and get.sh" in line
    folder = tmp_path / "r"
    right = audit_lines(folder, {"glm.yaml": GLM_LM % "**/*.txt", **stories, **strays}, capsys, _glm(folder))
    assert not _hits(right, "data.stray-file"), right


def _glm(folder: Path) -> list[str]:
    return [str(folder / "glm.yaml"), "--data-path", str(folder)]


GLM_MUL = 'name: "glmtask"\ntype: "mul"\npath: "data"\nfile-pattern:\n  test: "**/test.jsonl"\n'
STATEMENTS = [f"Statement {i} is true." for i in range(12)]


def _glm_rows(n: int, cue: str) -> str:
    return jsonl(
        [
            {"inputs_pretokenized": f"{cue}{s}", "choices_pretokenized": ["yes", "no"], "label": i % 2}
            for i, s in enumerate(STATEMENTS[:n])
        ]
    )


def test_glm_prompt_folders_holding_different_rows(tmp_path, capsys):
    """GLM-130B reports the max and median over a dataset's prompt folders: a folder of 4 rows beside one of 12 is
    compared on other questions. Prompt folders of the same rows, and a group of subjects of different sizes (files
    of different names), are silent."""
    folder = tmp_path / "b"
    files = {
        "glm.yaml": GLM_MUL,
        "data/prompt_1/test.jsonl": _glm_rows(12, ""),
        "data/prompt_2/test.jsonl": _glm_rows(4, "Q: "),
    }
    (line,) = _hits(audit_lines(folder, files, capsys, _glm(folder)), "glm.prompt-rows")
    assert re.search(r"b/glm\.yaml:4, field 'file-pattern'", line), line
    assert "prompt_2/test.jsonl has 4 and prompt_1/test.jsonl 12" in line
    folder = tmp_path / "r"
    files = {**files, "data/prompt_2/test.jsonl": _glm_rows(12, "Q: ")}
    assert not _hits(audit_lines(folder, files, capsys, _glm(folder)), "glm.prompt-rows")
    folder = tmp_path / "s"
    subjects = 'name: "glmtask"\ntype: "mul"\npath: "data"\nfile-pattern:\n  stem: "*.jsonl"\n'
    files = {"glm.yaml": subjects, "data/algebra.jsonl": _glm_rows(12, ""), "data/physics.jsonl": _glm_rows(4, "")}
    assert not _hits(audit_lines(folder, files, capsys, _glm(folder)), "glm.prompt-rows")
