"""GLM-130B task YAMLs (``type: mul | gen | lm``), one proctor task per ``file-pattern`` group.

Keys may be written snake_case or kebab-case, as GLM's dataclass_wizard accepts. ``path`` is
relative to the data root (``--data-path``, GLM's DATA_PATH; or ``${DATA_PATH}`` in the
environment), else to the YAML's folder. Every data file is reported on its own (prompt variants)
and each group gets GLM's max / median / example-weighted average over its files.

A ``module:`` class written for GLM's ``evaluation`` package makes one task for the whole YAML, run by
``proctor.dialects.glm.handler`` (the class's own ``evaluate`` covers every group); a class written for proctor
(it imports ``proctor.kinds.custom``) is a ``task_class`` of each group's task.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from proctor.core.data_spec import DataSpec
from proctor.core.dialect import BaseOptions
from proctor.core.errors import TaskDefinitionError
from proctor.core.task import Task
from proctor.core.task_spec import ExtractionSpec, GenerationSpec, HandlerSpec, PerplexitySpec, TaskSpec
from proctor.core.user_code import CODE_KEY, TRUST, dotted_module_file
from proctor.core.yaml_lines import LineDict
from proctor.dialects.glm.config_fields import FIELDS, MINIMUMS, GLMConfig, as_upstream_reads, is_class_reference
from proctor.dialects.glm.task_options import GLMModuleOptions

log = logging.getLogger(__name__)

TYPES = {"mul": "multiple_choice", "gen": "generate", "lm": "perplexity"}
DEFAULT_METRICS = {"mul": ["Accuracy"], "gen": ["EM", "F1"], "lm": ["PPL"]}
_JSON_SUFFIXES = (".json", ".jsonl", ".json*", ".jsonl*")

_IGNORED = ("use_task_mask", "use_multitask_encoding", "unidirectional", "micro_batch_size")


def normalise(document: LineDict, path: Path) -> tuple[GLMConfig, dict[str, int]]:
    """snake_case keys and their YAML lines; unknown keys are warned about (GLM ignores them)."""
    config: GLMConfig = {}
    lines: dict[str, int] = {}
    for key, value in document.items():
        snake = str(key).replace("-", "_")
        line = document.line_of(key) if isinstance(document, LineDict) else None
        if snake in config:
            raise TaskDefinitionError(
                f"'{key}' is given twice (as snake_case and kebab-case)", file=path, line=line, field=str(key)
            )
        if snake not in FIELDS:
            log.warning("%s:%s: unknown GLM task key '%s' (ignored, as GLM does)", path, line, key)
            continue
        types, _ = FIELDS[snake]
        value = as_upstream_reads(value, types)
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise TaskDefinitionError(
                f"'{key}' must be {wanted}, got {type(value).__name__}: {value!r:.60}",
                file=path,
                line=line,
                field=str(key),
            )
        if isinstance(value, float) and not math.isfinite(value):  # a NaN length penalty ranks beams at random
            raise TaskDefinitionError(
                f"'{key}' must be a finite number, got {value}", file=path, line=line, field=str(key)
            )
        if snake in MINIMUMS and isinstance(value, int) and value < MINIMUMS[snake]:  # counts: ints by FIELDS
            raise TaskDefinitionError(
                f"'{key}' must be at least {MINIMUMS[snake]}, got {value}", file=path, line=line, field=str(key)
            )
        if snake == "module" and isinstance(value, str) and not is_class_reference(value):  # else None
            raise TaskDefinitionError(
                f"'module' names a class as 'package.module.Class' or 'file.py:Class', got {value!r}",
                file=path,
                line=line,
                field=str(key),
            )
        if snake in ("name", "path") and isinstance(value, str) and not value.strip():  # "": the whole disk globbed
            raise TaskDefinitionError(f"'{key}' must not be empty", file=path, line=line, field=str(key))
        if snake == "stop" and isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            raise TaskDefinitionError(
                f"'stop' is a list of non-empty strings, got {value!r:.60}", file=path, line=line, field=str(key)
            )
        config[snake] = value
        lines[snake] = line
    for key in ("name", "type", "path"):
        if key not in config:
            raise TaskDefinitionError(
                f"missing required field '{key}'", file=path, line=getattr(document, "line", None), field=key
            )
    for key, (_, default) in FIELDS.items():
        config.setdefault(key, default)
    if config["type"] not in TYPES and not (config["type"] == "other" and config["module"]):
        detail = " ('other' tasks are custom GLM code that proctor cannot run)" if config["type"] == "other" else ""
        raise TaskDefinitionError(
            f"unknown task type '{config['type']}'{detail}; use mul, gen or lm",
            file=path,
            line=lines.get("type"),
            field="type",
        )
    if config["unidirectional"] and not config["use_task_mask"]:
        raise TaskDefinitionError(
            "'unidirectional' requires 'use_task_mask' (as in GLM)",
            file=path,
            line=lines.get("unidirectional"),
            field="unidirectional",
        )
    if config["sampling_strategy"] not in ("BaseStrategy", "BeamSearchStrategy"):
        raise TaskDefinitionError(
            f"unknown sampling_strategy '{config['sampling_strategy']}'; use BaseStrategy or BeamSearchStrategy",
            file=path,
            line=lines.get("sampling_strategy"),
            field="sampling_strategy",
        )
    if isinstance(config["metrics"], str):
        config["metrics"] = [config["metrics"]]
    metrics = config["metrics"]
    if metrics is not None:
        odd = next((m for m in metrics if not isinstance(m, str) or not m.strip()), None)
        if odd is not None or not metrics:
            raise TaskDefinitionError(
                f"'metrics' lists metric names (e.g. [Accuracy]), got {odd!r:.60}"
                if metrics
                else "'metrics' is empty: GLM would compute nothing; leave the key out for the type's default "
                f"({', '.join(DEFAULT_METRICS.get(config['type'], ['Accuracy']))})",
                file=path,
                line=lines.get("metrics"),
                field="metrics",
            )
    pattern = config["file_pattern"]
    if isinstance(pattern, dict) and (
        not pattern or not all(isinstance(k, str) and isinstance(v, str) for k, v in pattern.items())
    ):
        raise TaskDefinitionError(
            "'file-pattern' groups map a group name to one glob",
            file=path,
            line=lines.get("file_pattern"),
            field="file-pattern",
        )
    globs = pattern if isinstance(pattern, dict) else {"": pattern}
    empty = [group for group, glob in globs.items() if not glob.strip()]
    if empty:
        raise TaskDefinitionError(
            f"'file-pattern'{f' group {empty[0]!r}' if empty[0] else ''} is empty: it would match the data "
            "folder itself, not a file; give a glob such as \"**/test.jsonl\"",
            file=path,
            line=lines.get("file_pattern"),
            field="file-pattern",
        )
    return config, lines


def _text_of(field: str, what: str, blank: bool = True) -> str:
    """A template giving the row's ``field`` when it is a text (``blank``: or an empty one), else an error naming
    the row: str() would make a list its Python spelling ("['a', 'b']"), and an empty text scores nothing. A
    missing field stays the usual "uses a field this row does not have"."""
    fits = f"{field} is string" if blank else f"({field} is string and {field}.strip())"
    kind = "a text" if blank else "a non-empty text"
    fail = f"_fail(\"'{field}' must be {kind} ({what})\", {field})"
    return f"{{{{ {field} if {field} is not defined or {fits} else {fail} }}}}"


# GLM's Accuracy compares the predicted index with ``label`` (pred == label): a text "1" or a list is never equal,
# so the row would count as a miss whatever the model answers; a number is used as the index (true/false refused).
_LABEL = (
    "{{ label if label is not defined or label is number and label is not boolean else "
    "_fail(\"'label' must be the index of the correct choice (a whole number)\", label) }}"
)


# GLM tokenizes ``targets_pretokenized`` (a text or a list of texts): a number, a mapping or a list holding one fails
# there upstream, while proctor would compare the answer with its Python spelling ("5"): an error naming the row.
_TARGETS = (
    "{{ targets_pretokenized if targets_pretokenized is not defined or targets_pretokenized is string or "
    "(targets_pretokenized is sequence and targets_pretokenized is not mapping and "
    "targets_pretokenized | reject('string') | list | length == 0) else "
    "_fail(\"'targets_pretokenized' must be a text or a list of texts (the reference answers)\", "
    "targets_pretokenized) }}"
)


def _sources(config: GLMConfig, pattern: str, yaml_dir: Path, fmt: Literal["text", "jsonl"]) -> list[DataSpec]:
    relative = f"{config['path'].rstrip('/')}/{pattern}"
    if Path(config["path"]).expanduser().is_absolute():
        return [DataSpec(path=relative, format=fmt)]
    return [
        DataSpec(path="${DATA_PATH}/" + relative, format=fmt),
        DataSpec(path=str(yaml_dir.resolve() / relative), format=fmt),
    ]


def _spec_for_group(config: GLMConfig, name: str, group: str, pattern: str, yaml_dir: Path) -> dict[str, object]:
    """The group's task, as the mapping ``TaskSpec.model_validate`` reads."""
    kind = TYPES[config["type"]]
    raw_text = config["type"] == "lm" and not pattern.endswith(_JSON_SUFFIXES)
    fmt: Literal["text", "jsonl"] = "text" if raw_text else "jsonl"
    spec: dict[str, object] = {
        "name": name,
        "kind": kind,
        "description": f"GLM-130B task '{config['name']}', group '{group}' ({pattern})",
        "data": _sources(config, pattern, yaml_dir, fmt),
        "metrics": config["metrics"] if config["metrics"] is not None else DEFAULT_METRICS[config["type"]],
        "breakdown": ["_source"],
        **({"task_class": config["module"]} if config["module"] else {}),
        "task_options": {
            "glm_group": group,
            "micro_batch_size": config["micro_batch_size"],
            **{key: config[key] for key in _IGNORED if key != "micro_batch_size"},
        },
    }
    if kind == "multiple_choice":
        spec.update(
            prompt=_text_of("inputs_pretokenized", "the question or context the choices continue"),
            choices="{{ choices_pretokenized }}",
            target=_LABEL,
            max_length=config["max_seq_length"],
        )
    elif kind == "generate":
        beam = config["sampling_strategy"] == "BeamSearchStrategy"
        stop = config["stop"] or []
        spec.update(
            prompt=_text_of("inputs_pretokenized", "the input the model continues"),
            target=_TARGETS,
            no_reference="scored",  # GLM scores an item without targets 0 and counts it (its EM/F1: 0 if none)
            max_length=config["max_seq_length"],
            extraction=ExtractionSpec(strip=True),
            generation=GenerationSpec(
                max_tokens=config["max_gen_length"],
                stop=[stop] if isinstance(stop, str) else stop,
                num_beams=config["num_beams"] if beam else 1,
                length_penalty=float(config["length_penalty"]) if beam else 1.0,
                no_repeat_ngram_size=config["no_repeat_ngram_size"] if beam else 0,
                min_tokens=config["min_gen_length"] if beam else 0,
            ),
        )
    else:
        window = config["max_seq_length"] - 1
        stride = min(config["generation_length"], window)
        spec.update(
            text=_text_of("text", "the file's text to score", blank=False)
            if raw_text
            else _text_of("text_pretokenized", "the text to score", blank=False),
            perplexity=PerplexitySpec(window=window, stride=stride),
        )
    return spec


def _consent(options: BaseOptions | None) -> dict[str, object]:
    """The resources of a task whose ``module:`` names code: the key's name, and the user's consent."""
    return {CODE_KEY: "module", **({TRUST: True} if options is not None and options.trust_task_code else {})}


def _module_task(
    config: GLMConfig, lines: dict[str, int], path: Path, document: object, options: BaseOptions | None
) -> Task:
    """A ``module:`` task class: one proctor task for the whole YAML (the class's ``evaluate`` covers
    every group, and its report hooks see all of them), run by ``proctor.dialects.glm.handler``."""
    relative = config["path"].rstrip("/")
    roots = (
        [relative]
        if Path(relative).expanduser().is_absolute()
        else ["${DATA_PATH}/" + relative, str(path.parent.resolve() / relative)]
    )
    spec = TaskSpec.model_validate(
        {
            "name": config["name"],
            "kind": "generate",
            "description": f"GLM-130B task '{config['name']}' (type {config['type']}), task class {config['module']}",
            "data": [DataSpec(path=root) for root in roots],
            "handler": HandlerSpec(
                name="glm.module",
                options=GLMModuleOptions(
                    module=config["module"],
                    yaml=str(path.resolve()),
                    roots=roots,
                    config={k: v for k, v in config.items() if k != "stop"},
                ),
            ),
        }
    )
    return Task(
        spec=spec,
        file=path,
        base_dir=path.parent,
        dialect="glm",
        line=getattr(document, "line", None),
        resources=_consent(options),
    )


def _proctor_class(reference: str, yaml_dir: Path) -> bool:
    """Whether ``module:`` names a class written for proctor (``proctor.kinds.custom``) rather than for
    GLM's ``evaluation`` package: read (not run) from the file it points to."""
    if ":" in reference:
        file = Path(reference.rpartition(":")[0]).expanduser()
        files = [file if file.is_absolute() else yaml_dir / file]
    else:
        try:
            found = dotted_module_file(reference.rpartition(".")[0], yaml_dir, field="module")
        except TaskDefinitionError:
            return False  # outside the task's folder: refused when the task is prepared
        files = [found[1]] if found else []
    for file in files:
        if file.is_file():
            text = file.read_text(encoding="utf-8", errors="replace")
            return "proctor.tasks.custom" in text or "proctor.kinds.custom" in text
    return False


def load(document: LineDict, path: Path, options: BaseOptions | None = None) -> list[Task]:
    config, lines = normalise(document, path)
    proctor_class = bool(config["module"]) and _proctor_class(config["module"], path.parent)
    if config["module"] and not proctor_class:
        return [_module_task(config, lines, path, document, options)]
    if config["type"] not in TYPES:
        raise TaskDefinitionError(
            "'type: other' needs a GLM task class (module:)", file=path, line=lines.get("type"), field="type"
        )
    pattern = config["file_pattern"]
    groups = (
        [("all", pattern, config["name"])]
        if isinstance(pattern, str)
        else [(group, glob, f"{config['name']}/{group}") for group, glob in pattern.items()]
    )
    task_lines = {
        proctor: lines[glm] for glm, proctor in (("metrics", "metrics"), ("module", "task_class")) if glm in lines
    }
    data_line = lines.get("file_pattern", lines.get("path"))  # where the files read are named
    if data_line is not None:
        task_lines["data"] = data_line
    tasks = []
    for group, glob, name in groups:
        raw = _spec_for_group(config, name, group, glob, path.parent)
        try:
            spec = TaskSpec.model_validate(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(x) for x in error["loc"])
            raise TaskDefinitionError(
                f"{error['msg']} (from the GLM settings)", file=path, line=getattr(document, "line", None), field=field
            ) from None
        code = _consent(options) if config["module"] else {}
        tasks.append(
            Task(
                spec=spec,
                file=path,
                base_dir=path.parent,
                dialect="glm",
                line=getattr(document, "line", None),
                # and GLM's own generation keys, which the audit's generation rules name
                lines={**task_lines, **{key: lines[key] for key in ("stop", "max_gen_length") if key in lines}},
                resources=code,
            )
        )
    return tasks
