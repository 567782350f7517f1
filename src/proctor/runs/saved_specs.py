"""Each task's configuration as a run saved it (``tasks/<name>.yaml``), read back for the exports: a file
edited by hand or damaged is an error naming it and the field, before anything is written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

import yaml

from proctor.core.errors import ProctorError
from proctor.core.yaml_bounds import safe_load
from proctor.runs.documents import SavedSpec


def task_specs(run_dir: Path, names: Iterable[str]) -> dict[str, SavedSpec]:
    """Each task's spec as the run saved it (tasks/<name>.yaml)."""
    out = {}
    for name in names:
        path = run_dir / "tasks" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.yaml"
        if path.exists():
            out[name] = _saved_spec(path)
    return out


def _saved_spec(path: Path) -> SavedSpec:
    """The ``spec`` mapping of a task's saved configuration; a file that does not read is an error naming it."""
    try:
        saved = safe_load(path.read_bytes().decode("utf-8-sig")) or {}
    except OSError as exc:
        raise ProctorError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ProctorError(f"{path}: not UTF-8 text (offset {exc.start}); re-run the run to rebuild it") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise ProctorError(f"{path}{where}: not valid YAML; re-run the run to rebuild it") from None
    spec = saved.get("spec") if isinstance(saved, dict) else None
    if not isinstance(saved, dict) or not isinstance(spec, (dict, type(None))):
        raise ProctorError(
            f"{path}: not a task configuration (a mapping with its 'spec'); re-run the run to rebuild it"
        )
    for where, value, kinds, named in _read_fields(spec or {}):
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            raise ProctorError(
                f"{path}, field 'spec.{where}': {type(value).__name__} {json.dumps(value, default=str)[:40]}, "
                f"not {named} (edited by hand?); re-run the run to rebuild it"
            )
    return spec or {}


_NUMBER = (int, float)
# The fields of a saved spec (TaskSpec's, dumped as JSON) that this layout reads, with the types it reads them as.
_SPEC_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "description": ((str,), "text"),
    "target_delimiter": ((str,), "text"),
    "size_weighted_groups": ((list,), "a list of group names"),
    "data": ((list,), "a list of data sources"),
    "fewshot": ((dict,), "a mapping"),
    "generation": ((dict,), "a mapping"),
}
_NESTED_FIELDS: dict[str, dict[str, tuple[tuple[type, ...], str]]] = {
    "fewshot": {"count": ((int,), "a whole number"), "separator": ((str,), "text")},
    "generation": {
        "stop": ((list,), "a list of stop strings"),
        "max_tokens": ((int,), "a whole number"),
        "temperature": (_NUMBER, "a number"),
        "top_p": (_NUMBER, "a number"),
    },
}


def _read_fields(spec: SavedSpec) -> Iterable[tuple[str, object, tuple[type, ...], str]]:
    """(where, value, the types read, their name) for each field of ``spec`` the layout reads, outer ones first."""
    for name, (kinds, named) in _SPEC_FIELDS.items():
        yield name, spec.get(name), kinds, named
    for name, fields in _NESTED_FIELDS.items():
        inner = spec.get(name)
        for field, (kinds, named) in fields.items():
            yield f"{name}.{field}", inner.get(field) if isinstance(inner, dict) else None, kinds, named
    data = spec.get("data")
    if isinstance(data, list) and data:
        yield "data[0]", data[0], (dict,), "a data source (a mapping)"
