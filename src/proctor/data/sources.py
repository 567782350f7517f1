"""Resolve a task's data sources into samples.

A task lists one or more sources; the first one available is used, so a task can read a local
copy when one is configured (``${PROCTOR_DATA}``) and the Hugging Face hub otherwise.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TypedDict

from proctor.core.audit import Hit
from proctor.core.data_spec import DataSpec
from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.special_files import refuse_special
from proctor.data.join_alignment import join_misalignment
from proctor.data.paths import check_inside, data_roots
from proctor.data.readers import FILE_KEY, ROW_KEY, Row, detect_format, read_rows
from proctor.data.variable_use import note_filled

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class GivenTexts:
    """A sample's texts as a dialect's handler made them (the task has no templates): the prompt, the
    target (a choice index or text, or references), the choices, the text a perplexity task scores."""

    prompt: str | None = None
    target: object = None
    choices: tuple[str, ...] | None = None
    text: str | None = None


@dataclass(frozen=True)
class Sample:
    """One evaluation item: its stable id, its fields, and where it came from; ``given``: its texts
    where a handler made them."""

    id: str
    fields: Mapping[str, Any]
    file: str | None = None
    row: int | None = None
    index: int = 0
    origin: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    given: GivenTexts | None = None


class SourceStats(TypedDict, total=False):
    """What ``load_samples`` reports about the source it read (results.json's data fields)."""

    source: str
    n_rows: int
    n_filtered: int
    fallback: str  # set only when an earlier source was unavailable
    files: dict[str, dict[str, Any]]  # local copies read, per split: paths, sha256 (capabilities.ReadsLocalFiles)


class SourceUnavailable(ProctorError):
    """This source cannot be used here (unset variable, missing file, offline hub)."""


def expand_variables(text: str, variables: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        value = variables.get(name, os.environ.get(name))
        if value is None:
            option = {"DATA_PATH": "--data-path", "PROCTOR_DATA": "--data-dir"}.get(name, f"--var {name}=...")
            raise SourceUnavailable(f"${{{name}}} is not set (set it with {option})")
        note_filled(name)
        return value

    return _VARIABLE.sub(substitute, text)


@dataclass(frozen=True)
class _Where:
    """Where a task's paths may lead (``data/paths.py``) and what an error names: the task file, the field."""

    roots: tuple[Path, ...]
    file: str | None
    field: str


def _resolve_path(
    text: str, base_dir: Path, variables: Mapping[str, str], where: _Where, key: str = "path"
) -> list[Path]:
    field = f"{where.field}.{key}"
    expanded = Path(expand_variables(text, variables)).expanduser()
    full = expanded if expanded.is_absolute() else base_dir / expanded
    if any(ch in str(full) for ch in "*?["):
        matches = sorted(Path(p) for p in globlib.glob(str(full), recursive=True))
        if not matches:
            check_inside(_glob_base(full), where.roots, written=text, file=where.file, field=field)
            raise SourceUnavailable(f"no file matches {full}")
        files = [check_inside(m, where.roots, written=text, file=where.file, field=field) for m in matches]
        for file in files:
            refuse_special(file, "data file", file=where.file, field=field)
        unique: dict[Path, Path] = {}  # a file reached again through a symlinked folder ("**" follows them): once
        for file in files:
            unique.setdefault(file.resolve(), file)
        return list(unique.values())
    check_inside(full, where.roots, written=text, file=where.file, field=field)
    if not full.exists():
        raise SourceUnavailable(f"data file not found: {full}")
    refuse_special(full, "data file", file=where.file, field=field)
    return [full]


def _read_hub(spec: DataSpec) -> list[Row]:
    try:
        import datasets  # noqa: F401
    except ImportError:
        raise SourceUnavailable(
            f"dataset not available offline: {spec.hub} (the hub needs: pip install 'proctor[hub]')"
        ) from None
    from datasets import load_dataset

    from proctor.data.hub import offline, unreachable

    reason = None if offline() else unreachable()  # offline: the datasets cache answers
    if reason is not None:  # fail now, not after the hub client's retries
        raise SourceUnavailable(
            f"dataset not available offline: {spec.hub} ({reason}; HF_DATASETS_OFFLINE=1 reads the datasets cache)"
        )
    try:
        dataset = load_dataset(spec.hub, spec.subset, split=spec.split or "test")
    except Exception as exc:  # network, auth, missing config: all mean 'not here'
        raise SourceUnavailable(f"dataset not available offline: {spec.hub} ({type(exc).__name__}: {exc})") from None
    return [{**row, ROW_KEY: i} for i, row in enumerate(dataset, start=1)]


SOURCE_KEY = "_source"  # the file's path below the fixed (glob-free) part of the data path


def _glob_base(pattern: Path) -> Path:
    parts = []
    for part in pattern.parts:
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    base = Path(*parts) if parts else Path(".")
    return base if base != pattern else pattern.parent


def _read_local(
    spec: DataSpec,
    base_dir: Path,
    variables: Mapping[str, str],
    where: _Where,
    noticed: dict[str, list[Hit]] | None = None,
) -> tuple[list[Row], str]:
    assert spec.path is not None  # load_samples reads a local source only where it names a path
    files = _resolve_path(spec.path, base_dir, variables, where)
    expanded = Path(expand_variables(spec.path, variables)).expanduser()
    glob_base = _glob_base(expanded if expanded.is_absolute() else base_dir / expanded)
    rows: list[Row] = []
    for file in files:
        _options_fit(spec, file, where)
        file_rows = read_rows(file, spec.format, spec.columns, spec.records_key, noticed)
        label = file.name if file.is_dir() else file.name.split(".")[0]
        try:
            relative = file.relative_to(glob_base).as_posix()
        except ValueError:
            relative = file.name
        for row in file_rows:
            row[FILE_KEY] = label
            row[SOURCE_KEY] = relative or file.name
            row.setdefault("_path", str(file))
        for join_text in spec.join:
            joined_files = _resolve_path(join_text, base_dir, variables, where, "join")
            if len(joined_files) != 1:
                raise TaskDefinitionError("a 'join' path must name exactly one file", file=join_text, field="join")
            extra = read_rows(joined_files[0], noticed=noticed)
            if len(extra) != len(file_rows):
                raise TaskDefinitionError(
                    f"has {len(extra)} rows but {file} has {len(file_rows)}; joined files must be row-aligned",
                    file=joined_files[0],
                    field="join",
                )
            if noticed is not None:
                misaligned = join_misalignment(file_rows, extra, file, joined_files[0])
                if misaligned is not None:
                    noticed.setdefault("data.join", []).append(misaligned)
            for row, addition in zip(file_rows, extra):
                for key, value in addition.items():
                    if key != ROW_KEY and key in row and row[key] != value:  # the data's own value would be lost
                        raise TaskDefinitionError(
                            f"the joined column '{key}' is {value!r:.40} here but {row[key]!r:.40} in {file.name} "
                            "(row-aligned files may share a column only where they agree)",
                            file=joined_files[0],
                            row=addition.get(ROW_KEY),
                            field=key,
                        )
                row.update({k: v for k, v in addition.items() if k != ROW_KEY})
        rows.extend(file_rows)
    return rows, str(files[0]) if len(files) == 1 else str(spec.path)


def _options_fit(spec: DataSpec, file: Path, where: _Where) -> None:
    """'columns' (CSV/TSV) or 'records_key' (JSON) on a file of another format would be ignored without a word."""
    fmt = spec.format if spec.format != "auto" else detect_format(file)
    for key, value, formats in (
        ("columns", spec.columns, ("csv", "tsv")),
        ("records_key", spec.records_key, ("json",)),
    ):
        if value is not None and fmt not in formats:
            raise TaskDefinitionError(
                f"'{key}' applies to {' and '.join(f.upper() for f in formats)} files, but {file.name} is read as "
                f"{fmt}: it would be ignored",
                file=where.file,
                field=f"{where.field}.{key}",
            )


def _apply_fields(spec: DataSpec, rows: list[Row], origin: str, task_file: str | None = None) -> list[Row]:
    """Add the computed fields, then drop rows the filter rejects."""
    from proctor.core.templates import compile_expression

    defined_in = task_file or origin  # a template error is the task file's, not the data's
    compiled = {
        name: compile_expression(expr, origin=defined_in, field=f"data.fields.{name}")
        for name, expr in spec.fields.items()
    }
    keep = compile_expression(spec.filter, origin=defined_in, field="data.filter") if spec.filter else None
    kept = []
    for row in rows:
        _no_column_named(spec, row, defined_in)
        for name, value in spec.constants.items():
            row[name] = value
        where = {"row_number": row.get(ROW_KEY), "file": row.get("_path", origin)}
        if keep is not None and not _kept(keep.evaluate(row, **where), row, origin):
            continue
        row.update({name: expr.evaluate(row, **where) for name, expr in compiled.items()})
        kept.append(row)
    return kept


def _no_column_named(spec: DataSpec, row: Row, task_file: str) -> None:
    """A computed field or constant named as one of the data's columns would silently replace (or, a constant,
    give way to) the data's own value: refused, naming the column."""
    for key, names in (("fields", spec.fields), ("constants", spec.constants)):
        for name in names:
            if name in row:
                where = f"{row.get('_path', 'the data')}, row {row.get(ROW_KEY)}"
                raise TaskDefinitionError(
                    f"the data already has a column '{name}' ({where}): the {key[:-1]} would silently take its place; "
                    f"give it another name (e.g. '{name}_2') and use that",
                    file=task_file,
                    field=f"data.{key}.{name}",
                )


_FALSE_TEXTS = {"false", "no", "off", "0", "n", "f", "none", "null"}


def _kept(value: object, row: Row, origin: str) -> bool:
    """The filter's value as a truth value; a text reading as false ('False' from a CSV) is true in a template,
    so it would keep the row: refused, naming the row."""
    if isinstance(value, str) and value.strip().lower() in _FALSE_TEXTS:
        raise TaskDefinitionError(
            f"the filter gave the text {value!r}, which counts as true (only an empty text is false); "
            f"compare it instead, e.g. \"{{{{ keep == 'True' }}}}\"",
            file=row.get("_path", origin),
            row=row.get(ROW_KEY),
            field="data.filter",
        )
    return bool(value)


def load_samples(
    sources: list[DataSpec],
    base_dir: Path,
    variables: Mapping[str, str] | None = None,
    *,
    task_file: str | None = None,
    stats: SourceStats | None = None,
    field: str = "data",
    noticed: dict[str, list[Hit]] | None = None,
) -> list[Sample]:
    """Read the first available source into samples with stable ids.

    ``stats`` (if given) receives the source used and how many rows its filter dropped. Paths stay in
    the task's folder (``base_dir``) or a folder the variables give; ``field`` names the task file's key
    in errors. ``noticed`` (if given) receives, by audit rule id, what reading showed (a join whose key column
    lists the rows in another order).
    """
    variables = variables or {}
    where = _Where(data_roots(base_dir, variables), task_file, field)
    reasons: list[str] = []
    for spec in sources:
        try:
            if spec.path is not None:
                try:
                    rows, origin = _read_local(spec, base_dir, variables, where, noticed)
                except SourceUnavailable:
                    if spec.hub is None:
                        raise
                    rows, origin = _read_hub(spec), f"hub:{spec.hub}"
            else:
                rows, origin = _read_hub(spec), f"hub:{spec.hub}"
        except SourceUnavailable as exc:
            reasons.append(str(exc))
            continue
        kept = _apply_fields(spec, rows, origin, task_file)
        if stats is not None:
            stats["source"], stats["n_rows"], stats["n_filtered"] = origin, len(rows), len(rows) - len(kept)
            if reasons:  # a fallback source was used: say so (results.json and a warning), never silently
                stats["fallback"] = f"read {origin} because an earlier source was unavailable: {'; '.join(reasons)}"
        return _to_samples(kept, spec, origin)
    if len(reasons) == 1:
        raise TaskDefinitionError(reasons[0], file=task_file, field=field)
    raise TaskDefinitionError("no data source is available: " + "; ".join(reasons), file=task_file, field=field)


def _not_an_id(value: object) -> str | None:
    """What an id value is when it is no id (null, NaN, a list or mapping), else None."""
    if value is None:
        return "null"
    if isinstance(value, float) and value != value:
        return "NaN"
    if not isinstance(value, str) and (hasattr(value, "__len__") or isinstance(value, (set, dict))):
        return f"a {type(value).__name__}"
    return None


def _to_samples(rows: list[Row], spec: DataSpec, origin: str) -> list[Sample]:
    stems = {row.get(FILE_KEY) for row in rows}
    multi_file = len(stems) > 1
    paths = {row.get("_path") for row in rows}
    # files that share a name (prompt_1/test.jsonl, prompt_2/test.jsonl) are told apart by their path
    file_key = SOURCE_KEY if len(paths) > len(stems) else FILE_KEY
    multi_file = multi_file or file_key == SOURCE_KEY
    samples: list[Sample] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        file = row.get("_path", origin)
        if spec.id is not None:
            if spec.id not in row:
                raise TaskDefinitionError(
                    f"the id column '{spec.id}' is missing", file=file, row=row.get(ROW_KEY), field=spec.id
                )
            value = row[spec.id]
            shown = _not_an_id(value)
            if shown is not None:
                raise TaskDefinitionError(  # str() would make the id 'None' / '[1, 2]': a silent, shared id
                    f"the id column '{spec.id}' holds {shown}, not a text or a number",
                    file=file,
                    row=row.get(ROW_KEY),
                    field=spec.id,
                )
            sample_id = str(value)
        elif multi_file:
            sample_id = f"{row.get(file_key)}/{row.get(ROW_KEY)}"
        else:
            sample_id = str(index)
        if sample_id in seen:
            raise TaskDefinitionError(
                f"duplicate sample id '{sample_id}'", file=file, row=row.get(ROW_KEY), field=spec.id or "id"
            )
        seen.add(sample_id)
        samples.append(Sample(id=sample_id, fields=row, file=file, row=row.get(ROW_KEY), index=index))
    return samples
