# A use case file in AISteer360's format (aisteer360/evaluation/use_cases/instruction_following/
# use_case.py at 1d7c843): rows have no `id`; metrics get the generation records as `responses`.
import logging
from typing import Any

from aisteer360.evaluation.use_cases.base import UseCase
from aisteer360.evaluation.utils.generation_utils import (
    batch_retry_generate,
    log_truncation_count,
    output_record_fields,
)

logger = logging.getLogger(__name__)

_EVALUATION_REQ_KEYS = ["prompt", "instructions", "instruction_id_list", "kwargs"]


class InstructionFollowing(UseCase):

    def validate_evaluation_data(self, evaluation_data: dict[str, Any]) -> None:
        missing_keys = [key for key in _EVALUATION_REQ_KEYS if key not in evaluation_data]
        if missing_keys:
            raise ValueError(f"Missing required keys: {missing_keys}")

    def generate(self, model_or_pipeline, tokenizer, gen_kwargs=None, runtime_overrides=None, **kwargs) -> list[dict[str, Any]]:
        if not self.evaluation_data:
            logger.warning("No evaluation data provided")
            return []
        gen_kwargs = dict(gen_kwargs or {})
        batch_size: int = int(kwargs["batch_size"])
        prompt_data = [{"prompt": [{"role": "user", "content": instance["prompt"]}]} for instance in self.evaluation_data]
        responses, _, outputs = batch_retry_generate(
            prompt_data=prompt_data,
            model_or_pipeline=model_or_pipeline,
            tokenizer=tokenizer,
            gen_kwargs=gen_kwargs,
            runtime_overrides=runtime_overrides,
            evaluation_data=self.evaluation_data,
            return_outputs=True,
            batch_size=batch_size,
        )
        log_truncation_count(outputs)
        return [
            {
                "response": response,
                "prompt": eval_data["prompt"],
                "instructions": eval_data["instructions"],
                "instruction_id_list": eval_data["instruction_id_list"],
                "kwargs": eval_data["kwargs"],
                **output_record_fields(output, tokenizer),
            }
            for eval_data, response, output in zip(self.evaluation_data, responses, outputs)
        ]

    def evaluate(self, generations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {metric.name: metric(responses=generations) for metric in self.evaluation_metrics}
