"""SEA-HELM v1.2 judge folders (JudgeDataloader mixin): the shared mt_bench_judge folder runs unmodified
over a small hand-made local copy of its hub data (tests/support/data/seahelm/mt_bench_judge), with proctor's
built-in stand-ins for the dataloader/metric files SEA-HELM ships in that folder, and a scripted model as
a stand-in judge whose XML verdicts are parseable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from proctor.api import evaluate, load_tasks
from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import GenerateResult
from tests.conftest import TEST_DATA, shared_path
from tests.support.fakes import FakeModel

DATA = TEST_DATA / "seahelm" / "mt_bench_judge"
HUB_ID = "aisingapore/MultiTurn-Chat-MT-Bench-Judge"


def _folder() -> Path:
    return shared_path("examples", "seahelm", "seahelm_tasks", "multi_turn", "mt_bench_judge")


class Answerer(FakeModel):
    """The evaluated model: replies by a key found near the end of the prompt (the last user turn)."""

    def __init__(self, replies: dict[str, str]) -> None:
        super().__init__("answerer", salt=json.dumps(replies, sort_keys=True))
        self.replies = replies

    def generate(self, requests, progress=None):
        return [
            GenerateResult(next((v for k, v in self.replies.items() if k in r.prompt[-200:]), "?"), "stop", 1, 1)
            for r in requests
        ]


class StandInJudge(FakeModel):
    """Stand-in judge (no real LLM): the classification is chosen by the criterion text inside <CRITERION>."""

    def __init__(self, verdicts: dict[str, str]) -> None:
        super().__init__("stand-in-judge", salt=json.dumps(verdicts, sort_keys=True))
        self.verdicts = verdicts
        self.prompts: list[str] = []

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            criterion = r.prompt.rsplit("<CRITERION>", 1)[-1].split("</CRITERION>", 1)[0].strip()
            label = self.verdicts.get(criterion)
            text = (
                f"<reflection>judged: {criterion}</reflection><classification>{label}</classification>"
                if label
                else "I cannot decide."
            )
            out.append(GenerateResult(text, "stop", 1, 1))
        return out


ANSWERS = {
    "rewrite it about mountains": "Stone peaks rise\ncold air\nthe summit waits",
    "haiku about the sea": "Waves fold\nsalt wind\nthe sea sleeps",
    "divided by 3": "48",
    "12 times 12": "144",
}
VERDICTS = {
    "The poem has three lines.": "CLASS_EXACTLY_MET",
    "The poem mentions the sea.": "CLASS_MAJORLY_MET",
    "The rewritten poem is about mountains.": "CLASS_SLIGHTLY_MET",
    "States that the answer is 144.": "CLASS_EXACTLY_MET",
}
# "States that the answer is 48." gets no parseable verdict: retried, then an error scored 0


def _run(tmp_path, folder, judge, **options):
    return evaluate(
        [folder],
        Answerer(ANSWERS),
        select=["mt-bench-judge/en"],
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={"seahelm_data": {HUB_ID: str(DATA)}, "seahelm_judge": judge, **options},
    )


def test_shared_mt_bench_judge_folder_runs_with_builtin_stand_ins(tmp_path):
    judge = StandInJudge(VERDICTS)
    result = _run(tmp_path, _folder(), judge)
    m = result.tasks["mt-bench-judge/en"]["metrics"]
    # row 81: turn 1 (1 + 0.75)/2, turn 2 0.25 -> 0.5625; row q_7: turn 1 1.0, turn 2 error -> 0 -> 0.5
    assert m["average_criteria_score"]["value"] == pytest.approx(100 * (0.5625 + 0.5) / 2)
    assert m["categories.writing"]["value"] == pytest.approx(0.5625)
    assert m["categories.math"]["value"] == pytest.approx(0.5)
    assert m["judge_errors"]["value"] == 1.0
    assert result.results["rollup"]["children"]["en"]["children"]["multi-turn"]["value"] == pytest.approx(53.125)
    # the judge saw SEA-HELM's transcript: turn 2 has the fixed turn-1 answer and the generated turn-2 answer
    turn2 = next(p for p in judge.prompts if "The rewritten poem is about mountains." in p)
    assert (
        "[User]\nWrite a haiku about the sea.\n\n[Assistant (fixed)]\nWaves fold\nsalt wind\nthe sea sleeps\n\n"
        "[User]\nNow rewrite it about mountains." in turn2
    )
    assert "[Assistant (generated)]\nStone peaks rise" in turn2
    assert "multi-turn conversation transcript" in turn2
    turn1 = next(p for p in judge.prompts if "The poem has three lines." in p)
    assert (
        "single-turn conversation transcript" in turn1
        and "<TRANSCRIPT>\n[User]\nWrite a haiku about the sea.\n</TRANSCRIPT>" in turn1
    )
    assert "expert evaluator" in turn1  # the config's system prompt


def test_unmapped_hub_data_is_a_clear_offline_error():
    with pytest.raises(Exception, match=f"dataset not available offline: {HUB_ID}"):
        load_tasks([_folder()])


def test_bad_row_names_file_and_field(tmp_path):
    bad = tmp_path / "bad" / "en"
    bad.mkdir(parents=True)
    (bad / "eval.jsonl").write_text(
        json.dumps({"id": "1", "prompts": [{"text": "hi"}], "criteria": [{"criterion": "x", "turn": 3}]}) + "\n"
    )
    with pytest.raises(TaskDefinitionError, match=r"criteria\[0\]\.turn"):
        evaluate(
            [_folder()],
            Answerer(ANSWERS),
            select=["mt-bench-judge/en"],
            output_dir=tmp_path / "run",
            export=False,
            dialect_options={"seahelm_data": {HUB_ID: str(tmp_path / "bad")}, "seahelm_judge": StandInJudge(VERDICTS)},
        )


# task-folder code written against SEA-HELM's src/ (written here for the test, not SEA-HELM's files)
USER_LOADER = """
from src.dataloaders.huggingface_dataloader import HuggingFaceDataloader
from src.dataloaders.judges.judge_dataloader import JudgeDataloader


class MTBenchJudgeDataloader(HuggingFaceDataloader, JudgeDataloader):
    def get_judge_prompt_formatter(self, metric):
        prompts = self.task_config.config.judge["judge_prompts"]

        def fmt(row, idx):
            convs, ids = [], []
            for i, c in enumerate(row["criteria"]):
                text = "<CRITERION>" + c["criterion"] + "</CRITERION> answer: " + row["responses"][c["turn"]]
                convs.append([{"role": "system", "content": prompts["system_prompt"]}, {"role": "user", "content": text}])
                ids.append(str(row["id"]) + "|" + str(i))
            return {"conversations": convs, "custom_ids": ids}
        return fmt
"""  # noqa: E501 (a file's text, line for line)

USER_METRIC = """
import pandas as pd
from src.metrics.seahelm_metric import SeaHelmMetric


class MTBenchJudgeMetric(SeaHelmMetric):
    def calculate_metrics(self):
        judged = pd.read_json(self.dataloader.get_judge_batch_response_filepath(), lines=True)
        hits = judged["responses"].str.contains("CLASS_EXACTLY_MET")
        self.dataloader.update_individual_scores([0.0] * len(self.dataloader.dataframe))
        return {"average_criteria_score": 100 * float(hits.mean()), "n_judged": int(len(judged))}
"""


def test_task_folder_code_on_the_judge_mixin_runs_with_trust(tmp_path):
    root = tmp_path / "seahelm_tasks" / "multi_turn" / "mt_bench_judge"
    root.mkdir(parents=True)
    shutil.copy(_folder() / "config.yaml", root / "config.yaml")
    (root / "mtbench_judge_dataloader.py").write_text(USER_LOADER)
    (root / "mtbench_judge_metric.py").write_text(USER_METRIC)
    with pytest.raises(TaskDefinitionError, match="--trust-task-code"):
        _run(tmp_path, root, StandInJudge(VERDICTS))
    result = _run(tmp_path, root, StandInJudge(VERDICTS), trust_task_code=True)
    m = result.tasks["mt-bench-judge/en"]["metrics"]
    assert m["n_judged"]["value"] == 5.0
    assert m["average_criteria_score"]["value"] == pytest.approx(100 * 2 / 5)  # two EXACTLY_MET of five


# a criteria-judge folder in the shape of SEA-HELM's cultural/kalahi_judge: every class is SEA-HELM's own
# (src/...), so it runs without trust; config written here for the test
CRITERIA_CONFIG = """
situational-judge:
  name: situational-judge
  competency: cultural
  dataloader_file: src/dataloaders/judges/criteria_dataloader.py
  dataloader_class: HuggingFaceCriteriaDataloader
  metric_file: src/metrics/llm_judges/criteria_judge_metric.py
  metric_class: CriteriaJudgeMetric
  metric: average_criteria_score
  use_judges: true
  judge_file: src/judges/criteria_judge.py
  judge_class: CriteriaJudge
  judge:
    classifications: {CLASS_UNMET: 0, CLASS_MODERATELY_MET: 0.5, CLASS_EXACTLY_MET: 1.0}
    judge_prompts:
      system_prompt: You judge.
      criteria_prompt: "<TRANSCRIPT>{prompt}</TRANSCRIPT><TEXT>{response}</TEXT>{reference_text_block}<CRITERION>{keyPointText}</CRITERION>"
      reference_prompt: "<REFERENCE_TEXT>{reference}</REFERENCE_TEXT>"
  fewshot_num_examples: {instruct: 0, base: 0}
  languages:
    tl:
      filepath: example/Situational-Judge
      max_tokens: 64
      prompt_template: {preamble: "", task_template: "Situation: {text}", answer_template: "", answer_tag: ""}
"""  # noqa: E501 (a file's text, line for line)


def _criteria_folder(tmp_path, rows: list[dict]) -> Path:
    """The criteria-judge task folder above, with ``rows`` as its Tagalog data; returns the folder."""
    folder = tmp_path / "seahelm_tasks" / "cultural" / "situational_judge"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(CRITERIA_CONFIG)
    data = tmp_path / "data" / "tl"
    data.mkdir(parents=True)
    (data / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_criteria_judge_folder_on_seahelm_src_classes(tmp_path):
    rows = [
        {
            "id": "a_1",
            "label": "Magmano po.",
            "prompts": [{"text": "Meeting a grandparent."}],
            "metadata": {"category": "respect"},
            "criteria": [
                {"criterion": "Mentions mano."},
                {"criterion": "Matches the reference.", "include_reference": True},
            ],
        },
        {
            "id": "b",
            "label": "",
            "prompts": [{"text": "A fiesta invitation."}],
            "metadata": {"category": "fiesta"},
            "criteria": [{"criterion": "Accepts politely."}],
        },
    ]
    folder = _criteria_folder(tmp_path, rows)
    judge = StandInJudge(
        {
            "Mentions mano.": "CLASS_EXACTLY_MET",
            "Matches the reference.": "CLASS_MODERATELY_MET",
            "Accepts politely.": "CLASS_UNKNOWN",
        }
    )  # not a configured class: retried, then an error
    result = evaluate(
        [folder],
        Answerer({"grandparent": "Mano po, Lola.", "fiesta": "Salamat!"}),
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={"seahelm_data": {"example/Situational-Judge": str(tmp_path / "data")}, "seahelm_judge": judge},
    )
    m = result.tasks["situational-judge/tl"]["metrics"]
    assert m["average_criteria_score"]["value"] == pytest.approx(100 * (0.75 + 0.0) / 2)
    assert m["categories.respect"]["value"] == pytest.approx(0.75)
    assert m["judge_errors"]["value"] == 1.0
    ref = next(p for p in judge.prompts if "Matches the reference." in p)
    assert (
        "<TRANSCRIPT>Situation: Meeting a grandparent.</TRANSCRIPT><TEXT>Mano po, Lola.</TEXT>\n"
        "<REFERENCE_TEXT>Magmano po.</REFERENCE_TEXT>\n" in ref
    )
    plain = next(p for p in judge.prompts if "Mentions mano." in p)
    assert "REFERENCE_TEXT" not in plain


def test_criteria_row_without_a_needed_field_is_a_clear_error(tmp_path):
    folder = _criteria_folder(
        tmp_path,
        [
            {"id": "a", "label": "", "prompts": [{"text": "One."}], "criteria": [{"criterion": "Fine."}]},
            {"id": "b", "label": "", "prompts": [{"text": "Two."}], "criteria": [{"text": "no 'criterion' key"}]},
        ],
    )
    # a folder run: the task that fails while running is recorded as not run (stage "run"), never a number
    result = evaluate(
        [folder],
        Answerer({"One": "ok", "Two": "ok"}),
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={
            "seahelm_data": {"example/Situational-Judge": str(tmp_path / "data")},
            "seahelm_judge": StandInJudge({"Fine.": "CLASS_EXACTLY_MET"}),
        },
    )
    (skipped,) = result.results["skipped"]
    message = skipped["error"]
    assert skipped["stage"] == "run" and result.results["status"] == "partial" and not result.results["tasks"]
    assert (
        "'b'" in message and "field 'criterion'" in message and "row 2" in message and str(tmp_path / "data") in message
    )


def test_snapshot_download_in_task_folder_code_reads_the_mapped_copy(tmp_path):
    import types

    from proctor.dialects.seahelm import offline_datasets as OD

    hub = pytest.importorskip("huggingface_hub")
    module = types.ModuleType("plugin")
    module.snapshot_download = hub.snapshot_download
    module.hh = hub
    OD.patch_module(module)
    with OD.offline_copies({"org/Health": str(tmp_path)}):  # as while the task's folder code runs
        assert module.snapshot_download("org/Health", repo_type="dataset") == str(tmp_path)
        assert module.hh.snapshot_download(str(tmp_path)) == str(tmp_path)
        assert module.hh.hf_hub_download is hub.hf_hub_download  # the rest of the module is the real one
        with pytest.raises(Exception, match="dataset not available offline: org/Other"):
            module.snapshot_download("org/Other", repo_type="dataset")
    with pytest.raises(Exception, match="dataset not available offline: org/Health"):
        module.snapshot_download("org/Health", repo_type="dataset")  # the mapping holds only inside
