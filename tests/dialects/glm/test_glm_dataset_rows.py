"""GLM's ``EvaluationDataset.process_single_file`` reads its JSON lines through proctor's row reader: a blank
line is skipped (as the handler that lists the samples skips it, so the two agree on the rows), a key given
twice or a line that is not JSON is an error naming the file and line."""

from __future__ import annotations

import json

import pytest

from proctor.core.errors import TaskDefinitionError
from proctor.dialects.glm.dataset import EvaluationDataset


class _Items(EvaluationDataset):
    """The items as read (GLM tokenizes them here; no tokenizer is needed to check the reading)."""

    def __init__(self) -> None:  # GLM's __init__ asks for the run's tokenizer
        self.data = []

    def process_single_item(self, item):
        return item


def test_items_are_each_lines_json_and_blank_lines_are_skipped(tmp_path):
    items = [{"inputs_pretokenized": "a", "label": 0}, {"inputs_pretokenized": "b", "label": 1}]
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(items[0]) + "\n\n" + json.dumps(items[1]) + "\n", encoding="utf-8")
    dataset = _Items()
    dataset.process_single_file(str(path))
    assert dataset.data == items


@pytest.mark.parametrize(
    "text, expect",
    [
        ('{"label": 0}\n{"label": 0, "label": 1}\n', ["test.jsonl:2", "'label' is given twice"]),
        ('{"label": 0}\n{oops\n', ["test.jsonl:2", "line 2 is not valid JSON"]),
    ],
)
def test_a_bad_line_names_the_file_and_line(text, expect, tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaskDefinitionError) as caught:
        _Items().process_single_file(str(path))
    for word in expect:
        assert word in str(caught.value), str(caught.value)
