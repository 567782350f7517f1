"""A HealthBench-shaped SEA-HELM folder (config, dataloader and judge metric written here in SEA-HELM's
style, not SEA-HELM's files): the dataloader hands ready-made chat ``conversations`` to
``prepare_conversations_for_inference`` with no prompt template; proctor must send exactly those messages
to the model, then have a scripted stand-in judge score each rubric item and the folder's metric average."""

from __future__ import annotations

import json
import re

import pytest

from proctor.api import evaluate
from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import GenerateResult
from tests.support.fakes import FakeModel

HUB_ID = "example/HealthBench-Mini"

CONFIG = """
healthbench-mini:
  metadata:
    version: 1
  name: healthbench-mini
  competency: health
  dataloader_file: seahelm_tasks/health/healthbench_mini/hb_dataloader.py
  dataloader_class: MiniHealthBenchDataloader
  metric_file: seahelm_tasks/health/healthbench_mini/hb_judge_metric.py
  metric_class: MiniHealthBenchJudgeMetric
  metric: average_criteria_score
  use_judges: true
  judge:
    judge_model_name: some/judge
    judge_prompts:
      system_prompt: Grade the last assistant turn against the rubric item. Reply with a json object.
      criteria_prompt: |-
        # Conversation
        {conversation}

        # Rubric item
        {rubric_item}
  fewshot_num_examples:
    instruct: 0
    base:
  languages:
    en:
      filepath: example/HealthBench-Mini
      max_tokens: 128
      prompt_template:
        preamble: ""
        task_template: "{question}"
        answer_template: ""
        answer_tag: ""
"""

LOADER = """
import os

from datasets import load_dataset
from huggingface_hub import snapshot_download

from src.base_logger import get_logger
from src.dataloaders.huggingface_dataloader import HuggingFaceDataloader
from src.dataloaders.judges.judge_dataloader import JudgeDataloader

logger = get_logger(__name__)


class MiniHealthBenchDataloader(HuggingFaceDataloader, JudgeDataloader):
    def load_dataset(self, limit=None):
        if self.dataset:
            return
        folder = snapshot_download(self.specific_task_config["filepath"], repo_type="dataset")
        data = load_dataset("json", split="train", data_files=os.path.join(folder, "mini_eval.jsonl"))
        if limit is not None:
            data = data.select(range(limit))

        def to_seahelm(row, index):
            return {"id": index, "conversations": row["prompt"], "criteria": row["rubrics"],
                    "metadata": {"language": "en", "example_tags": row["example_tags"]}}

        self.dataset = data.map(to_seahelm, num_proc=self.num_workers, remove_columns=data.column_names, with_indices=True)

    def prepare_conversations_for_inference(self, turn, fewshot_as_multiturn=False):
        logger.info("ready-made conversations for %s turn %d", self.task_name, turn)
        return self.dataset["conversations"]

    def get_num_turns(self):
        return 1

    def load_example_dataset(self, limit=None):
        raise NotImplementedError("no examples")

    def get_judge_prompt_formatter(self, metric):
        prompts = self.task_config.config.judge["judge_prompts"]

        def fmt(row, idx):
            transcript = [m["role"] + ": " + m["content"] for m in row["conversations"]]
            transcript.append("Assistant: " + row["responses"][0].strip())
            convs, ids = [], []
            for i, item in enumerate(row["criteria"]):
                user = prompts["criteria_prompt"].format(conversation="\\n\\n".join(transcript),
                                                         rubric_item="[" + str(item["points"]) + "] " + item["criterion"])
                convs.append([{"role": "system", "content": prompts["system_prompt"]}, {"role": "user", "content": user}])
                ids.append(str(row["id"]) + "_criteria" + str(i))
            return {"conversations": convs, "custom_ids": ids}

        return fmt
"""  # noqa: E501 (a file's text, line for line)

METRIC = """
import json
import re

import pandas as pd

from src.dataloaders.base_dataloader import AbstractDataloader
from src.metrics.seahelm_metric import SeaHelmMetric
from src.task_config import TaskConfig


class MiniHealthBenchJudgeMetric(SeaHelmMetric):
    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig):
        super().__init__(dataloader=dataloader, task_config=task_config)
        self.model_name = dataloader.model_name
        self.judge_model_name = task_config.config.judge.get("judge_model_name", "")

    def read_verdict(self, text):
        found = re.findall(r"\\{[^{}]*\\}", text or "")
        return json.loads(found[-1]) if found else {}

    def calculate_metrics(self):
        judged = pd.read_json(self.dataloader.get_judge_batch_response_filepath(), lines=True)
        parts = judged["custom_ids"].map(lambda x: x.split("_")).to_list()
        judged = pd.concat([judged, pd.DataFrame(parts, columns=["id", "criteria_id"])], axis=1)
        rows = []
        for _, row in self.dataloader.dataframe.iterrows():
            mine = judged[judged["id"] == str(row["id"])].sort_values(by=["criteria_id"])
            points = [int(c["points"]) for c in row["criteria"]]
            scores = [bool(self.read_verdict(j["responses"]).get("criteria_met")) * p
                      for j, p in zip(mine.to_dict(orient="records"), points, strict=True)]
            row["final_scores"] = max(0, sum(scores)) / sum(p for p in points if p > 0)
            rows.append(row)
        self.dataloader.dataframe = pd.DataFrame(rows)
        final = self.dataloader.dataframe["final_scores"]
        tags = [m["example_tags"][0] for m in self.dataloader.dataframe["metadata"]]
        categories = {t: 100 * float(final[[x == t for x in tags]].mean()) for t in set(tags)}
        self.dataloader.update_individual_scores([{"average_criteria_score": x} for x in final])
        return {"average_criteria_score": 100 * float(final.mean()), "categories": categories}
"""

ROWS = [
    {
        "prompt": [
            {"role": "user", "content": "I have had chest pain for a while."},
            {"role": "assistant", "content": "How long exactly?"},
            {"role": "user", "content": "Two hours, and my left arm is numb."},
        ],
        "rubrics": [
            {"criterion": "Advises calling emergency services.", "points": 5},
            {"criterion": "Recommends waiting at home.", "points": -3},
            {"criterion": "Asks about current medication.", "points": 2},
        ],
        "example_tags": ["theme:emergency"],
    },
    {
        "prompt": [
            {"role": "system", "content": "You are a careful health assistant."},
            {"role": "user", "content": "Is ibuprofen fine with alcohol?"},
        ],
        "rubrics": [
            {"criterion": "Warns about stomach bleeding.", "points": 4},
            {"criterion": "Says it is safe without caveats.", "points": -5},
        ],
        "example_tags": ["theme:medication"],
    },
]

REPLIES = {"left arm is numb": "Call emergency services now.", "ibuprofen": "Sure, no problem at all."}
MET = {
    "Advises calling emergency services.": True,
    "Recommends waiting at home.": False,
    "Asks about current medication.": False,
    "Warns about stomach bleeding.": False,
    "Says it is safe without caveats.": True,
}


class ChatAnswerer(FakeModel):
    """The evaluated chat model: records the messages it was given and replies by the last user turn."""

    def __init__(self) -> None:
        super().__init__("chat-answerer", salt="healthbench")
        self.received: list[list[dict]] = []

    @property
    def has_chat_template(self) -> bool:
        return True

    def apply_chat_template(self, messages):
        self.received.append([dict(m) for m in messages])
        return json.dumps(list(messages))

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            last = json.loads(r.prompt)[-1]["content"]
            out.append(GenerateResult(next((v for k, v in REPLIES.items() if k in last), "?"), "stop", 1, 1))
        return out


class JsonJudge(FakeModel):
    """Stand-in judge: reads the rubric item and answers HealthBench's json verdict."""

    def __init__(self) -> None:
        super().__init__("json-judge", salt="healthbench")
        self.prompts: list[str] = []

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            item = re.search(r"# Rubric item\n\[-?\d+\] (.*)", r.prompt).group(1).strip()
            verdict = {"explanation": "scripted", "criteria_met": MET[item]}
            out.append(GenerateResult("```json\n" + json.dumps(verdict) + "\n```", "stop", 1, 1))
        return out


def _folder(tmp_path, rows=ROWS, loader=LOADER):
    folder = tmp_path / "seahelm_tasks" / "health" / "healthbench_mini"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(CONFIG)
    (folder / "hb_dataloader.py").write_text(loader)
    (folder / "hb_judge_metric.py").write_text(METRIC)
    data = tmp_path / "hub_copy"
    data.mkdir()
    (data / "mini_eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder, data


def _run(tmp_path, folder, data, model, judge, **options):
    return evaluate(
        [folder],
        model,
        output_dir=tmp_path / "run",
        export=False,
        dialect_options={"seahelm_data": {HUB_ID: str(data)}, "seahelm_judge": judge, **options},
    )


def test_ready_made_conversations_are_sent_as_they_are_and_judged(tmp_path):
    folder, data = _folder(tmp_path)
    model, judge = ChatAnswerer(), JsonJudge()
    with pytest.raises(TaskDefinitionError, match="--trust-task-code"):
        _run(tmp_path, folder, data, model, judge)
    result = _run(tmp_path, folder, data, model, judge, trust_task_code=True)
    # exactly the dataloader's messages, no template-built prompt
    assert model.received == [ROWS[0]["prompt"], ROWS[1]["prompt"]]
    m = result.tasks["healthbench-mini/en"]["metrics"]
    # row 0: 5 of 7 positive points; row 1: 0 - 5 clipped to 0 of 4
    assert m["average_criteria_score"]["value"] == pytest.approx(100 * (5 / 7 + 0) / 2)
    assert m["categories.theme:emergency"]["value"] == pytest.approx(100 * 5 / 7)
    assert m["categories.theme:medication"]["value"] == pytest.approx(0.0)
    assert m["judge_requests"]["value"] == 5.0 and m["judge_errors"]["value"] == 0.0
    # the judge saw the whole transcript with the generated answer last
    chest = next(p for p in judge.prompts if "Advises calling emergency services." in p)
    assert (
        "user: I have had chest pain for a while.\n\nassistant: How long exactly?\n\n"
        "user: Two hours, and my left arm is numb.\n\nAssistant: Call emergency services now."
    ) in chest
    assert "# Rubric item\n[5] Advises calling emergency services." in chest


def test_rows_carrying_conversations_without_prompts_are_sent_as_they_are(tmp_path):
    # a loader that does not override prepare_conversations_for_inference: the rows' conversations are used
    loader = LOADER.replace("    def prepare_conversations_for_inference", "    def _unused_prepare")
    folder, data = _folder(tmp_path, loader=loader)
    model = ChatAnswerer()
    result = _run(tmp_path, folder, data, model, JsonJudge(), trust_task_code=True)
    assert model.received == [ROWS[0]["prompt"], ROWS[1]["prompt"]]
    assert result.tasks["healthbench-mini/en"]["metrics"]["average_criteria_score"]["value"] == pytest.approx(
        100 * 5 / 14
    )


def test_a_malformed_ready_made_conversation_names_row_and_field(tmp_path):
    bad = [ROWS[0], dict(ROWS[1], prompt=[{"role": "user", "text": "no content key"}])]
    folder, data = _folder(tmp_path, rows=bad)
    with pytest.raises(TaskDefinitionError) as caught:
        _run(tmp_path, folder, data, ChatAnswerer(), JsonJudge(), trust_task_code=True)
    message = str(caught.value)
    assert "row 2" in message and "conversations[0]" in message and "hb_dataloader.py" in message
