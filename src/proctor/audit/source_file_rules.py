"""Rules over which files and splits a task really evaluates: a training split, a glob that also reaches another
split's files, or files that are no data at all (a README, a licence, a script).

A native task (and GLM-130B's, which proctor reads as one) names its files; its rows carry the path each was read
from (``_path``, and ``_source``: the path below the glob's fixed part). A dialect that reads its data itself (lm-eval
builds its dataset through ``datasets``) says which split it evaluates through its handler's ``audit_split()``, an
``EvaluatedSplit``: the split's name, the task file's key naming it, the files it reads where the task names them,
and the other splits the task file names. Every other handler has no such method and is not asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit
from proctor.data.dataset_folders import SPLIT_RULE, STRAY_RULE
from proctor.data.sources import Sample
from proctor.data.split_names import split_of

_TRAIN = re.compile(r"(^|[^a-z])(train|training)([^a-z]|$)", re.IGNORECASE)


@dataclass(frozen=True)
class EvaluatedSplit:
    """The split a dialect's task evaluates, as its handler's ``audit_split()`` gives it."""

    split: str  # its name ('train')
    setting: str  # the task file's key naming it ('test_split'), or where it maps it to files
    files: Sequence[str] = ()  # the files it reads, where the task file names them (``data_files``)
    others: Mapping[str, Sequence[str]] = field(default_factory=dict)  # the other splits named, and their files
    file: str | None = None  # the task file
    line: int | None = None  # its line naming the split
    files_setting: str | None = None  # the task file's key mapping the split to its files ('data_files.test')
    files_line: int | None = None  # its line
    records: str | None = None  # the key inside the files whose records are read (lm-eval's dataset_kwargs.field)
    records_line: int | None = None  # its line


_HELD_OUT = ("test", "validation")


def _held_out(name: str, files: Sequence[str]) -> bool:
    return split_of(name) in _HELD_OUT or any(split_of(Path(f).name) in _HELD_OUT for f in files)


def _records_key(key: str | None, setting: str, file: str | None, line: int | None) -> Hit | None:
    """A JSON file's records picked by a key naming the training split (``records_key: train``, lm-eval's
    ``dataset_kwargs.field: train`` over ``{"train": [...], "test": [...]}``): the file names no split, the key
    does, and the rows scored as test rows are training rows."""
    if key is None or split_of(key) != "train":
        return None
    return Hit(
        f"{setting} '{key}' reads the records of the file's training split: the evaluated rows are training data a "
        "model may have been tuned on, scored as test rows; read the test (or validation) records, or say why in "
        "the task file",
        file=file,
        line=line,
        field=setting,
    )


def _dialect_split(split: EvaluatedSplit) -> Hit | None:
    """A dialect's evaluated split that is training data beside a held-out one (``test_split: train`` where the
    task file also names a test split), or a file named as a training split under another split's name
    (``data_files: {test: train.jsonl}``). A task evaluating a split named train because its dataset has no other
    (many of lm-eval's own) is left alone."""
    trained = [f for f in split.files if _TRAIN.search(Path(f).name)]
    if trained and not _TRAIN.search(split.split):
        by = split.files_setting or split.setting
        return Hit(
            f"the evaluated split '{split.split}' ({split.setting}) reads {Path(trained[0]).name}, a file named as a "
            f"training split ({by}): the evaluated rows are training data a model may have been tuned on; map the "
            "split to the test file",
            file=split.file,
            line=split.files_line or split.line,
            field=by,
        )
    if not (trained or _TRAIN.search(split.split)):
        return None
    held_out = [(name, files) for name, files in split.others.items() if name != split.split and _held_out(name, files)]
    if not held_out:
        return None
    name, files = held_out[0]
    where = f" ({Path(files[0]).name})" if files else ""
    read = f" ({Path(trained[0]).name})" if trained else ""
    return Hit(
        f"{split.setting} '{split.split}' evaluates the training split{read} while the task also names split "
        f"'{name}'{where}: the number is measured on rows a model may have been tuned on; evaluate '{name}'",
        file=split.file,
        line=split.line,
        field=split.setting,
    )


def _read_files(subject: AuditSubject) -> dict[str, tuple[str, Sample]]:
    """Each file the evaluated rows were read from -> (its path below the glob, its first sample), in order."""
    files: dict[str, tuple[str, Sample]] = {}
    for prepared in subject.samples:
        fields = prepared.sample.fields
        path = str(fields.get("_path") or prepared.sample.file or "")
        if path not in files:
            files[path] = (str(fields.get("_source") or Path(path).name), prepared.sample)
    return files


def _globbed(subject: AuditSubject) -> bool:
    """Whether the data's path is a pattern (a glob): its files are what the pattern reached, not files named."""
    source = subject.stats.get("source", "")
    return bool(source) and any(ch in source for ch in "*?[") and not source.startswith("hub:")


def training_split(subject: AuditSubject) -> Iterator[Hit]:
    """The evaluated rows come from a file named as a training split (scores on data a model may have been tuned
    on), a glob reads files of a held-out split beside the test files (``mmlu/*.csv`` reaching ``anatomy_dev.csv``
    and ``anatomy_val.csv``: their rows are scored as test rows), or a dialect evaluates its training split. A
    data folder whose own record or file names say it holds the training split the reader noticed
    (``data/dataset_folders.py``: a ``save_to_disk`` folder's state.json recording ``_split: train``)."""
    noticed = list(subject.source_hits.get(SPLIT_RULE, ()))
    yield from noticed
    if noticed:
        return
    get = getattr(subject.handler, "audit_split", None)
    if callable(get):
        evaluated = get()
        hit = _dialect_split(evaluated) if isinstance(evaluated, EvaluatedSplit) else None
        if hit is None and isinstance(evaluated, EvaluatedSplit):
            hit = _records_key(evaluated.records, "dataset_kwargs.field", evaluated.file, evaluated.records_line)
        if hit is not None:
            yield hit
    if not subject.templated:
        return
    for data in subject.spec.data[:1]:  # (of a list of sources, the first found is read)
        hit = _records_key(data.records_key, "records_key", subject.file, subject.line("data"))
        if hit is not None:
            yield hit
            return
    source = subject.stats.get("source", "")
    if source and not _globbed(subject) and not source.startswith("hub:"):
        paths = {source}  # one file: the reader named it
    else:
        paths = {str(s.sample.fields.get("_path") or s.sample.file or "") for s in subject.samples}
    named = sorted(p for p in paths if _TRAIN.search(Path(p).name))
    if named:
        yield Hit(
            f"the evaluated rows are read from {Path(named[0]).name}, named as a training split"
            + (f" ({len(named)} of {len(paths)} files)" if len(paths) > 1 else "")
            + ": evaluate a test or validation split, or say why in the task file",
            file=subject.file,
            line=subject.line("data"),
            field="data",
        )
    elif _globbed(subject):
        yield from _mixed_splits(subject)


def _mixed_splits(subject: AuditSubject) -> Iterator[Hit]:
    """A glob reaching the test files and a validation split's (by the names of the files or their folders below
    the glob): the validation rows are scored with the test rows as one number."""
    files = _read_files(subject)
    by_split: dict[str, list[str]] = {}
    for path, (below, _) in files.items():
        said = split_of(below)
        if said is not None:
            by_split.setdefault(said, []).append(path)
    if "test" not in by_split or "validation" not in by_split:
        return
    stray, tests = by_split["validation"][0], by_split["test"]
    below, sample = files[stray]
    more = len(by_split["validation"]) - 1
    test = Path(tests[0]).name + (f" and {len(tests) - 1} more" if len(tests) > 1 else "")
    yield subject.at_row(
        sample,
        f"the data's glob reads {below}, a validation or dev split's file"
        + (f" ({more} more such files)" if more > 1 else " (1 more such file)" if more else "")
        + f", beside the test file{'s' if len(tests) > 1 else ''} ({test}): their rows are scored as test rows, "
        "and few-shot examples are often drawn from them; narrow the glob to the test files",
        "data",
    )


# names of files that hold no rows of data (a dataset's documentation, licence, or the script that fetched it)
_NOT_DATA_NAMES = re.compile(
    r"^(readme|licen[cs]e|copying|notice|changelog|changes|citation|authors|contributing|manifest|makefile)\b",
    re.IGNORECASE,
)
_NOT_DATA_SUFFIXES = frozenset(
    {".md", ".rst", ".sh", ".bash", ".py", ".ipynb", ".bat", ".ps1", ".pl", ".js", ".html", ".cfg", ".ini", ".toml"}
)


def _not_data(name: str, suffixed: bool) -> bool:
    suffix = Path(name).suffix.lower()
    if _NOT_DATA_NAMES.match(name) or suffix in _NOT_DATA_SUFFIXES:
        return True
    return not suffix and suffixed  # no suffix, where most of the data's files have one


def stray_files(subject: AuditSubject) -> Iterator[Hit]:
    """A glob reaches files that are no data (README.md, LICENSE, get.sh, a .py script): a text or
    language-modelling task scores their text as documents, and a reader that parses them lends them rows."""
    yield from subject.source_hits.get(STRAY_RULE, ())  # a data folder's files its state.json does not list
    if not subject.templated or not _globbed(subject):
        return
    files = _read_files(subject)
    suffixed = 2 * sum(bool(Path(p).suffix) for p in files) > len(files)
    strays = [p for p in files if _not_data(Path(p).name, suffixed)]
    if not strays or len(strays) == len(files):
        return  # every file alike: the pattern names what the task means to read
    below, sample = files[strays[0]]
    others = ", ".join(files[p][0] for p in strays[1:4])
    yield subject.at_row(
        sample,
        f"the data's glob reads {below}, which is no data (a dataset's documentation, licence or script)"
        + (f", and {others}" if others else "")
        + ": its text is scored as rows of the task; narrow the glob to the data files (a suffix, '*.txt')",
        "data",
    )


RULES = (
    AuditRule(
        STRAY_RULE,
        "warning",
        "A glob reads files that are no data (README.md, LICENSE, a script): their text is scored as rows.",
        stray_files,
    ),
)
