"""Python use case files: ``proctor run my_use_case.py --model ...`` (the use case dialect loads them).

Convention for the file (it is imported as a module, with its folder on ``sys.path`` and
AISteer360's module names pointing at proctor's, so AISteer360's own files run unmodified):

1. a module-level ``use_case`` (a ``UseCase`` instance) is used as is; otherwise
2. the file must define exactly one ``UseCase`` subclass, which is built from ``evaluation_data``
   (a list of rows, or a .json/.jsonl path), ``evaluation_metrics`` and, optionally,
   ``use_case_kwargs`` (extra keyword arguments such as ``num_shuffling_runs``), taken from the
   command line, then a ``--use-case-config`` file, then module-level names (``runconfig.py``).

``gen_kwargs`` sets generation options (``max_new_tokens``, ...); ``generate`` also receives
``batch_size`` and ``runtime_overrides`` as AISteer360's Benchmark passes them. ``--limit N`` keeps
the first N rows. The file becomes one task (``file_tasks``, ``usecase_task.py``) that runs through
``proctor.evaluate`` like every other: the same run folder, results.json, resume, cache and workers.
``run_use_cases`` does the same for use case objects, from Python.
"""

from __future__ import annotations

import copy
import inspect
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, TypeVar, cast

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.task import Task
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.options import AISteerOptions
from proctor.dialects.aisteer.runconfig import (
    UseCaseConfig,
    build_metrics,
    check_settings,
    command_line_config,
    read_config,
    resolve_data,
)
from proctor.dialects.aisteer.user_files import import_user_file, line_in

if TYPE_CHECKING:
    from types import ModuleType

    from proctor.api import ModelRef, ProgressHook
    from proctor.api.evaluation_result import EvaluationResult
    from proctor.data.readers import Row
    from proctor.dialects.aisteer.control_arguments import RuntimeOverrides
    from proctor.models.steering.generation import GenKwargs

T = TypeVar("T")


def _line_of(path: Path, name: str) -> int | None:
    """The line of the use case file's module-level assignment to ``name``."""
    text = path.read_text(encoding="utf-8", errors="replace")
    match = re.search(rf"^{name}\s*[:=]", text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else None


def _setting(module: ModuleType, path: Path, name: str, kinds: tuple[type[T], ...], wanted: str) -> T | None:
    """The use case file's module-level ``name`` when it is one of ``kinds`` (None when absent); else an error
    naming the file, the line of the assignment and the name."""
    value = getattr(module, name, None)
    if value is None or isinstance(value, kinds):
        return value
    raise TaskDefinitionError(
        f"'{name}' must be {wanted}, got {type(value).__name__}: {value!r:.60}",
        file=path,
        line=_line_of(path, name),
        field=name,
    )


def _module_config(module: ModuleType, path: Path) -> UseCaseConfig:
    metrics = _setting(module, path, "evaluation_metrics", (list, tuple), "a list of metrics")
    check_settings(
        getattr(module, "gen_kwargs", None),
        getattr(module, "runtime_overrides", None),
        getattr(module, "batch_size", None),
        path,
        lambda name: _line_of(path, name),
    )
    return UseCaseConfig(
        evaluation_data=resolve_data(getattr(module, "evaluation_data", None), path.parent, path),
        evaluation_metrics=[(m, path.parent) for m in metrics] if metrics is not None else None,
        use_case_kwargs=dict(_setting(module, path, "use_case_kwargs", (dict,), "a mapping") or {}),
        gen_kwargs=dict(_setting(module, path, "gen_kwargs", (dict,), "a mapping") or {}),
        batch_size=getattr(module, "batch_size", None),
        runtime_overrides=getattr(module, "runtime_overrides", None),
    )


def _nothing_ignored(config: UseCaseConfig | None, path: Path) -> None:
    """A file whose ``use_case = ...`` is built already takes no data, metrics or use case settings from the
    command line or a config file: they would be ignored without a word, so they are refused."""
    if config is None:
        return
    given = [
        (name, option)
        for name, option, value in (
            ("evaluation_data", "--use-case-data", config.evaluation_data),
            ("evaluation_metrics", "--use-case-metric", config.evaluation_metrics),
            ("use_case_kwargs", "--use-case-arg", config.use_case_kwargs),
        )
        if value
    ]
    if given:
        name, option = given[0]
        raise TaskDefinitionError(
            f"the file builds its use case itself ('use_case = ...'), so the '{name}' given by {option} or "
            "--use-case-config would be ignored; give it in the file, or define only the UseCase class there",
            file=path,
            line=_line_of(path, "use_case"),
            field=name,
        )


def _read_use_case_file(path: Path, config: UseCaseConfig | None) -> Callable[[int | None], tuple[UseCase, dict, dict]]:
    """Import the file once and check what it defines; returns ``build(limit)`` (see ``load_use_case_file``)."""
    module = import_user_file(path)
    settings = (config or UseCaseConfig()).over(_module_config(module, path))
    gen_kwargs = dict(settings.gen_kwargs)
    call = {
        "batch_size": settings.batch_size or gen_kwargs.pop("batch_size", None),
        "runtime_overrides": settings.runtime_overrides,
    }
    gen_kwargs.pop("batch_size", None)
    use_case = getattr(module, "use_case", None)
    if use_case is not None:
        if not isinstance(use_case, UseCase):
            raise TaskDefinitionError(
                f"'use_case' is a {type(use_case).__name__}, not a UseCase", file=path, field="use_case"
            )
        _nothing_ignored(config, path)

        def given(limit: int | None) -> tuple[UseCase, dict, dict]:
            case = use_case
            if limit:  # a copy: the file's object keeps its rows
                case = copy.copy(use_case)
                case.evaluation_data = use_case.evaluation_data[:limit]
            return case, dict(gen_kwargs), dict(call)

        return given
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, UseCase)
        and obj.__module__ == module.__name__
        and not inspect.isabstract(obj)
    ]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise TaskDefinitionError(
            f"a use case file defines 'use_case = ...' or exactly one UseCase subclass (found: {found})", file=path
        )
    for required, option in (("evaluation_data", "--use-case-data"), ("evaluation_metrics", "--use-case-metric")):
        if getattr(settings, required) is None:
            raise TaskDefinitionError(
                f"the file defines {classes[0].__name__} but no '{required}': give {option} (or --use-case-config, "
                f"or a module-level '{required}')",
                file=path,
                field=required,
            )

    _check_settings(classes[0], settings.use_case_kwargs, path)

    def build(limit: int | None) -> tuple[UseCase, dict, dict]:
        kwargs = dict(settings.use_case_kwargs)
        if limit:
            kwargs["num_samples"] = limit
        specs = settings.evaluation_metrics
        assert specs is not None  # checked above
        metrics = build_metrics(specs, module, path)
        try:
            data = cast("list[Row] | str | Path", settings.evaluation_data)  # checked above, as the metrics are
            built = classes[0](evaluation_data=data, evaluation_metrics=metrics, **kwargs)
        except TaskDefinitionError:
            raise
        except Exception as exc:  # a row check (validate_evaluation_data) or the class itself: the file's problem
            detail = str(exc) if isinstance(exc, ProctorError) else f"{type(exc).__name__}: {exc}"
            raise TaskDefinitionError(
                f"building {classes[0].__name__} failed: {detail}",
                file=path,
                line=line_in(exc, path),
                field="evaluation_data",
            ) from None
        return built, dict(gen_kwargs), dict(call)

    return build


_BASE_SETTINGS = ("num_samples", "shuffle", "seed")


def _check_settings(cls: type, kwargs: Mapping[str, object], path: Path) -> None:
    """A setting (``--use-case-arg``, ``use_case_kwargs``) the class never names would become an attribute nobody
    reads, leaving the default in force: refuse names that are neither a base setting, a class attribute nor a word
    of the file (where ``self.<name>`` or ``getattr(self, "<name>")`` reads it)."""
    import re

    from proctor.core.names import close_names

    if not kwargs:
        return
    declared = set(_BASE_SETTINGS)
    for klass in inspect.getmro(cls):
        if klass is object:
            continue
        declared.update(k for k in vars(klass) if not k.startswith("__"))
        declared.update(getattr(klass, "__annotations__", {}))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    for key in kwargs:
        if key in declared or re.search(rf"\b{re.escape(str(key))}\b", text):
            continue
        words = declared | set(re.findall(r"self\.([A-Za-z_]\w*)", text))
        close = close_names(str(key), sorted(w for w in words if not w.startswith("_")), 3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise TaskDefinitionError(
            f"{cls.__name__} has no setting '{key}' (given by --use-case-arg, --use-case-config or "
            f"use_case_kwargs): it would be ignored{hint}",
            file=path,
            field=str(key),
        )


def load_use_case_file(
    path: str | Path, limit: int | None = None, config: UseCaseConfig | None = None
) -> tuple[UseCase, dict, dict]:
    """The file's use case (by the convention above), its ``gen_kwargs`` and the other keyword
    arguments ``generate`` gets (``batch_size``, ``runtime_overrides``)."""
    return _read_use_case_file(Path(path), config)(limit)


def file_tasks(path: str | Path, config: UseCaseConfig | None = None) -> list[Task]:
    """The task of a use case file (named ``<file stem>:<use case name>``); errors surface here,
    before any model loads."""
    from proctor.dialects.aisteer.usecase_spec import use_case_task

    path = Path(path)
    build = _read_use_case_file(path, config)
    built = build(None)
    return [use_case_task(f"{path.stem}:{built[0].name}", built, build, path)]


def options_config(options: AISteerOptions) -> UseCaseConfig:
    """The settings the command line gives (the use case dialect's options)."""
    given = command_line_config(options.use_case_data, options.use_case_metric, options.use_case_arg)
    config = (
        read_config(options.use_case_config, options.trust_task_code) if options.use_case_config else UseCaseConfig()
    )
    return given.over(config)


def run_use_cases(
    use_cases: UseCase | Sequence[UseCase],
    model: ModelRef = "smollm2",
    *,
    gen_kwargs: GenKwargs | None = None,
    output_dir: str | Path | None = None,
    runs_root: str | Path = "runs",
    model_options: Mapping[str, object] | None = None,
    cache: str | Path | None = None,
    chunk_size: int | None = None,
    progress: ProgressHook | None = None,
    update: bool = False,
    restart: bool = False,
    command: Sequence[str] | None = None,
    batch_size: int | None = None,
    runtime_overrides: RuntimeOverrides | None = None,
    model_roles: Mapping[str, ModelRef] | None = None,
) -> EvaluationResult:
    """Run use cases on a proctor model (or a ``--model`` string) into a run folder, through
    ``proctor.evaluate`` (the same run folder, resume, cache and results as any task).

    ``generate`` receives ``gen_kwargs``, ``runtime_overrides`` and ``batch_size`` (default: the
    model's batch size) as AISteer360's Benchmark passes them. Every model call the use cases make
    through ``batch_retry_generate`` goes through the engine with the folder's response store
    (``store.sqlite``, optionally backed by ``cache`` or $PROCTOR_CACHE): each chunk is committed as
    it returns, and running again on the same ``output_dir`` (after it finished, or after a kill)
    calls the model only for what is missing. ``model_roles`` ({role: model}, ``--model-role``): e.g. a ``judge``
    that replaces the one the use cases' ``LLMJudgeMetric``s name. Returns an ``EvaluationResult``.
    """
    from proctor.api import evaluate
    from proctor.dialects.aisteer.usecase_spec import object_build, use_case_task

    cases = [use_cases] if isinstance(use_cases, UseCase) else list(use_cases)
    call = {
        "batch_size": batch_size,
        "runtime_overrides": dict(runtime_overrides) if runtime_overrides is not None else None,
    }
    names = [case.name for case in cases]
    if len(set(names)) != len(names):
        names = [f"{name}#{k}" for k, name in enumerate(names)]
    tasks = []
    for name, case in zip(names, cases):
        build = object_build(case, dict(gen_kwargs or {}), call)
        tasks.append(use_case_task(name, build(None), build, None))
    return evaluate(
        tasks,
        model,
        output_dir=output_dir,
        runs_root=runs_root,
        model_options=model_options,
        command=command,
        cache=cache,
        chunk_size=chunk_size,
        progress=progress,
        update=update,
        restart=restart,
        model_roles=model_roles,
    )
