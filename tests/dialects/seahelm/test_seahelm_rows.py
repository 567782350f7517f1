"""SEA-HELM's local data files read through proctor's row reader: its checks (a key given twice, bytes that are
not UTF-8) as errors naming the file, line and field; gzipped JSON lines; rows kept as the file holds them."""

from __future__ import annotations

import gzip
import json

import pytest

from proctor.core.errors import TaskDefinitionError
from proctor.dialects.seahelm.rows import read_rows

ROWS = [{"id": "1", "label": "Positive", "prompts": [{"text": "a"}]}, {"id": "2", "label": "Negative", "prompts": []}]


def test_json_lines_plain_or_gzipped_give_the_files_rows_unchanged(tmp_path):
    text = "".join(json.dumps(row) + "\n" for row in ROWS)
    (tmp_path / "id").mkdir()
    (tmp_path / "id" / "eval.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "eval.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    assert read_rows(tmp_path, "eval", "id") == ROWS  # no _row added: task code sees the rows as written
    assert read_rows(tmp_path / "eval.jsonl.gz") == ROWS
    (tmp_path / "wrapped.json").write_text(json.dumps({"data": ROWS}), encoding="utf-8")
    assert read_rows(tmp_path / "wrapped.json") == ROWS


@pytest.mark.parametrize(
    "name, content, expect",
    [
        (
            "eval.jsonl",
            '{"id": "1"}\n{"id": "2", "label": "a", "label": "b"}\n',
            ["eval.jsonl:2", "'label' is given twice"],
        ),
        ("eval.jsonl", '{"id": "1"}\n\n{bad\n', ["eval.jsonl:3", "line 3 is not valid JSON"]),
        ("eval.json", '[{"id": "1",\n "id": "2"}]', ["eval.json", "'id' is given twice"]),
        ("eval.json", '[{"id": "1"},\n {oops}]', ["eval.json:2", "not valid JSON"]),
        ("eval.json", "7", ["eval.json", "holds a int"]),
    ],
)
def test_a_bad_file_is_an_error_naming_file_and_line(name, content, expect, tmp_path):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(tmp_path / name)
    for word in expect:
        assert word in str(caught.value), str(caught.value)
