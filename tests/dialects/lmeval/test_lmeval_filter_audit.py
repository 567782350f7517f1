"""``lmeval.filter-cuts-reference``: each document's own target, written as the model's answer, goes through the
task's filters and lm-eval's exact_match. On real GSM8K rows, lm-eval's own ``gsm8k.yaml`` is silent (its
``regexes_to_ignore`` strip the worked solution and the thousands separators from the target too), while the
same file without them, and a first-integer regex over references like '2,125', get the finding. Through
``proctor validate``'s entry point."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("lm_eval")

from proctor.cli import main  # noqa: E402
from proctor.dialects.lmeval.library import catalogue_root  # noqa: E402
from tests.conftest import shared_path  # noqa: E402

RULE = "lmeval.filter-cuts-reference"
LOCAL = """include: {catalogue}/gsm8k/gsm8k.yaml
task: {name}
dataset_path: json
dataset_name: null
dataset_kwargs:
  data_files:
    test: test.jsonl
    train: test.jsonl
num_fewshot: 0
"""
FIRST_INTEGER = """task: first_integer
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: generate_until
test_split: test
doc_to_text: "Question: {{question}}\\nAnswer:"
doc_to_target: "{{answer.split('#### ')[-1]}}"
generation_kwargs:
  until: ["\\n"]
filter_list:
  - name: first-int
    filter:
      - function: regex
        regex_pattern: "REGEX"
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""


@pytest.fixture(scope="module")
def rows() -> str:
    """Four real GSM8K rows whose answers hold a thousands separator ('2,125'), and four whose answers do not."""
    lines = shared_path("data", "gsm8k", "test.jsonl").read_text().splitlines()
    with_comma = [line for line in lines if "," in json.loads(line)["answer"].split("#### ")[-1]]
    plain = [line for line in lines if "," not in json.loads(line)["answer"].split("#### ")[-1]]
    assert len(with_comma) >= 4
    return "\n".join(with_comma[:4] + plain[:4]) + "\n"


def _validate(folder, yaml_text: str, rows: str, capsys, monkeypatch) -> list[str]:
    folder.mkdir()
    monkeypatch.chdir(folder)  # lm-eval reads data_files from the working folder
    (folder / "task.yaml").write_text(yaml_text)
    (folder / "test.jsonl").write_text(rows)
    try:
        main(["validate", str(folder / "task.yaml")])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr()
    return [line for line in (out.out + out.err).splitlines() if f"[{RULE}]" in line]


def test_lm_evals_gsm8k_is_silent_and_without_its_ignores_the_rationale_target_is_named(
    rows, tmp_path, capsys, monkeypatch
):
    real = LOCAL.format(catalogue=catalogue_root(), name="gsm8k_local")
    assert _validate(tmp_path / "real", real, rows, capsys, monkeypatch) == []
    # the same file scoring exact_match on the whole worked solution: every document's target reads as its number
    bare = LOCAL.format(catalogue=catalogue_root(), name="gsm8k_bare") + (
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
    )
    found = _validate(tmp_path / "bare", bare, rows, capsys, monkeypatch)
    assert found, "the rationale target was not named"
    assert "filter 'strict-match'" in found[0] and "(8 of the 8 documents" in found[0], found[0]
    assert "field 'filter_list[strict-match]'" in found[0]


def test_a_first_integer_regex_over_thousands_is_named_and_a_whole_number_one_is_not(
    rows, tmp_path, capsys, monkeypatch
):
    found = _validate(tmp_path / "int", FIRST_INTEGER.replace("REGEX", "(-?\\\\d+)"), rows, capsys, monkeypatch)
    assert found, "the first-integer regex was not named"
    # the part before the first separator: '2' out of '2,125'
    assert re.search(r"reads '(\d+)' out of document \d+'s own target '\1,\d{3}'", found[0]), found[0]
    assert "(4 of the 8 documents" in found[0], found[0]
    whole = FIRST_INTEGER.replace("REGEX", "(-?[0-9][0-9,]*)")
    assert _validate(tmp_path / "whole", whole, rows, capsys, monkeypatch) == []
