"""Stand-ins for the files SEA-HELM ships in ``seahelm_tasks/multi_turn/mt_bench_judge/``
(``MTBenchJudgeDataloader``, ``MTBenchJudgeMetric``), written for proctor from SEA-HELM's documented
behaviour: each criterion of a two-turn MT-Bench row is judged on its own turn's answer
(``criteria_prompt.turn_<turn+1>``, with a transcript of the conversation so far), the judge's
``<classification>`` maps through ``judge.classifications`` (unknown or missing: 0), each turn's score is
the mean over its criteria, a row's score the mean over turns 1 and 2, and ``average_criteria_score`` the
mean over rows ×100 (``categories``: per ``metadata.category`` mean, 0-1)."""

from __future__ import annotations

import json
import logging
import re

import numpy as np

from proctor.dialects.seahelm.dataloaders import HuggingFaceDataloader
from proctor.dialects.seahelm.judge_dataloaders import JudgeDataloader
from proctor.dialects.seahelm.metrics import SeaHelmMetric
from proctor.dialects.seahelm.rows import as_rows

log = logging.getLogger(__name__)

_CLASSIFICATION = re.compile(r"<classification>\s*(\w+)\s*</classification>")
_REFLECTION = re.compile(r"<reflection>(.*?)</reflection>", re.S)


def _row_problem(row: object) -> str | None:
    if not isinstance(row, dict):
        return "a row is not an object"
    if "id" not in row:
        return "missing field 'id'"
    prompts = row.get("prompts")
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, dict) for p in prompts):
        return "field 'prompts' must be a non-empty list of objects (e.g. {\"text\": ...})"
    criteria = row.get("criteria")
    if not isinstance(criteria, list) or not criteria:
        return "field 'criteria' must be a non-empty list"
    for n, c in enumerate(criteria):
        if not isinstance(c, dict) or not isinstance(c.get("criterion"), str):
            return f"criteria[{n}] needs a string 'criterion'"
        if not isinstance(c.get("turn"), int) or not 0 <= c["turn"] < min(len(prompts), 2):
            return f"criteria[{n}].turn must be 0 or 1 (0-based) and name a turn the row has"
    return None


class MTBenchJudgeDataloader(HuggingFaceDataloader, JudgeDataloader):
    def load_dataset(self, limit: int | None = None):
        from proctor.core.errors import TaskDefinitionError

        super().load_dataset(limit)
        for n, row in enumerate(as_rows(self.dataset), start=1):
            problem = _row_problem(row)
            if problem:
                raise TaskDefinitionError(
                    f"{self.task_name}/{self.lang}: {problem}", file=self.specific_task_config["filepath"], row=n
                )
        return self.dataset

    def get_judge_prompt_formatter(self, metric: SeaHelmMetric):
        prompts = self.task_config.config["judge"]["judge_prompts"]
        task_template = self.task_config.config["languages"][self.lang]["prompt_template"]["task_template"]

        def formatter(row: dict, idx: int) -> dict:
            asked = [task_template.format(**p) for p in row["prompts"]]
            answers = list(row["responses"])
            conversations, custom_ids = [], []
            for i, criterion in enumerate(row["criteria"]):
                turn = int(criterion["turn"])
                if turn >= len(asked) or turn >= len(answers) or answers[turn] is None:
                    log.error(
                        "%s/%s row %s: no answer for turn %d of criterion %d; not judged",
                        self.task_name,
                        self.lang,
                        row.get("id"),
                        turn,
                        i,
                    )
                    continue
                transcript = "[User]\n" + asked[0]
                for t in range(1, turn + 1):
                    transcript += f"\n\n[Assistant (fixed)]\n{answers[t - 1]}\n\n[User]\n{asked[t]}"
                user = prompts["criteria_prompt"][f"turn_{turn + 1}"].format(
                    transcript=transcript,
                    response=answers[turn],
                    keyPointText=criterion["criterion"].format(**row["prompts"][0]),
                )
                conversations.append(
                    [{"role": "system", "content": prompts["system_prompt"]}, {"role": "user", "content": user}]
                )
                custom_ids.append(f"{row['id']}_turn{turn}_criteria{i}")
            return {"conversations": conversations, "custom_ids": custom_ids}

        return formatter


def parse_custom_id(custom_id: str) -> tuple[str, int, int]:
    """``<id>_turn<t>_criteria<i>`` -> (id, t, i); the row id may itself contain underscores."""
    row_id, turn, criterion = str(custom_id).rsplit("_", 2)
    return row_id, int(turn.removeprefix("turn")), int(criterion.removeprefix("criteria"))


class MTBenchJudgeMetric(SeaHelmMetric):
    def extract_classification(self, judge_response: object) -> str | None:
        found = _CLASSIFICATION.findall(judge_response) if isinstance(judge_response, str) else []
        return found[-1].strip() if found else None

    def extract_reflection(self, judge_response: object) -> str | None:
        found = _REFLECTION.findall(judge_response) if isinstance(judge_response, str) else []
        return found[-1].strip() if found else None

    def get_score(self, classification: str | None) -> float:
        mapping = (self.config.get("judge") or {}).get("classifications") or {}
        return float(mapping.get(classification, 0.0)) if classification is not None else 0.0

    def calculate_metrics(self):
        path = self.dataloader.get_judge_batch_response_filepath()
        judged: dict[str, dict[int, list[tuple[int, object]]]] = {}  # row id -> turn -> (criterion, judge reply)
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    row_id, turn, criterion = parse_custom_id(record["custom_ids"])
                    judged.setdefault(row_id, {}).setdefault(turn, []).append((criterion, record.get("responses")))
        df = self.inference_df
        all_scores, reflections, turn_scores, finals, details = [], [], [], [], []
        for _, row in df.iterrows():
            by_turn = judged.get(str(row["id"]), {})
            row_scores, row_reflections, row_turns, row_details = [], [], [], []
            for turn in range(2):
                items = sorted(by_turn.get(turn, []), key=lambda x: x[0])
                classes = [self.extract_classification(text) for _, text in items]
                scores = [self.get_score(c) for c in classes]
                row_scores.append(scores)
                row_reflections.append([self.extract_reflection(text) for _, text in items])
                row_turns.append(sum(scores) / len(scores) if scores else 0.0)
                row_details += [
                    {
                        "turn": turn,
                        "criterion": c,
                        "classification": k or "ERROR",
                        "reflection": self.extract_reflection(t),
                    }
                    for (c, t), k in zip(items, classes)
                ]
            all_scores.append(row_scores)
            reflections.append(row_reflections)
            turn_scores.append(row_turns)
            finals.append(sum(row_turns) / len(row_turns))
            details.append(row_details)
        df["scores"], df["reflection"], df["turn_scores"], df["final_scores"] = (
            all_scores,
            reflections,
            turn_scores,
            finals,
        )
        df["judgements"] = details
        self.dataloader.update_individual_scores([{"average_criteria_score": x} for x in finals])
        categories: dict[str, list[float]] = {}
        for meta, score in zip(df["metadata"] if "metadata" in df else [{}] * len(df), finals):
            categories.setdefault(str((meta or {}).get("category", "")), []).append(score)
        return {
            "categories": {k: float(np.mean(v)) for k, v in categories.items()},
            "average_criteria_score": 100 * float(np.mean(finals)) if finals else 0.0,
        }


__all__ = ["MTBenchJudgeDataloader", "MTBenchJudgeMetric", "as_rows"]
