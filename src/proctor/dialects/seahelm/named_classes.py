"""Dataloader, metric and judge classes named in configs: SEA-HELM's own (``src/...``) resolve to
proctor's built-in equivalents; classes in task-folder files load only with an explicit trust flag."""

from __future__ import annotations

import contextlib
import logging
import sys
import types
from pathlib import Path
from typing import Iterator

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_code import class_in_file, located, modules_in_force, stand_in_packages
from proctor.dialects.seahelm import (
    dataloaders,
    ifeval,
    image_dataloader,
    judge_dataloaders,
    judges,
    metrics,
    mtbench_judge,
    qa,
    task_config,
    translation,
)

log = logging.getLogger(__name__)

BUILTIN_CLASSES = {
    "AbstractDataloader": dataloaders.AbstractDataloader,
    "SeaHelmLocalDataloader": dataloaders.SeaHelmLocalDataloader,
    "HuggingFaceDataloader": dataloaders.HuggingFaceDataloader,
    "HuggingFacePairwiseDataloader": dataloaders.HuggingFacePairwiseDataloader,
    "HuggingFaceImageDataloader": image_dataloader.HuggingFaceImageDataloader,
    "PairwiseDataloader": dataloaders.PairwiseDataloader,
    "SeaHelmMetric": metrics.SeaHelmMetric,
    "F1AccMetric": metrics.F1AccMetric,
    "QuestionAnsweringMetric": qa.QuestionAnsweringMetric,
    "TranslationMetric": translation.TranslationMetric,
    "TranslationDataloader": translation.TranslationDataloader,
    "TranslationJudge": translation.TranslationJudge,
    "IFEvalMetric": ifeval.IFEvalMetric,
    "PairwiseLLMJudgeMetric": judges.PairwiseLLMJudgeMetric,
    "CriteriaJudgeMetric": judges.CriteriaJudgeMetric,
    "JudgeDataloader": judge_dataloaders.JudgeDataloader,
    "CriteriaDataloader": judge_dataloaders.CriteriaDataloader,
    "SeaHelmLocalCriteriaDataloader": judge_dataloaders.SeaHelmLocalCriteriaDataloader,
    "HuggingFaceCriteriaDataloader": judge_dataloaders.HuggingFaceCriteriaDataloader,
    "MTBenchJudgeDataloader": mtbench_judge.MTBenchJudgeDataloader,
    "MTBenchJudgeMetric": mtbench_judge.MTBenchJudgeMetric,
    "SeaHelmJudge": judges.SeaHelmJudge,
    "CriteriaJudge": judges.CriteriaJudge,
    "PairwiseJudge": judges.PairwiseJudge,
}


def _builtin_logprob():
    from proctor.dialects.seahelm.logprobs import LogProbMetric

    return LogProbMetric


# files that SEA-HELM ships inside its own task folders: when a copied tree lacks them, proctor's
# equivalent stands in (a file that is present is loaded as usual, with the trust flag)
SHIPPED = {
    ("seahelm_tasks/instruction_following/ifeval/if_eval.py", "IFEvalMetric"),
    ("seahelm_tasks/nlg/translation/translation_dataloader.py", "TranslationDataloader"),
    ("seahelm_tasks/nlg/translation/translation_metric.py", "TranslationMetric"),
    ("seahelm_tasks/nlg/translation/translation_judge.py", "TranslationJudge"),
    ("seahelm_tasks/multi_turn/mt_bench_judge/mtbench_judge_dataloader.py", "MTBenchJudgeDataloader"),
    ("seahelm_tasks/multi_turn/mt_bench_judge/mtbench_judge_metric.py", "MTBenchJudgeMetric"),
}

# the module layout of SEA-HELM's src/, for task-folder code that imports from it
_ALIASES = {
    "src.metrics.seahelm_metric": ["SeaHelmMetric"],
    "src.metrics.f1_acc_metric": ["F1AccMetric"],
    "src.metrics.question_answering": ["QuestionAnsweringMetric"],
    "src.metrics.question_answering_metric": ["QuestionAnsweringMetric"],
    "src.metrics.translation_metric": ["TranslationMetric"],
    "src.metrics.llm_judges.pairwise_llm_judge_metric": ["PairwiseLLMJudgeMetric"],
    "src.metrics.llm_judges.criteria_judge_metric": ["CriteriaJudgeMetric"],
    "src.dataloaders.base_dataloader": ["AbstractDataloader"],
    "src.dataloaders.seahelm_local_dataloader": ["SeaHelmLocalDataloader"],
    "src.dataloaders.huggingface_dataloader": ["HuggingFaceDataloader"],
    "src.dataloaders.huggingface_image_dataloader": ["HuggingFaceImageDataloader"],
    "src.dataloaders.judges.pairwise_dataloader": ["HuggingFacePairwiseDataloader", "PairwiseDataloader"],
    "src.dataloaders.judges.judge_dataloader": ["JudgeDataloader"],
    "src.judges.seahelm_judge": ["SeaHelmJudge"],
    "src.judges.criteria_judge": ["CriteriaJudge"],
    "src.judges.pairwise_judge": ["PairwiseJudge"],
    "src.dataloaders.judges.criteria_dataloader": [
        "CriteriaDataloader",
        "SeaHelmLocalCriteriaDataloader",
        "HuggingFaceCriteriaDataloader",
    ],
}


def _src_modules() -> dict[str, types.ModuleType]:
    modules, module = stand_in_packages("SEA-HELM's")
    for name, classes in _ALIASES.items():
        for cls in classes:
            setattr(module(name), cls, BUILTIN_CLASSES[cls])
    setattr(module("src.metrics.logprob_metric"), "LogProbMetric", _builtin_logprob())
    setattr(module("src.task_config"), "TaskConfig", task_config.TaskConfig)
    setattr(module("src.dataloaders.base_dataloader"), "ConfigDict", task_config.ConfigDict)
    setattr(module("src.base_logger"), "get_logger", logging.getLogger)
    return modules


@contextlib.contextmanager
def seahelm_src_names() -> Iterator[None]:
    """While inside: ``from src.metrics.seahelm_metric import SeaHelmMetric`` (and friends) gives
    proctor's classes; afterwards ``sys.modules`` is as it was. A real ``src`` package already
    imported is left alone."""
    if "src" in sys.modules:
        yield
        return
    with modules_in_force(_src_modules()):
        yield


def resolve_class(
    file: str | None, class_name: str | None, *, root: Path, config_file: Path, trust: bool, what: str, default: str
):
    """The class a config names (``<what>_file`` + ``<what>_class``)."""
    from proctor.dialects.seahelm.config import resolve_file

    name = class_name or default
    if not file or str(file).replace("\\", "/").startswith("src/"):
        if name == "LogProbMetric":
            return _builtin_logprob()
        if name in BUILTIN_CLASSES:
            return BUILTIN_CLASSES[name]
        raise TaskDefinitionError(
            f"SEA-HELM class '{name}' ({file}) has no proctor equivalent", file=config_file, field=f"{what}_class"
        )
    path = resolve_file(str(file), root, config_file, f"{what}_file")
    if path is None and (str(file).replace("\\", "/"), name) in SHIPPED:
        log.info("%s: %s is not in the tree; using proctor's built-in %s", config_file, file, name)
        return BUILTIN_CLASSES[name]
    if path is None:
        raise TaskDefinitionError(
            f"{what}_file not found: {file} (looked in {root} and {config_file.parent})",
            file=config_file,
            field=f"{what}_file",
        )
    if not trust:
        raise TaskDefinitionError(
            f"{what}_class '{name}' is code in {path}; pass --trust-task-code (API: "
            "dialect_options={'trust_task_code': True}) to run it",
            file=config_file,
            field=f"{what}_file",
        )
    try:
        cls = class_in_file(path, name, field=f"{what}_class", names=seahelm_src_names)
    except TaskDefinitionError as exc:
        raise TaskDefinitionError(located(exc), file=config_file, field=f"{what}_class") from None
    from proctor.dialects.seahelm.offline_datasets import patch_module

    module = sys.modules.get(getattr(cls, "__module__", ""))
    if module is not None:
        from proctor.dialects.seahelm import task_code_env

        patch_module(module)  # its load_dataset(<hub id>, ...) reads local copies, never the hub
        task_code_env.patch_module(module)  # AutoTokenizer: the evaluated model's; Dataset.map in-process
    setattr(cls, "__proctor_source__", str(path))  # read back with getattr (task.py, conversations.py)
    return cls
