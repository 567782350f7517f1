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
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_code import refusal
from proctor.data.readers import Row
from proctor.dialects.aisteer.metrics import Metric

if TYPE_CHECKING:
    from proctor.dialects.aisteer.control_arguments import RuntimeOverrides

# A metric as a config or the command line gives it: a name (built-in, FILE.py:CLASS, module:CLASS), a mapping
# {metric: NAME, **constructor arguments}, or a Metric object (a use case file's module-level list).
MetricSpec = Union[str, Mapping[str, Any], Metric]

_KEYS = {"evaluation_data", "evaluation_metrics", "use_case_kwargs", "gen_kwargs", "batch_size", "runtime_overrides"}


@dataclass
class UseCaseConfig:
    """Settings for one use case file; ``None`` / empty means "not given here". Data paths are
    already resolved; metrics are ``(spec, folder their files are relative to)`` pairs."""

    evaluation_data: list[Row] | str | Path | None = None
    evaluation_metrics: list[tuple[MetricSpec, Path]] | None = None
    use_case_kwargs: dict[str, Any] = field(default_factory=dict)  # UseCase's keyword arguments
    gen_kwargs: dict[str, object] = field(default_factory=dict)
    batch_size: int | None = None
    runtime_overrides: RuntimeOverrides | None = None

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


def resolve_data(data: list[Row] | str | Path | None, base: Path, file: Path) -> list[Row] | Path | None:
    """A data path written in ``file`` (a config, a use case file): relative to ``base``, and inside it."""
    if not isinstance(data, (str, Path)):
        return data
    from proctor.data.paths import check_inside

    full = Path(data).expanduser()
    full = full if full.is_absolute() else base / full
    return check_inside(full, (base,), written=str(data), file=file, field="evaluation_data")


_SAFE_MODULES = ("aisteer360.", "proctor.")  # metric modules that are proctor's own objects


def _names_code(spec: object) -> str | None:
    """The metric reference of a config entry when it is code (``FILE.py:CLASS``, ``module:CLASS``)."""
    name = spec.get("metric") if isinstance(spec, Mapping) else spec
    if isinstance(name, str) and ":" in name and not name.startswith(_SAFE_MODULES):
        return name
    return None


def _check_model_specs(raw: Mapping[str, Any], path: Path, trusted: bool) -> None:
    """A model a metric's or the use case's settings name (``{metric: LLMJudgeMetric, model_or_id: ...}``,
    ``use_case_kwargs``) that would import code (``steer:FILE.py:NAME``) is the config's, not the user's: it
    loads only with --trust-task-code (``api/model_consent.py``), refused here before any model loads."""
    from proctor.api.model_consent import check_model_consent

    for i, spec in enumerate(raw.get("evaluation_metrics") or []):
        if isinstance(spec, Mapping):
            given = {k: v for k, v in spec.items() if k != "metric"}
            check_model_consent(given, trusted=trusted, file=path, field=f"evaluation_metrics[{i}]")
    check_model_consent(raw.get("use_case_kwargs") or {}, trusted=trusted, file=path, field="use_case_kwargs")


# gen_kwargs keys proctor's generation reads, and what each must be (a wrong type fails only mid-run, inside
# the model's generation loop: checked where the file is read). Other keys are the use case's own business.
_COUNTS = {"max_new_tokens": 1, "num_beams": 1, "min_new_tokens": 0, "no_repeat_ngram_size": 0, "top_k": 0}
_NUMBERS = ("temperature", "top_p", "length_penalty", "repetition_penalty")


def gen_kwargs_problem(gen_kwargs: Mapping[str, object]) -> tuple[str, str] | None:
    """(key, problem) for the first ``gen_kwargs`` value proctor's generation cannot use; None when all fit."""
    for key, value in gen_kwargs.items():
        if value is None:
            continue
        if key in _COUNTS or key in ("seed", "batch_size"):
            least = _COUNTS.get(key, 1 if key == "batch_size" else None)
            if isinstance(value, bool) or not isinstance(value, int):
                return key, f"'{key}' must be an integer, got {type(value).__name__}: {value!r:.60}"
            if least is not None and value < least:
                return key, f"'{key}' must be at least {least}, got {value}"
        elif key in _NUMBERS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                return key, f"'{key}' must be a number, got {type(value).__name__}: {value!r:.60}"
        elif key == "do_sample" and not isinstance(value, bool):
            return key, f"'do_sample' must be true or false, got {type(value).__name__}: {value!r:.60}"
        elif key == "stop" and not (
            isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))
        ):
            return key, f"'stop' must be a text or a list of texts, got {value!r:.60}"
    return None


def runtime_overrides_problem(overrides: object) -> str | None:
    """Why ``runtime_overrides`` is not AISteer360's ``{ControlName: {argument: column}}``; None when it is."""
    if not isinstance(overrides, Mapping):
        got = f"{type(overrides).__name__}: {overrides!r:.60}"
        return f"must be a mapping {{ControlName: {{argument: column}}}}, got {got}"
    for control, arguments in overrides.items():
        if not isinstance(arguments, Mapping):
            return (
                f"'{control}' must map the control's arguments to evaluation data columns, got "
                f"{type(arguments).__name__}: {arguments!r:.60}"
            )
    return None


def check_settings(
    gen_kwargs: object,
    runtime_overrides: object,
    batch_size: object,
    file: Path,
    line_of: Callable[[str], int | None],
) -> None:
    """The generation settings a use case file or config gives, checked before any model loads."""
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise TaskDefinitionError(
            f"'batch_size' must be a positive integer, got {batch_size!r:.60}",
            file=file,
            line=line_of("batch_size"),
            field="batch_size",
        )
    if isinstance(gen_kwargs, Mapping):
        problem = gen_kwargs_problem(gen_kwargs)
        if problem is not None:
            key, message = problem
            raise TaskDefinitionError(
                f"gen_kwargs: {message}", file=file, line=line_of("gen_kwargs"), field=f"gen_kwargs.{key}"
            )
    if runtime_overrides is not None:
        wrong = runtime_overrides_problem(runtime_overrides)
        if wrong is not None:
            raise TaskDefinitionError(
                f"'runtime_overrides' {wrong}",
                file=file,
                line=line_of("runtime_overrides"),
                field="runtime_overrides",
            )


def read_config(path: str | Path, trusted: bool = False) -> UseCaseConfig:
    """A ``--use-case-config`` file. Metric code it names (not the command line) runs only when ``trusted``
    (--trust-task-code); its data path stays in its folder."""
    path = Path(path)
    if not path.exists():
        raise TaskDefinitionError("no such use case config file", file=path)
    import yaml

    from proctor.core.yaml_bounds import safe_load
    from proctor.core.yaml_lines import read_text, yaml_error

    text = read_text(path)
    try:
        raw = json.loads(text) if path.suffix == ".json" else safe_load(text)
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
    _check_model_specs(raw, path, trusted)
    batch_size = raw.get("batch_size")
    check_settings(raw.get("gen_kwargs"), raw.get("runtime_overrides"), batch_size, path, lambda key: None)
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
    kwargs: dict[str, object] = {}
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


def _metric_class(spec: str, module: object, base: Path, where: Path) -> type[Metric]:
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


def build_metrics(specs: Sequence[tuple[object, str | Path]], module: object, where: Path) -> list[Metric]:
    """Metric objects for ``(spec, base folder)`` pairs; a spec is a name or ``{metric: NAME, **kwargs}``."""
    metrics = []
    for spec, base in specs:
        if isinstance(spec, Metric):
            metrics.append(spec)
            continue
        kwargs: dict[str, object] = {}
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
        except (TypeError, ValueError) as exc:  # arguments the metric refuses (a judge's reversed scale): named here
            raise TaskDefinitionError(f"metric '{spec}': {exc}", file=where, field="evaluation_metrics") from None
    return metrics
