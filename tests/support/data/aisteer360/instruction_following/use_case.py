# Written for proctor's tests in AISteer360's use-case file format (not copied from AISteer360).
# In that format the instruction-following rows carry no `id`, the prompt goes to the model as one
# user chat message, and every metric gets the whole generation records as `responses`.
import logging
from typing import Any

from aisteer360.evaluation.use_cases.base import UseCase
from aisteer360.evaluation.utils.generation_utils import (
    batch_retry_generate,
    log_truncation_count,
    output_record_fields,
)

log = logging.getLogger(__name__)

ROW_FIELDS = ("prompt", "instructions", "instruction_id_list", "kwargs")


class InstructionFollowing(UseCase):

    def validate_evaluation_data(self, evaluation_data: dict[str, Any]) -> None:
        lacking = [field for field in ROW_FIELDS if field not in evaluation_data]
        if lacking:
            raise ValueError(f"row lacks {lacking}")
        if len(evaluation_data["instruction_id_list"]) != len(evaluation_data["kwargs"]):
            raise ValueError("instruction_id_list and kwargs differ in length")

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs) -> list[dict[str, Any]]:
        rows = self.evaluation_data
        if not rows:
            log.warning("InstructionFollowing: no rows to run")
            return []
        chats = [{"prompt": [{"role": "user", "content": row["prompt"]}]} for row in rows]
        texts, _raw, outputs = batch_retry_generate(
            prompt_data=chats,
            model_or_pipeline=model_or_pipeline,
            tokenizer=tokenizer,
            gen_kwargs=dict(gen_kwargs or {}),
            runtime_overrides=runtime_overrides,
            evaluation_data=rows,
            return_outputs=True,
            batch_size=int(kwargs["batch_size"]),
        )
        log_truncation_count(outputs)
        records = []
        for row, text, output in zip(rows, texts, outputs):
            record = {field: row[field] for field in ROW_FIELDS}
            record["response"] = text
            record.update(output_record_fields(output, tokenizer))
            records.append(record)
        return records

    def evaluate(self, generations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {metric.name: metric(responses=generations) for metric in self.evaluation_metrics}
