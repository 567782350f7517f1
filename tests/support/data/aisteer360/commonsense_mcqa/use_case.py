# Written for proctor's tests in AISteer360's use-case file format (not copied from AISteer360).
# What the format asks of such a file, and what this one exercises: it defines only the use case
# class (data and metrics come from the command line or a config file), imports the names from
# `aisteer360.evaluation`, shuffles with the global `random` (the runner seeds it), reads
# kwargs["batch_size"], passes gen_kwargs / runtime_overrides through, calls the metrics with
# AISteer360's keyword names and writes profiles.json from export(profiles, save_dir).
import json
import logging
import math
import random
import re
import string
from pathlib import Path
from typing import Any

from aisteer360.evaluation.use_cases.base import UseCase
from aisteer360.evaluation.utils.generation_utils import (
    batch_retry_generate,
    log_truncation_count,
    output_record_fields,
)

log = logging.getLogger(__name__)

OPTION_LABELS = string.ascii_uppercase
NEEDED_FIELDS = ("id", "question", "answer", "choices")
SPEAKER_TAG = re.compile(r"\s*(?:assistant|system|user)\b[\s:]*", re.IGNORECASE)
LONE_LETTER = re.compile(r"\b[a-z]\b", re.IGNORECASE)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def read_option_label(reply: str) -> str | None:
    """The first letter standing alone in the reply (a leading speaker tag is skipped), upper-cased."""
    tag = SPEAKER_TAG.match(reply)
    body = reply[tag.end():] if tag else reply
    found = LONE_LETTER.findall(body)
    return found[0].upper() if found else None


def question_text(question: str, options: list[str]) -> str:
    listed = "\n".join(f"({OPTION_LABELS[pos]}) {text}" for pos, text in enumerate(options))
    return (
        "Pick the best option for the question below.\n\n"
        f"{question}\n{listed}\n\n"
        "Reply with the option's letter and nothing else.\n"
        "Letter:"
    )


class CommonsenseMCQA(UseCase):
    num_shuffling_runs: int

    def validate_evaluation_data(self, evaluation_data: dict[str, Any]):
        absent = [field for field in NEEDED_FIELDS if field not in evaluation_data]
        if absent:
            raise ValueError(f"row lacks {absent}")
        blank = [field for field in NEEDED_FIELDS if _blank(evaluation_data[field])]
        if blank:
            raise ValueError(f"row has null or NaN in {blank}")
        if evaluation_data["answer"] not in evaluation_data["choices"]:
            raise ValueError(f"answer {evaluation_data['answer']!r} is not one of the choices")

    def _requests(self) -> list[dict[str, Any]]:
        """num_shuffling_runs prompts per row, each with its own order of the options."""
        requests = []
        for row in self.evaluation_data:
            right = row["choices"].index(row["answer"])
            for _ in range(self.num_shuffling_runs):
                order = list(enumerate(row["choices"]))
                random.shuffle(order)
                position = [original for original, _ in order].index(right)
                requests.append({
                    "id": row["id"],
                    "prompt": question_text(row["question"], [text for _, text in order]),
                    "key": OPTION_LABELS[position],
                })
        return requests

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs) -> list[dict[str, Any]]:
        requests = self._requests()
        if not requests:
            log.warning("CommonsenseMCQA: nothing to ask (no evaluation data)")
            return []
        labels, _raw, outputs = batch_retry_generate(
            prompt_data=requests,
            model_or_pipeline=model_or_pipeline,
            tokenizer=tokenizer,
            gen_kwargs=dict(gen_kwargs or {}),
            runtime_overrides=runtime_overrides,
            evaluation_data=self.evaluation_data,
            parse_fn=read_option_label,
            return_outputs=True,
            batch_size=int(kwargs["batch_size"]),
        )
        log_truncation_count(outputs)
        records = []
        for request, label, output in zip(requests, labels, outputs):
            record = dict(response=label, prompt=request["prompt"], question_id=request["id"], reference_answer=request["key"])
            record.update(output_record_fields(output, tokenizer))
            records.append(record)
        return records

    def evaluate(self, generations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        columns = {"responses": [], "reference_answers": [], "question_ids": []}
        for record in generations:
            columns["responses"].append(record["response"])
            columns["reference_answers"].append(record["reference_answer"])
            columns["question_ids"].append(record["question_id"])
        return {metric.name: metric(**columns) for metric in self.evaluation_metrics}

    def export(self, profiles: dict[str, Any], save_dir) -> None:
        target = Path(save_dir) / "profiles.json"
        target.write_text(json.dumps(profiles, indent=2, ensure_ascii=False), encoding="utf-8")
