"""AISteer360's import names, pointing at proctor's equivalents, while user code is imported or run.

AISteer360's use-case, metric and benchmark files import ``aisteer360.evaluation...`` and
``aisteer360.algorithms.core...``. Inside ``aisteer360_names()`` those module names resolve to
small stand-in modules that hold proctor's objects (``UseCase``, ``Metric``, ``MCQAAccuracy``,
``batch_retry_generate``, ``Benchmark``, ``SteeringPipeline``, ...), so such files run unmodified.
Nothing is installed when proctor is imported: the names exist only inside the block, and whatever
``sys.modules`` held under them before (a real AISteer360, say) is put back afterwards. An
``aisteer360`` name proctor has no equivalent for fails with an ImportError that says so.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import sys
import types
from typing import Iterator

from proctor.core.user_code import modules_in_force, stand_in_packages

ROOT = "aisteer360"

# module name -> {attribute: "proctor module:attribute"}
_NAMES: dict[str, dict[str, str]] = {
    "aisteer360.evaluation.use_cases.base": {"UseCase": "proctor.dialects.aisteer.base:UseCase"},
    "aisteer360.evaluation.use_cases.commonsense_mcqa.use_case": {
        "CommonsenseMCQA": "proctor.dialects.aisteer.mcqa:CommonsenseMCQA"
    },
    "aisteer360.evaluation.use_cases.instruction_following": {
        "InstructionFollowing": "proctor.dialects.aisteer.ifeval:InstructionFollowing"
    },
    "aisteer360.evaluation.use_cases.instruction_following.use_case": {
        "InstructionFollowing": "proctor.dialects.aisteer.ifeval:InstructionFollowing"
    },
    "aisteer360.evaluation.metrics": {
        "Metric": "proctor.dialects.aisteer.metrics:Metric",
        "LLMJudgeMetric": "proctor.dialects.aisteer.judge:LLMJudgeMetric",
    },
    "aisteer360.evaluation.metrics.base_judge": {
        "LLMJudgeMetric": "proctor.dialects.aisteer.judge:LLMJudgeMetric",
        "build_structured_parser": "proctor.dialects.aisteer.judge:build_structured_parser",
    },
    "aisteer360.evaluation.metrics.base": {"Metric": "proctor.dialects.aisteer.metrics:Metric"},
    "aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_accuracy": {
        "MCQAAccuracy": "proctor.dialects.aisteer.mcqa_metrics:MCQAAccuracy"
    },
    "aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_calibration": {
        "MCQACalibration": "proctor.dialects.aisteer.mcqa_metrics:MCQACalibration"
    },
    "aisteer360.evaluation.metrics.custom.commonsense_mcqa.mcqa_positional_bias": {
        "MCQAPositionalBias": "proctor.dialects.aisteer.mcqa_metrics:MCQAPositionalBias"
    },
    "aisteer360.evaluation.metrics.custom.instruction_following.strict_instruction": {
        "StrictInstruction": "proctor.dialects.aisteer.ifeval:StrictInstruction"
    },
    "aisteer360.evaluation.metrics.custom.instruction_following.helpers.evaluation_main": {
        "test_instruction_following_strict": "proctor.dialects.aisteer.ifeval:test_instruction_following_strict",
    },
    "aisteer360.evaluation.utils.generation_utils": {
        "batch_retry_generate": "proctor.dialects.aisteer.generation:batch_retry_generate",
        "log_truncation_count": "proctor.dialects.aisteer.generation:log_truncation_count",
        "output_record_fields": "proctor.dialects.aisteer.generation:output_record_fields",
    },
    "aisteer360.evaluation.utils.data_utils": {
        "to_jsonable": "proctor.dialects.aisteer.profiles:to_jsonable",
        "_hash_params": "proctor.dialects.aisteer.profiles:hash_params",
        "flatten_profiles": "proctor.dialects.aisteer.profiles:flatten_profiles",
        "extract_metric": "proctor.dialects.aisteer.profiles:extract_metric",
        "extract_param": "proctor.dialects.aisteer.profiles:extract_param",
        "summarize_by_config": "proctor.dialects.aisteer.profiles:summarize_by_config",
        "get_param_values": "proctor.dialects.aisteer.profiles:get_param_values",
    },
    "aisteer360.evaluation.benchmark": {"Benchmark": "proctor.dialects.aisteer.aisteer_benchmark:AISteerBenchmark"},
    "aisteer360.algorithms.core.steering_pipeline": {
        "SteeringPipeline": "proctor.models.steering.pipeline:SteeringPipeline"
    },
    "aisteer360.algorithms.core.specs": {"ControlSpec": "proctor.models.steering.specs:ControlSpec"},
}
_NAMES["aisteer360.evaluation.utils"] = dict(_NAMES["aisteer360.evaluation.utils.data_utils"])

_GENERIC = "proctor.dialects.aisteer.generic_metrics"
_IFEVAL = "aisteer360.evaluation.metrics.custom.instruction_following.helpers"
_NAMES["aisteer360.evaluation.metrics"].update(
    {
        "Factuality": f"{_GENERIC}:Factuality",
        "Perplexity": f"{_GENERIC}:Perplexity",
        "Relevance": f"{_GENERIC}:Relevance",
        "ShortAnswerMatch": f"{_GENERIC}:ShortAnswerMatch",
    }
)
_NAMES.update(
    {
        "aisteer360.evaluation.metrics.generic.factuality": {"Factuality": f"{_GENERIC}:Factuality"},
        "aisteer360.evaluation.metrics.generic.relevance": {"Relevance": f"{_GENERIC}:Relevance"},
        "aisteer360.evaluation.metrics.generic.perplexity": {"Perplexity": f"{_GENERIC}:Perplexity"},
        "aisteer360.evaluation.metrics.generic.reward_score": {"RewardScore": f"{_GENERIC}:RewardScore"},
        "aisteer360.evaluation.metrics.generic.short_answer_match": {
            "ShortAnswerMatch": f"{_GENERIC}:ShortAnswerMatch",
            "_normalize_answer": "proctor.scoring.text:normalize_answer",
            "_token_f1": "proctor.scoring.text:token_f1",
        },
        "aisteer360.evaluation.metrics.custom.truthful_qa": {
            "Truthfulness": "proctor.dialects.aisteer.truthfulqa:Truthfulness",
            "Informativeness": "proctor.dialects.aisteer.truthfulqa:Informativeness",
        },
        "aisteer360.evaluation.metrics.custom.truthful_qa.truthfulness": {
            "Truthfulness": "proctor.dialects.aisteer.truthfulqa:Truthfulness"
        },
        "aisteer360.evaluation.metrics.custom.truthful_qa.informativeness": {
            "Informativeness": "proctor.dialects.aisteer.truthfulqa:Informativeness"
        },
        "aisteer360.evaluation.use_cases.truthful_qa": {"TruthfulQA": "proctor.dialects.aisteer.truthfulqa:TruthfulQA"},
        "aisteer360.evaluation.use_cases.truthful_qa.use_case": {
            "TruthfulQA": "proctor.dialects.aisteer.truthfulqa:TruthfulQA"
        },
        f"{_IFEVAL}.instructions_registry": {
            "INSTRUCTION_DICT": "proctor.dialects.aisteer.ifeval_checks:INSTRUCTION_DICT"
        },
        f"{_IFEVAL}.instructions_util": {
            "count_words": "proctor.dialects.aisteer.ifeval_text:count_words",
            "count_sentences": "proctor.dialects.aisteer.ifeval_text:count_sentences",
        },
        "aisteer360.utils.rendering": {
            name: f"proctor.dialects.aisteer.rendering:{name}"
            for name in ("has_chat_template", "render_messages", "render_for_model", "encode_for_model")
        },
        "aisteer360.algorithms.input_control.few_shot.selectors": {
            "RandomSelector": "proctor.dialects.aisteer.aisteer_controls:RandomSelector",
            "EPRSelector": "proctor.dialects.aisteer.aisteer_controls:EPRSelector",
        },
        "aisteer360.algorithms.input_control._common.selectors.random": {
            "RandomSelector": "proctor.dialects.aisteer.aisteer_controls:RandomSelector"
        },
        "aisteer360.algorithms.input_control._common.formatters.few_shot_block": {
            "FewShotBlockFormatter": "proctor.dialects.aisteer.aisteer_controls:FewShotBlockFormatter",
        },
    }
)
_NAMES[f"{_IFEVAL}.evaluation_main"]["test_instruction_following_loose"] = (
    "proctor.dialects.aisteer.ifeval:test_instruction_following_loose"
)
_NAMES["aisteer360.evaluation.use_cases.commonsense_mcqa"] = {
    "CommonsenseMCQA": "proctor.dialects.aisteer.mcqa:CommonsenseMCQA"
}


def _control_names() -> None:
    """Every AISteer360 control package: ``pkg``, ``pkg.control`` and ``pkg.args`` name its classes."""
    from proctor.dialects.aisteer.aisteer_controls import CONTROLS

    for package, (control, args, _) in CONTROLS.items():
        module = f"aisteer360.algorithms.{package}"
        _NAMES[module] = {
            control: f"proctor.dialects.aisteer.aisteer_controls:{control}",
            args: f"proctor.dialects.aisteer.aisteer_controls:{args}",
        }
        _NAMES[f"{module}.control"] = {control: f"proctor.dialects.aisteer.aisteer_controls:{control}"}
        _NAMES[f"{module}.args"] = {args: f"proctor.dialects.aisteer.aisteer_controls:{args}"}


_control_names()


def supported() -> list[str]:
    """Every ``module.attribute`` name that resolves inside ``aisteer360_names()``."""
    return sorted(f"{module}.{attr}" for module, attrs in _NAMES.items() for attr in attrs)


def _modules() -> dict[str, types.ModuleType]:
    modules, package = stand_in_packages("AISteer360's")
    for name, attrs in _NAMES.items():
        module = package(name)
        for attr, target in attrs.items():
            source, _, obj = target.partition(":")
            setattr(module, attr, getattr(importlib.import_module(source), obj))
    return modules


class _Missing(importlib.abc.MetaPathFinder):
    """Say which AISteer360 name has no proctor equivalent (instead of a bare ModuleNotFoundError)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == ROOT or fullname.startswith(ROOT + "."):
            raise ImportError(
                f"'{fullname}' is an AISteer360 module proctor has no equivalent for; proctor provides "
                f"{len(_NAMES)} aisteer360 modules, listed in docs/aisteer.md and by "
                "proctor.dialects.aisteer.aisteer_names.supported()",
                name=fullname,
            )
        return None


@contextlib.contextmanager
def aisteer360_names() -> Iterator[None]:
    """Inside the block, ``import aisteer360.evaluation...`` gives proctor's equivalents."""
    finder = _Missing()
    with modules_in_force(_modules()):
        sys.meta_path.append(finder)
        try:
            yield
        finally:
            sys.meta_path.remove(finder)


def run_script(path: str, argv: list[str] | None = None) -> dict:
    """Run a Python script written against AISteer360 (a benchmark, say) with its names pointing at
    proctor's: ``python -m proctor.dialects.aisteer.aisteer_names bench.py [ARGS]``. Returns its globals."""
    import os
    import runpy

    old_argv, folder = sys.argv, os.path.dirname(os.path.abspath(path))
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, folder)
    try:
        with aisteer360_names():
            return runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = old_argv
        sys.path.remove(folder)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m proctor.dialects.aisteer.aisteer_names SCRIPT.py [ARGS...]")
    run_script(sys.argv[1], sys.argv[2:])
