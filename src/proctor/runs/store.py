"""The response store: every finished model response, on disk as soon as its batch completes.

One SQLite database in WAL mode. A row is keyed by the hash of the model fingerprint and the
hash of the request (its type and every field), so a stored answer is only ever read back for
exactly the same model and exactly the same request. Each batch is one transaction: a process
killed at any point (even mid-write) leaves the database with every earlier batch intact and
none of the batch in flight. The same class serves the per-run store (``store.sqlite`` in the
run folder) and the opt-in cache shared across runs (``--cache DIR``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sqlite3
import time
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, TypeVar, Union

from proctor.core.errors import ProctorError
from proctor.core.model_requests import (
    LATER_RESULT_FIELDS,
    LATER_SETTINGS,
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    # what ``put_many`` writes: (request hash, request, result), and optionally the request's fields as stored
    # (``request_key``'s second part, so that they are not spelled again)
    StoreItem = Union[
        tuple[str, DataclassInstance, DataclassInstance], tuple[str, DataclassInstance, DataclassInstance, str]
    ]

Result = TypeVar("Result", bound="DataclassInstance")  # a model's answer (a result dataclass), as_stored keeps its type

SCHEMA_VERSION = 1
CACHE_ENV = "PROCTOR_CACHE"
STORE_FILE = "store.sqlite"
CACHE_FILE = "cache.sqlite"
WAL_CHECKPOINT_PAGES = 16384  # 64 MB of 4 KB pages

_RESULT_TYPES = {
    LoglikelihoodRequest: LoglikelihoodResult,
    GenerateRequest: GenerateResult,
    RollingLoglikelihoodRequest: RollingLoglikelihoodResult,
}
_COLUMNS = ("model", "request", "kind", "request_json", "result_json", "created")  # the table 'responses'
_BY_NAME: dict[str, type[DataclassInstance]] = {cls.__name__: cls for cls in (*_RESULT_TYPES, *_RESULT_TYPES.values())}


# json.dumps with these options builds an encoder per call; the store spells two values per request
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def canonical_json(value: object) -> str:
    """One spelling per value: sorted keys, no spaces, floats as Python's shortest repr."""
    return _CANONICAL.encode(value)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _plain(obj: DataclassInstance) -> dict[str, object]:
    cls: type = type(obj)
    out = {name: getattr(obj, name) for name in _field_names(cls)}
    if "images" in out:  # a request's images enter its identity by content digest; none: the text-only hash
        images = out.pop("images")
        if images:
            out["images"] = [image.digest for image in images]
    if isinstance(obj, GenerateRequest):
        for name, default in LATER_SETTINGS.items():
            if out.get(name) == default:
                del out[name]
    elif isinstance(obj, (LoglikelihoodResult, GenerateResult)):
        for name, default in LATER_RESULT_FIELDS.items():
            if name in out and out[name] == default:  # a field one result type has and another not (reasoning)
                del out[name]
    return out


def fingerprint_hash(fingerprint: Mapping[str, object]) -> str:
    return hashlib.sha256(canonical_json(dict(fingerprint)).encode()).hexdigest()[:32]


def request_hash(request: DataclassInstance) -> str:
    """Hash of the request type and every one of its fields (generation settings included)."""
    return request_key(request)[0]


def request_key(request: DataclassInstance) -> tuple[str, str]:
    """(``request_hash``, the request's fields as stored): the fields' JSON made once for both. The
    hashed text is ``canonical_json({"type": ..., "fields": ...})``, spelled out: sorted keys put
    "fields" first, and a type's name is a plain identifier (no escapes)."""
    fields = canonical_json(_plain(request))
    payload = '{"fields":' + fields + ',"type":"' + type(request).__name__ + '"}'
    return hashlib.sha256(payload.encode()).hexdigest(), fields


def encode_result(result: DataclassInstance) -> str:
    return canonical_json({"type": type(result).__name__, "fields": _plain(result)})


@functools.cache
def _tuple_fields(cls: type) -> frozenset[str]:
    """The fields of ``cls`` declared as tuples (JSON gives them back as lists)."""
    return frozenset(name for name, hint in typing.get_type_hints(cls).items() if "tuple" in str(hint))


def as_stored(result: Result) -> Result:
    """``result`` as the store gives it back: tuple fields as tuples (a backend may answer with lists).
    Everything else survives JSON as it was (floats by their shortest repr, which reads back exactly)."""
    cls: type = type(result)
    lists = {name: tuple(value) for name in _tuple_fields(cls) if isinstance(value := getattr(result, name), list)}
    return dataclasses.replace(result, **lists) if lists else result


def _fits(hint: Any, value: object) -> bool:
    """Whether a stored JSON value has the type a result field declares (a number where a number belongs)."""
    if typing.get_origin(hint) is tuple:
        return isinstance(value, list) and all(_fits(typing.get_args(hint)[0], v) for v in value)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_fits(arg, value) for arg in typing.get_args(hint))
    if hint in (int, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint)


def decode_result(text: str) -> DataclassInstance:
    """A stored answer; one that is not a result of a known type, its fields typed as the type declares, is a
    ``ValueError`` saying what is wrong (the store says which file and request)."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("fields"), dict):
        raise ValueError("not an object with 'type' and 'fields'")
    cls = _BY_NAME.get(str(data.get("type")))
    if cls is None:
        raise ValueError(f"unknown result type {data.get('type')!r}")
    hints = typing.get_type_hints(cls)
    fields = data["fields"]
    for name, value in fields.items():
        if name not in hints:
            raise ValueError(f"{cls.__name__} has no field '{name}'")
        if not _fits(hints[name], value):
            raise ValueError(f"field '{name}' of a {cls.__name__} holds {value!r}")
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in fields and f.default is dataclasses.MISSING]
    if missing:
        raise ValueError(f"a {cls.__name__} without its field(s) {', '.join(repr(m) for m in missing)}")
    tuples = _tuple_fields(cls)
    for name in tuples.intersection(fields):
        fields[name] = tuple(fields[name])
    return cls(**fields)


class ResponseStore:
    """Responses keyed by (model fingerprint hash, request hash), one transaction per batch."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed batch survives a killed process; only an OS crash or
            # power cut can lose the last transactions, never corrupt the database.
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints (WAL pages copied into the database, with an fsync each) every 64 MB of WAL
            # rather than SQLite's 4 MB: a page rewritten by many batches is copied once, and the
            # checkpoints were a third of the writing time. Committed batches are in the WAL either way.
            self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS responses (
                    model TEXT NOT NULL,
                    request TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    request_json TEXT NOT NULL,
                    result_json TEXT NOT NULL,
                    created REAL NOT NULL,
                    PRIMARY KEY (model, request)
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS models (model TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
                """
            )
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            version = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0]
            columns = tuple(row[1] for row in self._db.execute("PRAGMA table_info(responses)"))
        except sqlite3.DatabaseError as exc:
            raise ProctorError(f"cannot open the response store {self.path}: {exc}{self._resume_hint(exc)}") from None
        if str(version).strip() != str(SCHEMA_VERSION):
            raise ProctorError(f"{self.path} has store schema {version!r}; this proctor reads {SCHEMA_VERSION}")
        if columns != _COLUMNS:
            raise ProctorError(
                f"{self.path} is not a proctor response store: its table 'responses' has the columns "
                f"{', '.join(columns)}, not {', '.join(_COLUMNS)}"
            )

    def check(self) -> None:
        """Read the whole store once: a damaged page or a stored answer that does not read is an error now, before
        a model loads and before a resumed run replaces the folder's results, not halfway through the run."""
        try:
            problems = [row[0] for row in self._db.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                raise ProctorError(f"the response store {self.path} is damaged: {'; '.join(problems)}")
            for key, text in self._db.execute("SELECT request, result_json FROM responses"):
                self._decode(key, text)
        except sqlite3.DatabaseError as exc:
            raise ProctorError(f"the response store {self.path} is damaged: {exc}") from None

    def _decode(self, key: str, text: str) -> DataclassInstance:
        try:
            return decode_result(text)
        except (ValueError, TypeError) as exc:  # json's errors are ValueErrors
            raise ProctorError(
                f"the response store {self.path}, request {key}: the stored answer does not read ({exc})"
            ) from None

    def register_model(self, fingerprint: Mapping[str, object]) -> str:
        key = fingerprint_hash(fingerprint)
        self._db.execute("INSERT OR IGNORE INTO models VALUES (?, ?)", (key, canonical_json(dict(fingerprint))))
        return key

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, DataclassInstance]:
        """Stored results for those request hashes (missing ones left out)."""
        found: dict[str, DataclassInstance] = {}
        step = 500
        for start in range(0, len(keys), step):
            part = list(keys[start : start + step])
            marks = ",".join("?" * len(part))
            try:
                rows = self._db.execute(
                    f"SELECT request, result_json FROM responses WHERE model=? AND request IN ({marks})",
                    [model, *part],
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                raise ProctorError(f"cannot read the response store {self.path}: {exc}") from None
            for key, text in rows:
                found[key] = self._decode(key, text)
        return found

    def put_many(self, model: str, items: Iterable[StoreItem]) -> None:
        """Write (request hash, request, result) triples in one transaction: all or none land. An item
        may carry the request's stored fields as a fourth element (``request_key``'s), not made again."""
        now = time.time()
        rows = [
            (
                model,
                key,
                type(request).__name__,
                fields[0] if fields else canonical_json(_plain(request)),
                encode_result(result),
                now,
            )
            for key, request, result, *fields in items
        ]
        if not rows:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise ProctorError(
                f"cannot write to the response store {self.path}: {exc}{self._resume_hint(exc)}"
            ) from None

    def _resume_hint(self, exc: sqlite3.Error) -> str:
        """For a store the disk will not take more of (full, read-only): the batches committed before are kept,
        and how to go on from them."""
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+; SQLITE_FULL is 13, SQLITE_READONLY 8
        io_error = (code or 0) & 0xFF == 10 or "disk I/O error" in str(exc)  # SQLITE_IOERR, extended codes too
        if code not in (13, 8) and "full" not in str(exc) and not io_error:
            return ""
        why = " (a full disk, a file-size limit such as ulimit -f, or a failing disk)" if io_error else ""
        if self.path.name == STORE_FILE:  # a run folder's own store
            rerun = f"run the same command with --output {self.path.parent} to resume"
        else:  # the shared --cache
            rerun = "run the same command again to go on from them"
        return (
            f"{why}. The answers stored before are kept in {self.path}: make room (or make its folder writable) and "
            f"{rerun}."
        )

    def count(self, model: str | None = None) -> int:
        if model is None:
            row = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        else:
            row = self._db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()
        number: int = row[0]  # COUNT(*) gives one integer row
        return number

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> "ResponseStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def saved_answers(path: Path) -> int:
    """How many answers the store at ``path`` holds (0 where there is none or it does not read): what an
    interrupted run reports as kept. Read-only, so it neither creates nor locks the file."""
    if not path.is_file():
        return 0
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return 0
    try:
        number: int = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return number
    except sqlite3.Error:
        return 0
    finally:
        db.close()


def cache_path(cache: str | Path | None) -> Path | None:
    """The shared cache database: ``cache`` if given, else $PROCTOR_CACHE, else none (opt-in)."""
    where = cache if cache is not None else os.environ.get(CACHE_ENV) or None
    if where is None or str(where) == "":
        return None
    folder = Path(where).expanduser()
    if folder.suffix == ".sqlite":
        return folder
    if folder.exists() and not folder.is_dir():
        raise ProctorError(f"--cache {folder}: is a file, not a folder (name a folder, or a .sqlite file)")
    return folder / CACHE_FILE


class Lookup:
    """The run store, backed by an optional shared cache: reads run store then cache; writes both."""

    def __init__(self, run_store: ResponseStore, cache: ResponseStore | None = None) -> None:
        self.run_store = run_store
        self.cache = cache
        self.model = ""
        self.hits_run = 0
        self.hits_cache = 0
        self.computed = 0

    def use_model(self, fingerprint: Mapping[str, object]) -> None:
        self.model = self.run_store.register_model(fingerprint)
        if self.cache is not None:
            self.cache.register_model(fingerprint)

    def get_many(self, keys: Sequence[str], requests: Sequence[DataclassInstance]) -> dict[str, DataclassInstance]:
        found = self.run_store.get_many(self.model, keys)
        self.hits_run += len(found)
        if self.cache is not None and len(found) < len(keys):
            missing = [(k, r) for k, r in zip(keys, requests) if k not in found]
            cached = self.cache.get_many(self.model, [k for k, _ in missing])
            if cached:
                self.hits_cache += len(cached)
                # Copy into the run store, so the run folder alone holds every answer it used.
                self.run_store.put_many(self.model, [(k, r, cached[k]) for k, r in missing if k in cached])
                found.update(cached)
        return found

    def put_many(self, items: Sequence[StoreItem]) -> None:
        """(hash, request, result[, request fields]) items into the run store and the cache."""
        self.computed += len(items)
        self.run_store.put_many(self.model, items)
        if self.cache is not None:
            self.cache.put_many(self.model, items)

    def close(self) -> None:
        self.run_store.close()
        if self.cache is not None:
            self.cache.close()
