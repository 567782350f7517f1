"""What a use case file does not say itself: data, metrics and settings from the command line or a
small config file.

AISteer360's ``use_case.py`` files define only the class. ``proctor run use_case.py`` then takes
``--use-case-data FILE``, ``--use-case-metric SPEC`` (repeatable), ``--use-case-arg KEY=VALUE``
(repeatable; the value is read as JSON, else kept as text) or ``--use-case-config FILE`` (YAML or
JSON)::

    evaluation_data: data.jsonl            # relative to the config file
    evaluation_metrics:
      - MCQAAccuracy                       # a built-in metric by name
      - {metric: MCQACalibration, n_bins: 5}
      - my_metrics.py:DistinctN            # a Metric class in a file (relative to the config)
    use_case_kwargs: {num_shuffling_runs: 3}
    gen_kwargs: {max_new_tokens: 8}
    batch_size: 4                          # what AISteer360's Benchmark passes to generate
    runtime_overrides: {}

The command line wins over the config file, which wins over module-level names in the file.
A metric ``SPEC`` is a built-in name, a ``Metric`` class defined in the use case file,
``FILE.py:CLASS`` or ``module.path:CLASS`` (AISteer360's own module names work); files are
imported with AISteer360's names pointing at proctor's (``aisteer_names.py``).
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_code import refusal
from proctor.dialects.aisteer.metrics import Metric

_KEYS = {"evaluation_data", "evaluation_metrics", "use_case_kwargs", "gen_kwargs", "batch_size", "runtime_overrides"}


@dataclass
class UseCaseConfig:
    """Settings for one use case file; ``None`` / empty means "not given here". Data paths are
    already resolved; metrics are ``(spec, folder their files are relative to)`` pairs."""

    evaluation_data: Any = None
    evaluation_metrics: list[tuple[Any, Path]] | None = None
    use_case_kwargs: dict[str, Any] = field(default_factory=dict)
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = None
    runtime_overrides: dict[str, Any] | None = None

    def over(self, other: "UseCaseConfig") -> "UseCaseConfig":
        """This config, with what it does not give taken from ``other``."""
        return UseCaseConfig(
            evaluation_data=self.evaluation_data if self.evaluation_data is not None else other.evaluation_data,
            evaluation_metrics=self.evaluation_metrics or other.evaluation_metrics,
            use_case_kwargs={**other.use_case_kwargs, **self.use_case_kwargs},
            gen_kwargs={**other.gen_kwargs, **self.gen_kwargs},
            batch_size=self.batch_size if self.batch_size is not None else other.batch_size,
            runtime_overrides=self.runtime_overrides if self.runtime_overrides is not None else other.runtime_overrides,
        )


def resolve_data(data: Any, base: Path, file: Path) -> Any:
    """A data path written in ``file`` (a config, a use case file): relative to ``base``, and inside it."""
    if not isinstance(data, (str, Path)):
        return data
    from proctor.data.paths import check_inside

    full = Path(data).expanduser()
    full = full if full.is_absolute() else base / full
    return check_inside(full, (base,), written=str(data), file=file, field="evaluation_data")


_SAFE_MODULES = ("aisteer360.", "proctor.")  # metric modules that are proctor's own objects


def _names_code(spec: Any) -> str | None:
    """The metric reference of a config entry when it is code (``FILE.py:CLASS``, ``module:CLASS``)."""
    name = spec.get("metric") if isinstance(spec, Mapping) else spec
    if isinstance(name, str) and ":" in name and not name.startswith(_SAFE_MODULES):
        return name
    return None


def read_config(path: str | Path, trusted: bool = False) -> UseCaseConfig:
    """A ``--use-case-config`` file. Metric code it names (not the command line) runs only when ``trusted``
    (--trust-task-code); its data path stays in its folder."""
    path = Path(path)
    if not path.exists():
        raise TaskDefinitionError("no such use case config file", file=path)
    import yaml

    from proctor.core.yaml_lines import read_text, yaml_error

    text = read_text(path)
    try:
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise TaskDefinitionError(f"not valid JSON: {exc.msg}", file=path, line=exc.lineno) from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path, text) from None
    if not isinstance(raw, Mapping):
        raise TaskDefinitionError("a use case config is a mapping of settings", file=path)
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise TaskDefinitionError(f"unknown setting(s) {unknown}; known: {sorted(_KEYS)}", file=path, field=unknown[0])
    for key, kind in (("use_case_kwargs", Mapping), ("gen_kwargs", Mapping), ("evaluation_metrics", list)):
        if key in raw and not isinstance(raw[key], kind):
            raise TaskDefinitionError(
                f"'{key}' must be a {'mapping' if kind is Mapping else 'list'}", file=path, field=key
            )
    for spec in raw.get("evaluation_metrics") or []:
        code = _names_code(spec)
        if code and not trusted:
            raise refusal(f"evaluation_metrics '{code}'", file=path, field="evaluation_metrics")
    batch_size = raw.get("batch_size")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise TaskDefinitionError(
            f"'batch_size' must be a positive integer, got {batch_size!r}", file=path, field="batch_size"
        )
    return UseCaseConfig(
        evaluation_data=resolve_data(raw.get("evaluation_data"), path.parent, path),
        evaluation_metrics=[(m, path.parent) for m in raw["evaluation_metrics"]]
        if raw.get("evaluation_metrics")
        else None,
        use_case_kwargs=dict(raw.get("use_case_kwargs") or {}),
        gen_kwargs=dict(raw.get("gen_kwargs") or {}),
        batch_size=batch_size,
        runtime_overrides=raw.get("runtime_overrides"),
    )


def command_line_config(data: Path | None, metrics: Sequence[str] | None, args: Sequence[str] | None) -> UseCaseConfig:
    kwargs: dict[str, Any] = {}
    for item in args or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TaskDefinitionError(f"--use-case-arg takes KEY=VALUE, got {item!r}")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return UseCaseConfig(
        evaluation_data=data,
        evaluation_metrics=[(m, Path(".")) for m in metrics] if metrics else None,
        use_case_kwargs=kwargs,
    )


def builtin_metrics() -> dict[str, type[Metric]]:
    from proctor.dialects.aisteer.generic_metrics import (
        Factuality,
        Perplexity,
        Relevance,
        RewardScore,
        ShortAnswerMatch,
    )
    from proctor.dialects.aisteer.ifeval import LooseInstruction, StrictInstruction
    from proctor.dialects.aisteer.mcqa_metrics import MCQAAccuracy, MCQACalibration, MCQAPositionalBias
    from proctor.dialects.aisteer.truthfulqa import Informativeness, Truthfulness

    return {
        cls.__name__: cls
        for cls in (
            MCQAAccuracy,
            MCQACalibration,
            MCQAPositionalBias,
            StrictInstruction,
            LooseInstruction,
            Factuality,
            Relevance,
            Perplexity,
            RewardScore,
            ShortAnswerMatch,
            Truthfulness,
            Informativeness,
        )
    }


def _metric_class(spec: str, module: Any, base: Path, where: Path) -> type:
    local = getattr(module, spec, None)
    if isinstance(local, type) and issubclass(local, Metric):
        return local
    if spec in builtin_metrics():
        return builtin_metrics()[spec]
    source, sep, name = spec.rpartition(":")
    if not sep:
        raise TaskDefinitionError(
            f"unknown metric '{spec}': give a built-in name ({', '.join(builtin_metrics())}), a Metric class of the "
            "use case file, FILE.py:CLASS or module.path:CLASS",
            file=where,
            field="evaluation_metrics",
        )
    if source.endswith(".py"):
        from proctor.dialects.aisteer.user_files import import_user_file

        file = Path(source) if Path(source).is_absolute() else base / source
        holder = import_user_file(file)
    else:
        from proctor.dialects.aisteer.aisteer_names import aisteer360_names

        try:
            with aisteer360_names():
                holder = importlib.import_module(source)
        except ImportError as exc:
            raise TaskDefinitionError(f"metric '{spec}': {exc}", file=where, field="evaluation_metrics") from None
    cls = getattr(holder, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise TaskDefinitionError(
            f"metric '{spec}': {source} has no Metric class '{name}'", file=where, field="evaluation_metrics"
        )
    return cls


def build_metrics(specs: Sequence[Any], module: Any, where: Path) -> list[Metric]:
    """Metric objects for ``(spec, base folder)`` pairs; a spec is a name or ``{metric: NAME, **kwargs}``."""
    metrics = []
    for spec, base in specs:
        if isinstance(spec, Metric):
            metrics.append(spec)
            continue
        kwargs: dict[str, Any] = {}
        if isinstance(spec, Mapping):
            kwargs = {k: v for k, v in spec.items() if k != "metric"}
            spec = spec.get("metric")
        if not isinstance(spec, str):
            raise TaskDefinitionError(
                f"a metric is a name or {{metric: NAME, ...}}, got {spec!r}", file=where, field="evaluation_metrics"
            )
        cls = _metric_class(spec, module, Path(base), where)
        try:
            metrics.append(cls(**kwargs))
        except TypeError as exc:
            raise TaskDefinitionError(f"metric '{spec}': {exc}", file=where, field="evaluation_metrics") from None
    return metrics
