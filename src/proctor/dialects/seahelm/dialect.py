"""SEA-HELM task folders: ``seahelm_tasks/<competency>/<task>/config.yaml``, one proctor task per
task id and language (named ``<task id>/<lang>``), run by :class:`proctor.dialects.seahelm.task.SeaHelmTask`.

Options (``SeaHelmOptions``; API: ``dialect_options``): ``trust_task_code`` (load dataloader/metric/judge
classes from task folders), ``seahelm_data`` ({hub id: local path}), ``seahelm_judge`` (a model name/path or
Model; ``openai:<name>`` with ``seahelm_judge_options``: base_url, api_key_env and backend options),
``seahelm_runs`` (seeded runs, bootstrapped), ``is_base_model`` (None: models without a chat template),
``reasoning`` (extra thinking budget, thinking stripped), ``seahelm_strict`` (unavailable data is an
error rather than a skipped task), ``seahelm_max_tokens`` (a cap on every language's ``max_tokens``, for
quick runs), ``seahelm_judge_generation`` (overrides ``judge.judge_generation_kwargs``, e.g. max_tokens).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from pydantic import ValidationError

from proctor.core.errors import TaskDefinitionError
from proctor.core.task import Task
from proctor.core.task_spec import TaskSpec
from proctor.dialects.seahelm import checks, modalities
from proctor.dialects.seahelm import config as C
from proctor.dialects.seahelm.claims import in_tree
from proctor.dialects.seahelm.options import SeaHelmOptions, served_judge
from proctor.dialects.seahelm.rows import folder_lacks
from proctor.dialects.seahelm.task_options import SeaHelmTaskOptions

if TYPE_CHECKING:
    from proctor.dialects.seahelm.judge_step import JudgeSource

log = logging.getLogger(__name__)


def claims_config(path: Path) -> bool:
    """A ``config.yaml`` outside a ``seahelm_tasks`` folder shaped like SEA-HELM's (the declaration,
    ``proctor.dialects.seahelm.declaration``, claims every YAML file inside one)."""
    try:
        document = C._read(path)
    except TaskDefinitionError:
        return False
    return (
        isinstance(document, dict)
        and bool(document)
        and all(isinstance(v, dict) and "languages" in v for v in document.values())
    )


def _data_ref(
    reference: str | None, root: Path, config_file: Path, mapping: Mapping[str, str]
) -> tuple[str | None, str | None]:
    """(resolved path, problem)."""
    if not reference:
        return None, None
    if reference in mapping:
        path = Path(mapping[reference]).expanduser()
        return (
            (str(path.resolve()), None)
            if path.exists()
            else (None, f"--seahelm-data {reference}: {path} does not exist")
        )
    found = C.resolve_file(reference, root, config_file)
    if found is not None:
        return str(found.resolve()), None
    if C.looks_like_hub_id(reference):
        return (
            None,
            f"dataset not available offline: {reference} (map a local copy with --seahelm-data {reference}=PATH)",
        )
    return None, f"data file not found: {reference} (looked in {root} and {config_file.parent})"


def judge_source(options: SeaHelmOptions) -> JudgeSource | None:
    """The :class:`JudgeSource` of the ``judge`` role (``--model-role judge=``; default ``seahelm_judge``): a model
    object as given; a name with server settings (``seahelm_judge_options``: base_url, api_key_env, backend
    options) or a bare name, made on first use by the run's model roles."""
    from proctor.api.model_roles import active_roles
    from proctor.dialects.seahelm.judge_step import JudgeSource

    if options._judge_source is not None:
        return options._judge_source
    judge = active_roles().spec("judge", options.seahelm_judge)
    if judge is None:
        return None
    if not isinstance(judge, str):
        return JudgeSource(getattr(judge, "name", "judge"), model=judge)
    if served_judge(judge) or options.seahelm_judge_options:
        return JudgeSource(judge, settings=dict(options.seahelm_judge_options or {}))
    return JudgeSource(judge)


def with_judge(options: SeaHelmOptions) -> SeaHelmOptions:
    """The options with one judge source for every file loaded with them (a local judge loads once)."""
    source = judge_source(options)
    if source is None:
        return options
    shared = options.model_copy()
    shared._judge_source = source
    return shared


def with_given_path(options: SeaHelmOptions, given: Path) -> SeaHelmOptions:
    """The options a file found under ``given`` (the path the user named) is loaded with: whether the whole
    SEA-HELM tree was named decides the default task set."""
    if not in_tree(given):
        return options
    named = options.model_copy()
    named._given = str(given)
    return named


def _default_task_set(options: SeaHelmOptions) -> str | list[str] | None:
    """``seahelm_tasks`` as given; else SEA-HELM's default set when the whole tree (the ``seahelm_tasks`` folder
    or the repository holding it) was named, and every task of a sub-folder or file named on its own."""
    if options.seahelm_tasks:
        return options.seahelm_tasks
    given = options._given
    if given and (Path(given) / C.TASKS_FOLDER).is_dir() or given and Path(given).resolve().name == C.TASKS_FOLDER:
        return None
    return "all"


def load(
    path: Path, explicit: bool, options: SeaHelmOptions | None = None, notes: list[str] | None = None
) -> list[Task]:
    """Tasks of a SEA-HELM config; ``notes`` receives why task x language pairs were left out."""
    options = options or SeaHelmOptions()
    if path.name != "config.yaml":
        return []  # constants.yaml, task_config.yaml, reasoning_generation_config.yaml
    tree = C.load_tree(path)
    mapping = dict(options.seahelm_data or {})
    is_base = options.is_base_model
    skip_base = set((tree.constants or {}).get("base_models_skip_tasks") or [])
    reasoning = (
        dict(tree.reasoning or {"end_think_token": "</think>", "max_think_tokens": 20000}) if options.reasoning else {}
    )
    source = judge_source(options)
    judge = source.name if source is not None else None  # tasks name their judge only: no address or key in a hash
    if source is not None and source.settings is not None:
        # a judge with server settings is built (and its settings checked) at load, as the CLI reports it
        source.model()
    # task-folder code calling datasets.load_dataset(<id>) reads the same copies (offline_datasets.offline_copies)
    resources = {k: v for k, v in (("judge", source), ("offline_copies", mapping)) if v}
    selection, set_label = C.task_selection(tree, _default_task_set(options))
    tasks: list[Task] = []
    problems: list[str] = []
    excluded: list[str] = []  # left out by the task set: reported, never an error on their own
    for task_id, cfg in tree.tasks.items():
        if tree.files[task_id].resolve() != path.resolve():
            continue
        if is_base and task_id in skip_base:
            log.info("skipping %s: SEA-HELM does not run it on base models", task_id)
            continue
        languages = cfg.get("languages")
        if not isinstance(languages, dict) or not languages:
            raise TaskDefinitionError("a SEA-HELM task needs 'languages'", file=path, field=f"{task_id}.languages")
        batch_calls = (cfg.get("judge") or {}).get("batch_api_calls") if isinstance(cfg.get("judge"), dict) else None
        if not all(
            v is None or isinstance(v, bool) for v in (batch_calls if isinstance(batch_calls, list) else [batch_calls])
        ):
            raise TaskDefinitionError(
                f"batch_api_calls must be true or false, got {batch_calls!r}",
                file=path,
                field=f"{task_id}.judge.batch_api_calls",
            )
        checks.check_task(task_id, cfg, path)
        loader_ref = cfg.get("dataloader_file")
        builtin_loader = not loader_ref or str(loader_ref).replace("\\", "/").startswith("src/")
        loader_file = (
            None if builtin_loader else C.resolve_file(str(loader_ref), tree.root, path, f"{task_id}.dataloader_file")
        )
        unsupported = modalities.unsupported(cfg, loader_file)
        inputs = modalities.inputs(cfg, loader_file)
        for lang, lang_cfg in languages.items():
            checks.check_language(task_id, lang, lang_cfg, path)
            lang_cfg = dict(lang_cfg or {})
            if selection is not None and task_id not in selection.get(str(lang), ()):
                excluded.append(f"{task_id}/{lang}")
                continue
            if unsupported:
                problems.append(f"{task_id}/{lang}: {unsupported}")
                continue
            data, problem = _data_ref(lang_cfg.get("filepath"), tree.root, path, mapping)
            if problem is None and data is None and builtin_loader:
                problem = "no 'filepath'"  # a task-folder dataloader without one builds its rows itself (ONERULER)
            if problem is None and data is not None and builtin_loader:
                problem = folder_lacks(Path(data), "eval", str(lang))  # as the loader will read it, so ls and run agree
            if problem:
                problems.append(f"{task_id}/{lang}: {problem}")
                continue
            lang_cfg["filepath"] = data
            cap = options.seahelm_max_tokens
            if cap:  # a smoke-test budget: never more than the config asks for
                lang_cfg["max_tokens"] = min(int(lang_cfg.get("max_tokens") or cap), int(cap))
            example, example_problem = _data_ref(lang_cfg.get("example_filepath"), tree.root, path, mapping)
            if example_problem:
                log.warning("%s/%s: few-shot examples unavailable (%s)", task_id, lang, example_problem)
            lang_cfg["example_filepath"] = example
            resolved = {**cfg, "languages": {lang: lang_cfg}}
            meta = cfg.get("metadata") or {}
            changes = meta.get("changes") or cfg.get("changes") or {}
            group = cfg.get("aggregation_group") or task_id
            spec_data = {
                "name": f"{task_id}/{lang}",
                "kind": "generate",
                "version": str(meta.get("version", "0")),
                "changes": changes if isinstance(changes, dict) else {"notes": str(changes)},
                "description": f"SEA-HELM task '{cfg.get('name', task_id)}' "
                f"({cfg.get('competency', '?')}), language {lang}",
                "data": [{"path": data or str(loader_file or path)}],
                "metrics": ["seahelm_row_score"],
                "handler": {
                    "name": modalities.handler(cfg, loader_file),
                    "options": SeaHelmTaskOptions(
                        task_id=task_id,
                        lang=lang,
                        config=resolved,
                        root=str(tree.root),
                        config_file=str(path),
                        data=data,
                        trust_task_code=options.trust_task_code,
                        n_runs=options.seahelm_runs,
                        is_base_model=is_base,
                        reasoning=reasoning,
                        judge=judge,
                        judge_generation=options.seahelm_judge_generation or {},
                        # a loader that builds its rows (ONERULER) sizes them in the evaluated model's tokens
                        model_name=options.seahelm_model_name if data is None else None,
                    ),
                },
                "rollup": {
                    "metric": str(cfg.get("metric", "")),
                    "levels": {"language": str(lang), "competency": str(cfg.get("competency", "unknown"))},
                    "group": str(group),
                    "group_type": "micro" if str(cfg.get("aggregation_type", "")).startswith("micro") else "macro",
                },
            }
            try:
                spec = TaskSpec.model_validate(spec_data)
            except ValidationError as exc:
                error = exc.errors()[0]
                raise TaskDefinitionError(f"{error['msg']}", file=path, field=task_id) from None
            tasks.append(
                Task(spec=spec, file=path, base_dir=path.parent, dialect="seahelm", resources=resources, inputs=inputs)
            )
    if excluded:  # one line per file: a whole tree leaves out hundreds
        shown = ", ".join(excluded[:4]) + (f" and {len(excluded) - 4} more" if len(excluded) > 4 else "")
        excluded = [f"{shown}: not in {set_label} (--seahelm-tasks SET chooses; 'all' runs every task)"]
        log.info("%s: skipping %s", path, excluded[0])
    if problems and options.seahelm_strict:
        raise TaskDefinitionError(problems[0], file=path)
    by_reason: dict[str, list[str]] = {}
    for problem in problems:
        where, _, reason = problem.partition(": ")
        by_reason.setdefault(reason, []).append(where)
    for reason, names in by_reason.items():
        log.warning("%s: skipping %s: %s", path, ", ".join(names), reason)
    if notes is not None:
        notes.extend(f"SEA-HELM {path}: {p}" for p in problems + excluded)
    if explicit and not tasks and (problems or excluded):
        raise TaskDefinitionError("; ".join(problems + excluded), file=path)
    return tasks
