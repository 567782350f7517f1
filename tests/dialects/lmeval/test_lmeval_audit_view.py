"""The audit reads an lm-eval task's rows as lm-eval builds and scores them (handler._samples, audit_view.py), through
``proctor validate``'s entry point: a target given as the right choice's text is that choice (not choice 0),
``acc_mutual_info``'s unconditional requests are no choices, a ``multiple_input`` row's question is what its
contexts share (not the continuation they all end with), and choices glued to a Chinese prompt are how Chinese is
written. Each valid task is silent; its broken twin still gets the finding (red team 13: 104, 106, 107, 123, 425)."""

from __future__ import annotations

import pytest

pytest.importorskip("lm_eval")

from tests.support.validate_lines import audit_lines, jsonl_text  # noqa: E402

CHOICE_TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {folder}/d.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{q}}}}\\nAnswer:"
doc_to_choice: "{{{{[a, b]}}}}"
doc_to_target: {target}
metric_list:
{metrics}"""
COLOURS = [("red", "tiny"), ("green", "huge"), ("blue", "medium-sized"), ("black", "small")]


def _rows(labels):
    return jsonl_text(
        [
            {"q": f"Which is right {i}?", "a": COLOURS[i % 4][0] + str(i), "b": COLOURS[i % 4][1] + str(i), "label": k}
            for i, k in enumerate(labels)
        ]
    )


def _choice_lines(tmp_path, capsys, name, labels, target, metrics=("acc",)):
    folder = tmp_path / name
    task = CHOICE_TASK.format(
        name=name, folder=folder, target=target, metrics="".join(f"  - metric: {m}\n" for m in metrics)
    )
    return audit_lines(folder, {"t.yaml": task, "d.jsonl": _rows(labels)}, capsys)


def _rules(lines):
    return sorted(line.split("audit [", 1)[1].split("]", 1)[0] for line in lines)


TEXT_TARGET = '"{{a if label == 0 else b}}"'


def test_a_text_target_is_the_choice_it_names(tmp_path, capsys):
    # labels 0,1,0,1,...: the text target names choice 1 in half the rows (lm-eval scores them so)
    assert _rules(_choice_lines(tmp_path, capsys, "varied", [0, 1] * 4, TEXT_TARGET)) == []
    # every row's right answer really is choice 0: still said, with the count
    lines = _choice_lines(tmp_path, capsys, "constant", [0] * 8, TEXT_TARGET)
    (line,) = [x for x in lines if "[target.constant]" in x]
    assert "every one of the 8 rows" in line and "choice index 0" in line


def test_acc_mutual_info_requests_are_no_choices(tmp_path, capsys):
    lines = _choice_lines(tmp_path, capsys, "mi", [0, 1] * 4, "label", ("acc", "acc_mutual_info"))
    assert _rules(lines) == []


WINO = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {folder}/d.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: answer
doc_to_choice: "{choices}"
doc_to_target: "{{{{rest}}}}"
metric_list:
  - metric: acc
"""


def _wino_lines(tmp_path, capsys, name, choices):
    folder = tmp_path / name
    rows = [
        {"s1": f"The trophy {i} did not fit in the suitcase {i} because the", "o1": "trophy", "o2": "suitcase"}
        | {"rest": " was too big.", "answer": i % 2}
        for i in range(6)
    ]
    task = WINO.format(name=name, folder=folder, choices=choices)
    return audit_lines(folder, {"t.yaml": task, "d.jsonl": jsonl_text(rows)}, capsys)


def test_multiple_input_rows_ask_what_their_contexts_share(tmp_path, capsys):
    # every row ends with the same continuation; what it asks is in its contexts, which differ row by row
    assert _rules(_wino_lines(tmp_path, capsys, "wino", "{{[s1 + ' ' + o1, s1 + ' ' + o2]}}")) == []
    # contexts that read nothing of the row but the options: every row asks the same
    lines = _wino_lines(tmp_path, capsys, "same", "{{['It was the ' + o1, 'It was the ' + o2]}}")
    assert "prompt.constant" in _rules(lines)
    (line,) = [x for x in lines if "[prompt.constant]" in x]
    assert "all 6 rows render the same prompt ('It was the _  was too big.')" in line, line


CJK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {folder}/d.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "{text}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
target_delimiter: ""
metric_list:
  - metric: acc
"""


def test_chinese_choices_after_a_chinese_prompt_are_not_glued(tmp_path, capsys):
    rows = [
        {"q": "中国的首都是", "choices": ["北京", "上海", "广州"], "label": 0},
        {"q": "日本的首都是", "choices": ["大阪", "东京", "京都"], "label": 1},
        {"q": "法国的首都是", "choices": ["里昂", "尼斯", "巴黎"], "label": 2},
        {"q": "英国的首都是", "choices": ["伦敦", "曼城", "利物浦"], "label": 0},
    ]
    folder = tmp_path / "zh"
    task = CJK.format(name="zh", folder=folder, text="问题：{{q}}？\\n答案：")
    assert _rules(audit_lines(folder, {"t.yaml": task, "d.jsonl": jsonl_text(rows)}, capsys)) == []
    english = [{"q": f"Capital {i}", "choices": [f"Paris{i}", f"Rome{i}"], "label": i % 2} for i in range(4)]
    folder = tmp_path / "en"
    task = CJK.format(name="en", folder=folder, text="Q: {{q}}\\nA:")
    lines = audit_lines(folder, {"t.yaml": task, "d.jsonl": jsonl_text(english)}, capsys)
    assert _rules(lines) == ["prompt.glued-answer"]
    assert "in 4 of 4 documents" in lines[0], lines[0]


GENERATED = """task: gen_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {folder}/d.jsonl
test_split: test
output_type: generate_until
doc_to_text: "{{{{q}}}} Answer yes or no.\\nAnswer: "
doc_to_choice: ["yes", "no"]
doc_to_target: label
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: exact_match
"""


def test_a_generated_tasks_index_target_is_the_choice_it_indexes(tmp_path, capsys):
    """lm-eval's generate_until with doc_to_choice scores against ``doc_to_choice(doc)[target]``: the reference the
    audit reads is 'yes', not '0'."""
    folder = tmp_path / "gen"
    rows = jsonl_text([{"q": f"Is {i} even?", "label": 0} for i in range(8)])
    lines = audit_lines(folder, {"t.yaml": GENERATED.format(folder=folder), "d.jsonl": rows}, capsys)
    (line,) = [x for x in lines if "[target.constant]" in x]
    assert "every one of the 8 generated rows has the same reference answer ('yes')" in line, line


def test_an_index_past_the_choices_is_refused_under_acc_mutual_info(tmp_path, capsys):
    """acc_mutual_info doubles a row's requests; an index into the doubled list (2 of 2 choices) is still no choice:
    lm-eval would score the row wrong whatever the model says."""
    from proctor.cli import main

    folder = tmp_path / "mi_bad"
    folder.mkdir()
    (folder / "d.jsonl").write_text(_rows([0, 1, 2, 0]))
    task = CHOICE_TASK.format(name="mi_bad", folder=folder, target="label", metrics="  - metric: acc_mutual_info\n")
    (folder / "t.yaml").write_text(task)
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(folder / "t.yaml")])
    assert exc.value.code
    out = capsys.readouterr()
    assert "document 2: doc_to_target gave 2, out of range for its 2 choices" in out.out + out.err, out
