"""Write a run folder. Each task's samples are appended as soon as the task finishes."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

from proctor.core.errors import ProctorError
from proctor.runs.documents import ResultsDocument, SampleLine
from proctor.runs.results_schema import ResultsSchemaError, check_results_json
from proctor.runs.run_digests import NUMBERS_DIGEST, SAMPLES_DIGEST, numbers_digest, samples_digest
from proctor.runs.unwritable import naming


def new_run_dir(root: Path, label: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-") or "run"
    candidate = root / f"{stamp}_{safe}"
    n = 1
    while candidate.exists():
        n += 1
        candidate = root / f"{stamp}_{safe}_{n}"
    return candidate


def check_writable_folder(path: Path, option: str) -> None:
    """A folder a run will write into (``--output``, ``--cache``): refuse a file or an unwritable place
    now, not after the model has loaded."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise ProctorError(f"{option} {path}: is a file, not a folder")
    existing = path
    while not existing.exists():
        if existing.is_symlink():  # no folder can be made through it (mkdir says "File exists")
            raise ProctorError(
                f"{option} {path}: {existing} is a symbolic link to {os.readlink(existing)}, which does not lead to "
                "a folder (missing, or a loop); make that folder, or name another"
            )
        existing = existing.parent
    if not existing.is_dir():
        raise ProctorError(f"{option} {path}: {existing} is a file, so the folder cannot be made")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ProctorError(f"{option} {path}: {existing} is not writable")
    try:  # a place that refuses new folders whatever the permissions say (/proc, a read-only mount, for root too)
        os.rmdir(tempfile.mkdtemp(prefix=".proctor-check-", dir=existing))
    except OSError as exc:
        raise ProctorError(f"{option} {path}: cannot make a folder in {existing}: {exc.strerror or exc}") from None


def read_json(path: Path) -> Any:
    """A JSON file of a run folder (results.json, run.json), a byte-order mark dropped: a file that does not read,
    is empty, is not UTF-8 or not JSON is an error naming it and where (the caller adds what to do about it)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ProctorError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not data.strip():
        raise ProctorError(f"{path} is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ProctorError(
            f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProctorError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None


def _json_default(value: object) -> object:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _clean(value: object) -> object:
    """NaN and infinities are not JSON: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def json_text(data: object) -> str:
    """What proctor writes for ``data``: indented UTF-8 JSON, NaN and infinities as null."""
    return json.dumps(_clean(data), indent=2, ensure_ascii=False, default=_json_default) + "\n"


@contextmanager
def replaced(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; when the block ends without an error it replaces ``path``
    in one step. A write that fails (a full disk) leaves ``path`` as it was and no temporary file behind,
    and its ``OSError`` names ``path``. For files written by other libraries or streamed (exports)."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        with naming(path):
            yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# ``replaced``'s temporary files: ".NAME.<12 hex digits>.tmp"
_TEMPORARY = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def remove_temporaries(run_dir: Path) -> list[Path]:
    """Remove the temporary files of writes a killed run left half done (``replaced``'s, in the run folder and
    its subfolders); called by the next run, which holds the folder's lock, so no write of another is in
    flight. The paths removed."""
    removed = []
    for folder, _, names in os.walk(run_dir):
        for name in names:
            if _TEMPORARY.fullmatch(name):
                path = Path(folder) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a kill leaves the old file or the new one).

    The temporary file is made with mode 0666 less the umask, like any other file the run writes
    (``tempfile`` would make it 0600, and the rename would keep that: teammates could not read it).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced(path) as tmp, tmp.open("x", encoding="utf-8") as handle:  # "x": a new file, never another's
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def write_json_atomic(path: Path, data: object) -> None:
    write_text_atomic(path, json_text(data))


# A run folder's own files: a report, page or comparison written over one would destroy the run.
_RUN_OWN_FILES = ("run.json", "results.json", "samples.jsonl", "store.sqlite", "store.sqlite-wal", "store.sqlite-shm")


def write_output(path: Path, text: str) -> Path:
    """A file the user asked for (a report, the viewer's page, a comparison), written atomically; a place that
    cannot take it (a folder of that name, a missing or read-only folder) or a run folder's own file (its
    results.json, ...) is an error naming it."""
    target = Path(path)
    if target.name in _RUN_OWN_FILES and any((target.parent / n).is_file() for n in ("run.json", "results.json")):
        raise ProctorError(f"{path} is a file of the run folder {target.parent}; name another file with -o")
    try:
        write_text_atomic(Path(path), text)
    except OSError as exc:
        raise ProctorError(f"cannot write {path}: {exc.strerror or exc}; name another file with -o") from None
    return Path(path)


def _fsync_dir(folder: Path) -> None:
    """Make unlinks and renames in ``folder`` durable before what follows them."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


class RunWriter:
    """Writes samples.jsonl and results.json; a task's samples are on disk before results.json names it."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.samples_path = run_dir / "samples.jsonl"
        # A results.json (and exports) from an earlier attempt must not outlive the samples they
        # describe: remove them before samples.jsonl is emptied, so a kill at any moment never
        # leaves a "complete" results.json beside missing samples.
        for stale in ("results.json", "results_lm_eval.json", "samples.parquet"):
            (run_dir / stale).unlink(missing_ok=True)
        remove_temporaries(run_dir)  # what a killed write left
        _fsync_dir(run_dir)
        self.samples_path.write_text("", encoding="utf-8")

    def write_task_config(self, name: str, config: Mapping[str, object]) -> None:
        folder = self.run_dir / "tasks"
        folder.mkdir(exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
        path = folder / f"{safe}.yaml"
        with naming(path), path.open("w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle, sort_keys=False, allow_unicode=True)

    def append_samples(self, records: list[SampleLine]) -> None:
        with naming(self.samples_path), self.samples_path.open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(_clean(record), ensure_ascii=False, default=_json_default) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def write_results(self, results: ResultsDocument) -> None:
        # results.json names the samples it describes: samples.jsonl's first `samples_bytes` bytes. Lines
        # past them (a task killed between its samples and this write) are not part of the run yet.
        data = self.samples_path.read_bytes() if self.samples_path.exists() else b""
        results["samples_bytes"] = len(data)
        # and vouches for them and for its numbers: a hand edit of either is refused where the run is read
        # (runs/run_digests.py); over the numbers as written, NaN as null
        results[SAMPLES_DIGEST] = samples_digest(data)
        results[NUMBERS_DIGEST] = numbers_digest(json.loads(json_text(results)))
        # what the file will hold must match runs/results_schema.py: a mismatch is a bug, raised before anything is
        # written
        text = json_text(results)  # serialised once: the text checked is the text written
        try:
            check_results_json(text)
        except ResultsSchemaError as exc:
            raise ResultsSchemaError(
                f"results.json not written (a bug in proctor, please report it): it {exc}"
            ) from None
        write_text_atomic(self.run_dir / "results.json", text)
