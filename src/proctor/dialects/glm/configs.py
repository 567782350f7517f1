"""GLM-130B's task configs (``evaluation/configs.py``): the same classes, fields and defaults.

proctor reads the YAML itself (``proctor.dialects.glm.dialect``, snake_case or kebab-case keys) and builds
these with :func:`build_config`; ``from_yaml_file`` is there for task code that calls it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Dict, List, Optional, Union

if TYPE_CHECKING:
    from proctor.dialects.glm.config_fields import GLMConfig


class TaskType(Enum):
    MULTICHOICE = "mul"
    GENERATION = "gen"
    LANGUAGE_MODEL = "lm"
    OTHER = "other"


@dataclass
class BaseConfig:
    name: str
    type: TaskType
    path: str
    module: Optional[str] = None
    metrics: List[str] = field(default_factory=list)
    use_task_mask: bool = False
    use_multitask_encoding: bool = False
    unidirectional: bool = False
    max_seq_length: int = 2048
    file_pattern: Union[str, Dict[str, str]] = "**/*.json*"
    micro_batch_size: int = 1

    def __post_init__(self):
        if isinstance(self.type, str):
            self.type = TaskType(self.type)
        assert self.use_task_mask or not self.unidirectional, "[MASK] doesn't support unidirectional attention"

    @classmethod
    def from_yaml_file(cls, path: str):
        from proctor.core.yaml_bounds import safe_load

        with open(path, encoding="utf-8") as handle:
            document = safe_load(handle) or {}
        return build_config(cls, {str(k).replace("-", "_"): v for k, v in document.items()})


@dataclass
class MultiChoiceTaskConfig(BaseConfig):
    module = "evaluation.MultiChoiceTask"
    metrics: List[str] = field(default_factory=lambda: ["Accuracy"])


@dataclass
class GenerationTaskConfig(BaseConfig):
    module = "evaluation.GenerationTask"
    metrics: List[str] = field(default_factory=lambda: ["EM", "F1"])
    sampling_strategy: str = "BaseStrategy"
    num_beams: int = 4
    length_penalty: float = 1.0
    no_repeat_ngram_size: int = 3
    min_gen_length: int = 0
    max_gen_length: int = 128


@dataclass
class LanguageModelTaskConfig(BaseConfig):
    module = "evaluation.LanguageModelTask"
    metrics: List[str] = field(default_factory=lambda: ["PPL"])
    generation_length: int = 256


def build_config(cls: type, values: GLMConfig):
    """An instance of the config class ``cls`` from proctor's normalised GLM settings: keys the class
    has; a missing ``metrics`` takes the class's default, as dataclass_wizard leaves it."""
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in values.items() if k in names and v is not None}
    if "metrics" in kwargs and not kwargs["metrics"]:
        kwargs.pop("metrics")
    return cls(**kwargs)
