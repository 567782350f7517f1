"""The keys of a GLM-130B task YAML and how their values are read: each key's accepted types and default
(GLM's ``BaseConfig``, ``GenerationTaskConfig`` and ``LanguageModelTaskConfig``), the least each count may be,
and the conversions GLM's YAMLWizard (dataclass-wizard 0.22) applies before the type check. Used by
``proctor.dialects.glm.dialect.normalise``."""

from __future__ import annotations

import math
from typing import Any

DEFAULT_FILE_PATTERN = "**/*.json*"

# One GLM-130B task YAML's settings after ``normalise``: snake_case key -> its value (every key of FIELDS, as
# GLM's config dataclasses hold them: text, counts, flags, lists, a group -> pattern mapping)
GLMConfig = dict[str, Any]

# key -> (accepted types, default); GLM's BaseConfig, GenerationTaskConfig and LanguageModelTaskConfig
FIELDS: dict[str, tuple[tuple[type, ...], object]] = {
    "name": ((str,), None),
    "type": ((str,), None),
    "path": ((str,), None),
    "module": ((str, type(None)), None),
    "metrics": ((list, str), None),
    "use_task_mask": ((bool,), False),
    "use_multitask_encoding": ((bool,), False),
    "unidirectional": ((bool,), False),
    "max_seq_length": ((int,), 2048),
    "file_pattern": ((str, dict), DEFAULT_FILE_PATTERN),
    "micro_batch_size": ((int,), 1),
    "sampling_strategy": ((str,), "BaseStrategy"),
    "num_beams": ((int,), 4),
    "length_penalty": ((float, int), 1.0),
    "no_repeat_ngram_size": ((int,), 3),
    "min_gen_length": ((int,), 0),
    "max_gen_length": ((int,), 128),
    "generation_length": ((int,), 256),
    "stop": ((str, list), None),  # proctor's addition: stop strings for generation
}
# the least each count may be (GLM would crash later, or proctor silently use another value)
MINIMUMS = {
    "max_seq_length": 3,  # an lm task's window is one token less, and a window scores at least two
    "micro_batch_size": 1,
    "num_beams": 1,
    "no_repeat_ngram_size": 0,
    "min_gen_length": 0,
    "max_gen_length": 1,
    "generation_length": 1,
}


def is_class_reference(text: str) -> bool:
    """``package.module.Class`` or ``file.py:Class``: a class name after a module."""
    module, sep, name = text.rpartition(":") if ":" in text else text.rpartition(".")
    return bool(module.strip()) and bool(sep) and name.isidentifier()


_TRUTHY = ("TRUE", "T", "YES", "Y", "1")  # dataclass-wizard's as_bool: any other text is false
_FALSY = ("FALSE", "F", "NO", "N", "0")


def as_upstream_reads(value: object, types: tuple[type, ...]) -> object:
    """A value as GLM's YAMLWizard (dataclass-wizard) converts it for a field of ``types``, where that is
    unambiguous: a number written as text ("2048", "0.5"), a whole float for a count (2048.0), yes / no and 1 / 0
    for a flag, a number for a text. Left as given otherwise, for the type check to name it (a fractional count,
    which upstream would round, or "maybe", which it would read as false)."""
    if isinstance(value, bool) or value is None:
        return value
    if bool in types:
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().upper() in _TRUTHY + _FALSY:
            return value.strip().upper() in _TRUTHY
        return value
    if float in types and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if int in types and not isinstance(value, int):
        try:
            number = float(value) if isinstance(value, (str, float)) else None
        except ValueError:
            return value
        if number is not None and math.isfinite(number) and number.is_integer():
            return int(number)
        return value
    if str in types and isinstance(value, (int, float)) and list not in types and dict not in types:
        return str(value)
    return value
