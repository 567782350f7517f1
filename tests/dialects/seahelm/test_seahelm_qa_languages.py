"""QA F1 in Thai and Chinese as SEA-HELM computes it: words split by pythainlp (newmm) / jieba, joined
by spaces, then normalised; first reference only. Expected values are worked out by hand below."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from proctor.core.errors import ProctorError
from proctor.dialects.seahelm import qa as QA
from proctor.dialects.seahelm.dataloaders import SeaHelmLocalDataloader
from proctor.dialects.seahelm.task_config import TaskConfig
from tests.conftest import shared_path


def _evaluate(lang, tag, labels, responses):
    cfg = {"languages": {lang: {"prompt_template": {"answer_tag": tag}, "filepath": "-"}}}
    loader = SeaHelmLocalDataloader(TaskConfig("qa", lang, cfg), 0)
    loader.dataset = [{"label": label, "prompts": [{}]} for label in labels]
    loader.inference_df = pd.DataFrame({"label": labels, "responses": [[r] for r in responses]})
    out = QA.QuestionAnsweringMetric(loader, loader.task_config).evaluate_responses()
    return out, loader.inference_df["individual_scores"].tolist()


def test_thai_f1_uses_newmm_words_and_the_first_reference():
    pytest.importorskip("pythainlp", reason="Thai QA F1 needs the seahelm-th extra (pythainlp)")
    out, rows = _evaluate(
        "th",
        "คำตอบ:",
        [["กรุงเทพมหานคร"], ["ไทย", "ประเทศไทย"]],
        ["คำตอบ: เมืองหลวงของประเทศไทยคือกรุงเทพมหานคร", "คำตอบ: ประเทศไทย"],
    )
    # row 1: newmm gives เมืองหลวง|ของ|ประเทศ|ไทย|คือ|กรุงเทพมหานคร vs กรุงเทพมหานคร: P=1/6, R=1 -> F1=2/7
    #        (split on spaces it would be one token against another: 0)
    # row 2: ประเทศ|ไทย vs the first reference ไทย: P=1/2, R=1 -> F1=2/3 (the second reference, an exact
    #        match, is not consulted for Thai)
    assert rows == pytest.approx([2 / 7, 2 / 3])
    assert out["f1"] == pytest.approx(100 * (2 / 7 + 2 / 3) / 2) and out["normalized_f1"] == out["f1"]
    assert out["exact_match"] == 0.0
    assert out["found_in_prediction"] == 100.0 and out["null_count"] == 0


def test_chinese_f1_uses_jieba_words_then_strips_ascii_punctuation():
    pytest.importorskip("jieba", reason="Chinese QA F1 needs the seahelm-zh extra (jieba)")
    out, rows = _evaluate(
        "zh",
        "答案：",
        [["中国的首都"], ["北京"], ["北京"], ["上海"]],
        ["答案：北京是中国的首都", "答案：北京!", "答案：北京。", ""],
    )
    # row 1: 北京|是|中国|的|首都 vs 中国|的|首都: P=3/5, R=1 -> F1=3/4
    # row 2: 北京|! -> "北京 !" -> normalised "北京": exact match, F1=1
    # row 3: 北京|。 (not ASCII punctuation, kept): P=1/2, R=1 -> F1=2/3
    # row 4: empty response -> 0, counted in null_count
    assert rows == pytest.approx([3 / 4, 1.0, 2 / 3, 0.0])
    assert out["f1"] == pytest.approx(100 * (3 / 4 + 1 + 2 / 3 + 0) / 4)
    assert out["exact_match"] == pytest.approx(25.0)
    assert out["found_in_prediction"] == pytest.approx(75.0) and out["null_count"] == 1


def test_other_languages_split_on_spaces_and_take_the_best_reference():
    out, rows = _evaluate("id", "Jawaban:", [["kota Jakarta", "Jakarta"]], ["Jawaban: Jakarta."])
    assert rows == [1.0] and out["exact_match"] == 100.0


@pytest.mark.parametrize("lang, package, extra", [("th", "pythainlp", "seahelm-th"), ("zh", "jieba", "seahelm-zh")])
def test_missing_tokeniser_is_a_clear_error(monkeypatch, lang, package, extra):
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # import now raises ImportError, as if not installed
    with pytest.raises(ProctorError, match=rf"needs {package}.*pip install 'proctor\[{extra}\]'"):
        QA.segment("x", lang)


def test_missing_tokeniser_stops_the_real_qa_folder_before_generation(monkeypatch, tmp_path):
    folder = shared_path("examples", "seahelm", "seahelm_tasks", "nlu", "question_answering")
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    copy = tmp_path / "qa"
    (copy / "th").mkdir(parents=True)
    row = {
        "id": 1,
        "label": ["ไทย"],
        "prompts": [{"context": "ประเทศไทย", "question": "ประเทศอะไร"}],
        "metadata": {"language": "th"},
    }
    (copy / "th" / "eval.jsonl").write_text(json.dumps(row, ensure_ascii=False))
    tasks = [
        t
        for t in load_tasks([folder], options={"seahelm_data": {"aisingapore/NLU-Question-Answering": str(copy)}})
        if t.name.endswith("/th")
    ]
    assert tasks, "the mapped Thai QA task was not found"
    for name in [m for m in sys.modules if m == "pythainlp" or m.startswith("pythainlp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pythainlp", None)
    with pytest.raises(ProctorError, match=r"Thai QA F1 \(th\) needs pythainlp"):
        prepare_task(tasks[0], {})
