"""The public Python API (``from proctor import evaluate``): ``load_tasks``, ``task_hash``, ``evaluate`` and
``run_evaluation``, which runs a ``RunConfig`` (``api/evaluation.py``); the checks of a run's options before
anything loads and what run.json records of them are ``api/run_options.py``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from proctor.api.evaluation import run_evaluation as run_evaluation
from proctor.api.evaluation_result import EvaluationResult as EvaluationResult
from proctor.api.run_options import check_run_options as check_run_options
from proctor.core.errors import ProctorError
from proctor.core.run_overrides import RunOverrides, parse_limit
from proctor.core.task import Task
from proctor.engine.discovery import collect_tasks
from proctor.engine.prepare import prepare_task
from proctor.engine.run_config import (
    ModelConfig,
    ModelRef,
    OutputOptions,
    PrepareOptions,
    RolesConfig,
    RowLimit,
    RunConfig,
)
from proctor.engine.runner import ProgressHook
from proctor.engine.sample_selection import parse_sample_ids

if TYPE_CHECKING:  # Ray's replicas: imported where a run uses them
    from proctor.engine.distributed import ClusterOptions


def load_tasks(
    paths: Iterable[str | Path],
    select: Iterable[str] | None = None,
    options: Mapping[str, object] | None = None,
    problems: list[dict[str, str]] | None = None,
    notes: list[str] | None = None,
) -> list[Task]:
    """Tasks found in files and folders (recursively), optionally filtered by name globs.

    ``options`` go to the dialect plug-ins (each reads its own keys, e.g. ``probsem_temp``, ``seahelm_data``).
    ``problems``: a list that receives ``{"file", "error"}`` for each file in a folder that could not be
    loaded, instead of the first such error stopping the load; ``notes``: a list that receives why a
    dialect left tasks out (e.g. a SEA-HELM language without data).
    """
    return collect_tasks(paths, select=select, options=options, problems=problems, notes=notes)


def task_hash(task: Task, variables: Mapping[str, str] | None = None) -> str:
    """The content hash of a task as a run folder's ``run.json`` records it (spec, samples, prompts)."""
    return prepare_task(task, dict(variables or {})).content_hash


def _variables(variables: Mapping[str, object] | None) -> dict[str, str]:
    """``variables`` as text, as ``--var`` gives them: a number or a path is written as it reads; a value of another
    kind (a list, None) fills no ``${NAME}`` and is refused naming it."""
    out: dict[str, str] = {}
    for name, value in (variables or {}).items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float, Path)):
            raise ProctorError(
                f"variables['{name}'] is {type(value).__name__} {value!r:.60}: a variable fills ${{{name}}} in task "
                "files with text; give a string (or a number or a path)"
            )
        out[str(name)] = str(value)
    return out


def evaluate(
    tasks: Task | str | Path | Sequence[Task] | Iterable[str | Path],
    model: ModelRef = "smollm2",
    *,
    output_dir: str | Path | None = None,
    runs_root: str | Path = "runs",
    limit: int | float | None = None,
    limit_per_part: bool = False,
    select: Iterable[str] | None = None,
    variables: Mapping[str, object] | None = None,
    data_path: str | Path | None = None,
    dialect_options: Mapping[str, object] | None = None,
    chat: bool | None = None,
    model_options: Mapping[str, object] | None = None,
    progress: ProgressHook | None = None,
    command: Sequence[str] | None = None,
    cache: str | Path | None = None,
    chunk_size: int | None = None,
    update: bool = False,
    restart: bool = False,
    export: bool = True,
    workers: int | None = None,
    cluster: ClusterOptions | Mapping[str, object] | None = None,
    mc_format: str = "auto",
    mc_shuffle_seed: int | None = None,
    overrides: RunOverrides | None = None,
    sample_ids: Iterable[str] | None = None,
    predict_only: bool = False,
    model_roles: Mapping[str, ModelRef] | None = None,
) -> EvaluationResult:
    """Run tasks on a model and write a run folder; returns the results.

    Every task is prepared (data read, prompts rendered) before the model loads, so bad input
    fails fast. Each model response is stored (``store.sqlite``) as soon as its chunk of
    ``chunk_size`` requests finishes; running again with the same ``output_dir`` continues where
    an interrupted run stopped. A folder started with other tasks, model or options is refused
    unless ``update`` (accept the changes, reuse what still matches) or ``restart`` is given.
    ``cache`` (or $PROCTOR_CACHE) names a response cache shared across runs.
    ``mc_format`` picks how multiple-choice tasks run: "loglikelihood", "generate" (lettered
    options, the letter read from a generated reply; ``mc_shuffle_seed`` shuffles the options) or
    "auto" (generate when the model cannot score log-likelihoods, e.g. a chat-only API).
    ``data_path`` is GLM-130B's DATA_PATH (sets ``${DATA_PATH}``); ``dialect_options`` see ``load_tasks``.
    ``workers`` > 1 (or a ``cluster`` with an address) runs that many replicas of a model named by
    string on Ray (``engine.distributed.ClusterOptions``), with the same numbers as one process.
    ``model`` may also be a ``SteeringPipeline``: tasks then run on the steered model (``as_model()``).
    ``limit`` is a count or a fraction (0 < limit < 1) of each task's rows; with ``limit_per_part``, of
    the rows of each part of a task's first ``breakdown`` field (e.g. each MMLU subject; a task without
    a breakdown, or one whose class reads its own rows, is limited as a whole). ``overrides``
    (``core.run_overrides.RunOverrides``: few-shot count, generation settings, seed, epochs, system
    prompt, few-shot as turns, sample logging) change every task before it is prepared; they are
    recorded in results.json and run.json. ``sample_ids`` (ids or globs; not with ``limit``) runs only those
    samples of each task (``--sample-id``); ``predict_only`` keeps the model's answers and computes no metric
    (``--predict-only``: the same ``output_dir`` run again without it scores the stored answers).
    ``model_roles`` ({role: model spec or object}, ``--model-role``) replaces the model the task files name for a
    role: ``judge``, ``metric`` or ``steer_base`` (``api/model_roles.py``); results.json's ``roles`` says which
    model each role used.

    The keywords build one ``engine.run_config.RunConfig`` (the limit parsed as it is built), run by ``run_evaluation``
    as ``proctor run``'s is.
    """
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1):
        raise ProctorError(f"chunk_size takes a positive count of requests per call, got {chunk_size!r}")
    if model_options and not isinstance(model, (str, Path)):  # a built model takes no options: they would be recorded
        raise ProctorError(
            f"model_options ({', '.join(map(str, model_options))}) apply to a model named by a string, which proctor "
            f"builds; {type(model).__name__} is built already: give them when building it"
        )
    ids = (sample_ids,) if isinstance(sample_ids, str) else tuple(sample_ids or ())  # "a,b": one list, not its letters
    # one path or one name given alone is that one, not its letters
    task_list = (tasks,) if isinstance(tasks, (str, Path, Task)) else tuple(tasks)
    selected = None if select is None else (select,) if isinstance(select, str) else tuple(select)
    config = RunConfig(
        tasks=task_list,
        model=ModelConfig(model, dict(model_options or {}), workers, cluster),
        select=selected,
        dialect_options=dialect_options,
        limit=RowLimit(parse_limit(limit), limit_per_part, parse_sample_ids(ids)),
        prepare=PrepareOptions(
            _variables(variables),
            None if data_path is None else Path(data_path),
            chat,
            mc_format,
            mc_shuffle_seed,
            overrides or RunOverrides(),
        ),
        output=OutputOptions(
            None if output_dir is None else Path(output_dir),
            Path(runs_root),
            cache,
            chunk_size,
            update,
            restart,
            export,
            None if command is None else tuple(command),
        ),
        predict_only=predict_only,
        roles=RolesConfig(dict(model_roles or {})),
    )
    return run_evaluation(config, progress)
