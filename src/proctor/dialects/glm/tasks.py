"""GLM's task classes (``evaluation/tasks.py``): the same constructor, hooks and flow.

``evaluate()`` runs as GLM's: per ``file-pattern`` group and file, ``build_dataset``, batches of
``micro_batch_size`` through ``predict_single_batch``, every metric of ``self.metrics`` called as
``metric(predictions, dataset.data)``, then ``report_single_metrics`` per file, ``report_group_metrics``
per group and ``report_overall_metrics`` over all files. It also keeps what proctor reports
(``self.proctor_results``: per group and file, the metric values, the item count and the predictions).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import defaultdict
from glob import glob
from os.path import join, relpath
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Tuple, Type

import numpy as np

from proctor.dialects.glm.configs import (
    BaseConfig,
    GenerationTaskConfig,
    LanguageModelTaskConfig,
    MultiChoiceTaskConfig,
)
from proctor.dialects.glm.dataset import (
    EvaluationDataset,
    GenerationTaskDataset,
    LanguageModelTaskDataset,
    MultiChoiceTaskDataset,
)
from proctor.dialects.glm.metrics import DEFAULT_METRICS
from proctor.dialects.glm.strategies import BaseStrategy, BeamSearchStrategy
from proctor.dialects.glm.utils import build_data_loader, gather_result, print_rank_0

if TYPE_CHECKING:
    from proctor.dialects.glm.model import ModelForEvaluation
    from proctor.dialects.glm.tokenizer import GLMTokenizer


class BaseTask(ABC):
    model: ModelForEvaluation
    tokenizer: GLMTokenizer
    config: BaseConfig
    file_groups: Dict[str, List[str]]

    @classmethod
    def config_class(cls) -> Type[BaseConfig]:
        return BaseConfig

    @property
    def metrics(self) -> Dict[str, Callable]:
        return {metric: DEFAULT_METRICS[metric] for metric in self.config.metrics}

    def __init__(self, model, tokenizer, config: BaseConfig):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.config.metrics = list(self.metrics.keys())
        self.file_groups = self.get_file_groups()
        self.verbose = True
        self.proctor_results: dict[str, dict[str, dict]] = {}
        self.proctor_limits: dict[str, int] = {}  # file -> items to keep (proctor's --limit)
        self.proctor_scores: list[list[float]] = []
        self.proctor_progress: Callable[[int], None] | None = None

    def get_file_groups(self):
        patterns = (
            {"all": self.config.file_pattern} if isinstance(self.config.file_pattern, str) else self.config.file_pattern
        )
        return {
            name: [
                relpath(path, start=self.config.path)
                for path in sorted(glob(join(self.config.path, pattern), recursive=True))
            ]
            for name, pattern in patterns.items()
        }

    def _predict_file(self, file: str):
        dataset = self.build_dataset(file)
        keep = self.proctor_limits.get(file)
        if keep is not None and len(dataset) == len(dataset.data) and keep < len(dataset.data):
            dataset.data = dataset.data[:keep]
        loader = build_data_loader(
            dataset,
            micro_batch_size=self.config.micro_batch_size,
            num_workers=1,
            drop_last=False,
            collate_fn=dataset.collate_fn if dataset.has_collate_fn else None,
        )
        prediction = []
        self.proctor_scores = []  # the default multiple-choice prediction's per-choice scores, item by item
        for batch in loader:
            prediction.append(self.predict_single_batch(batch))
            if self.proctor_progress is not None:
                self.proctor_progress(len(prediction[-1]))
        return dataset, gather_result(prediction, len(dataset), self.config.micro_batch_size)

    def evaluate(self):
        start = time.time()
        print_rank_0(f"{self.config}")
        print_rank_0(f"Evaluating task {self.config.name}:")
        result_dict_all = {}
        for group_name, filelist in self.file_groups.items():
            print_rank_0(f"    Evaluating group {group_name}:")
            result_dict_group = {}
            self.proctor_results[group_name] = {}
            for file in filelist:
                dataset, prediction = self._predict_file(file)
                result_dict = {key: metric(prediction, dataset.data) for key, metric in self.metrics.items()}
                result_dict_group[file] = (result_dict, len(dataset))
                self.proctor_results[group_name][file] = {
                    "metrics": result_dict,
                    "n": len(dataset),
                    "predictions": prediction,
                    "scores": list(self.proctor_scores),
                }
                if self.verbose:
                    self.report_single_metrics(file, result_dict)
            result_dict_all[group_name] = result_dict_group
        print_rank_0(f"Evaluation results of task {self.config.name}:")
        if self.verbose:
            for group_name, result_dict_group in result_dict_all.items():
                self.report_group_metrics(group_name, result_dict_group)
            self.report_overall_metrics({k: v for group in result_dict_all.values() for k, v in group.items()})
        print_rank_0(f"Finish task {self.config.name} in {time.time() - start:.1f}s.")

    def report_single_metrics(self, file: str, result_dict: Dict[str, float]):
        output = f"        Finish {file}"
        for key, value in result_dict.items():
            output += f", {key} = {value:.3f}"
        print_rank_0(output)

    @staticmethod
    def calc_group_metrics(result_dict_group: Dict[str, Tuple[Dict[str, float], int]]):
        values, weight = defaultdict(list), []
        for _, (result_dict, length) in result_dict_group.items():
            for key, value in result_dict.items():
                values[key].append(value)
            weight.append(length)
        return {
            name: {"max": np.max(value), "median": np.median(value), "average": np.average(value, weights=weight)}
            for name, value in values.items()
        }

    def report_group_metrics(self, group_name, result_dict_group: Dict[str, Tuple[Dict[str, float], int]], level=1):
        stats_dict = self.calc_group_metrics(result_dict_group)
        if len(stats_dict) == 1:
            name, stats = next(iter(stats_dict.items()))
            print_rank_0(
                "    " * level + f"Group {group_name} {name}: max = {stats['max']:.3f}, "
                f"median = {stats['median']:.3f}, average = {stats['average']:.3f}"
            )
        else:
            print_rank_0("    " * level + f"  Group {group_name}: ")
            for name, stats in stats_dict.items():
                print_rank_0(
                    "    " * (level + 1) + f"Metric {name}: max = {stats['max']:.3f}, "
                    f"median = {stats['median']:.3f}, average = {stats['average']:.3f}"
                )

    def report_overall_metrics(self, result_dict_all: Dict[str, Tuple[Dict[str, float], int]]):  # noqa: B027
        pass  # an optional hook, as in GLM-130B: a task may print more than the per-dataset metrics

    @abstractmethod
    def predict_single_batch(self, batch) -> List[Any]:
        pass

    @abstractmethod
    def build_dataset(self, relative_path: str) -> EvaluationDataset:
        pass


class GenerationTask(BaseTask, ABC):
    config: GenerationTaskConfig

    @classmethod
    def config_class(cls):
        return GenerationTaskConfig

    def build_dataset(self, relative_path):
        return GenerationTaskDataset(join(self.config.path, relative_path), self.config)

    def __init__(self, model, tokenizer, config: GenerationTaskConfig):
        super().__init__(model, tokenizer, config)
        end_tokens = [tokenizer.get_command("eop"), tokenizer.get_command("eos")]
        self.strategy: BaseStrategy | BeamSearchStrategy
        if self.config.sampling_strategy == "BaseStrategy":
            self.strategy = BaseStrategy(
                batch_size=self.config.micro_batch_size, temperature=1.0, top_k=1, end_tokens=end_tokens
            )
        elif self.config.sampling_strategy == "BeamSearchStrategy":
            self.strategy = BeamSearchStrategy(
                self.config.micro_batch_size,
                self.config.num_beams,
                length_penalty=self.config.length_penalty,
                consider_end=True,
                end_tokens=end_tokens,
                no_repeat_ngram_size=self.config.no_repeat_ngram_size,
                min_gen_length=self.config.min_gen_length,
                deterministic=True,
            )
        else:
            raise ValueError(f"unknown strategy {self.config.sampling_strategy}")

    def predict_single_batch(self, batch) -> List[List[int]]:
        return self.model.generate_text(batch, self.strategy, return_all_beams=False)


class MultiChoiceTask(BaseTask, ABC):
    config: MultiChoiceTaskConfig

    @classmethod
    def config_class(cls):
        return MultiChoiceTaskConfig

    def build_dataset(self, relative_path):
        return MultiChoiceTaskDataset(join(self.config.path, relative_path), self.config)

    def predict_single_batch(self, batch) -> List[int]:
        log_probs = self.model.cond_log_prob(batch)
        self.proctor_scores.extend([float(x) for x in single] for single in log_probs)  # for the sample records
        return [np.argmax(log_probs_single).item() for log_probs_single in log_probs]


class LanguageModelTask(BaseTask, ABC):
    config: LanguageModelTaskConfig

    @classmethod
    def config_class(cls):
        return LanguageModelTaskConfig

    def build_dataset(self, relative_path):
        return LanguageModelTaskDataset(join(self.config.path, relative_path), self.config)

    def predict_single_batch(self, batch) -> List[float]:
        return self.model.calculate_loss(batch)


DEFAULT_CLASS = {"gen": GenerationTask, "mul": MultiChoiceTask, "lm": LanguageModelTask}
