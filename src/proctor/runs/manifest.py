"""``run.json``: what a run folder was started with, checked before a run continues in it.

It records the exact command, the model fingerprint (and its hash), every task's content hash and
the options that change which requests are made. Re-running into the same folder continues only
when all of these match; otherwise the run refuses and says what changed, unless the caller asks
to update (accept the changes, reuse every stored response that still matches) or to restart.
"""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from proctor.core.errors import ProctorError
from proctor.core.version import __version__
from proctor.runs.lock import LOCK_FILE
from proctor.runs.results import read_json, write_json_atomic
from proctor.runs.store import STORE_FILE, fingerprint_hash

MANIFEST = "run.json"
# what a run writes in its folder (the lock aside): files, the store's files and folders
RUN_FILES = (MANIFEST, "results.json", "samples.jsonl", "samples.parquet", "results_lm_eval.json", "report.html")
STORE_FILES = tuple(f"{STORE_FILE}{suffix}" for suffix in ("", "-wal", "-shm", "-journal"))
RUN_FOLDERS = ("lm_eval", "tasks")
# run.json's fields read back: (type, its name, whether every run.json has it). The required ones are what a
# resumed run compares with this run's.
_FIELDS: dict[str, tuple[type, str, bool]] = {
    "created": (str, "a string", False),
    "model": (dict, "an object", True),
    "model_hash": (str, "a string", True),
    "tasks": (dict, "an object", True),
    "options": (dict, "an object", True),
    "attempts": (list, "a list", False),
}


# run.json as written and read back: proctor_version, created, command, model (the fingerprint), model_hash,
# tasks (name -> content hash), options, attempts (each with started, command, resumed, changes, finished, ...)
Manifest = dict[str, Any]


class RunMismatchError(ProctorError):
    """The run folder was started with other tasks, another model or other options."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_manifest(
    command: Sequence[str] | None,
    fingerprint: Mapping[str, object],
    task_hashes: Mapping[str, str],
    options: Mapping[str, object],
) -> Manifest:
    return {
        "proctor_version": __version__,
        "created": now(),
        # tells a run from another started in the same second with the same command, and a copy from a rerun
        "run_id": uuid.uuid4().hex,
        "command": list(command) if command is not None else None,
        "model": dict(fingerprint),
        "model_hash": fingerprint_hash(fingerprint),
        "tasks": dict(task_hashes),
        "options": dict(options),
        "attempts": [],
    }


def is_run_folder(folder: Path) -> bool:
    """Whether proctor wrote ``folder`` as a run folder: its run.json beside its samples.jsonl."""
    return (folder / MANIFEST).is_file() and (folder / "samples.jsonl").is_file()


def read_manifest(run_dir: Path) -> Manifest | None:
    path = run_dir / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = read_json(path)
    except ProctorError as exc:
        raise ProctorError(f"{exc}; use --restart to start this run folder over") from None
    if not isinstance(manifest, dict):
        raise ProctorError(f"{path} is not a run manifest (a JSON object); use --restart to start this run folder over")
    missing = [name for name, (_, _, required) in _FIELDS.items() if required and name not in manifest]
    if missing:  # every run.json proctor writes has them: a resume would report changes that are not there
        raise ProctorError(
            f"{path} has no field {', '.join(repr(m) for m in missing)} (edited by hand, or damaged?); "
            "use --restart to start this run folder over"
        )
    for name, (kind, named, _) in _FIELDS.items():  # edited by hand, or damaged?
        if name in manifest and not isinstance(manifest[name], kind):
            raise ProctorError(
                f"{path}, field '{name}': {type(manifest[name]).__name__} {json.dumps(manifest[name])[:40]}, "
                f"not {named}; use --restart to start this run folder over"
            )
    return manifest


def differences(old: Manifest, new: Manifest) -> list[str]:
    """What changed between the folder's manifest and this run, one line per change."""
    lines = []
    if old.get("model_hash") != new["model_hash"]:
        was, now_ = old.get("model", {}), new["model"]
        lines.append(_model_changed(was, now_, sorted(k for k in set(was) | set(now_) if was.get(k) != now_.get(k))))
    return lines + _task_changes(old.get("tasks", {}), new["tasks"]) + _option_changes(old, new["options"])


def _model_change(recorded: object, known: Mapping[str, object] | None) -> list[str]:
    """The model's change, from the fields known before loading that the folder's fingerprint also records."""
    if not isinstance(recorded, Mapping) or not known:
        return []
    changed = sorted(k for k in known if k in recorded and recorded[k] != known[k])
    return [_model_changed(recorded, known, changed)] if changed else []


def _model_changed(was: Mapping[str, object], now: Mapping[str, object], keys: list[str]) -> str:
    """One line naming the model fields that differ (the first six: a fingerprint has more, rarely all changed)."""
    return "model changed (" + ", ".join(f"{k}: {was.get(k)!r} -> {now.get(k)!r}" for k in keys[:6]) + ")"


def _task_changes(old_tasks: Mapping[str, object], new_tasks: Mapping[str, object]) -> list[str]:
    lines = []
    for name in new_tasks:
        if name not in old_tasks:
            lines.append(f"task '{name}' was not in this run")
        elif old_tasks[name] != new_tasks[name]:
            lines.append(f"task '{name}' changed (content hash {old_tasks[name]} -> {new_tasks[name]})")
    lines += [f"task '{name}' is no longer selected" for name in old_tasks if name not in new_tasks]
    return lines


def _option_changes(old: Manifest, new_opts: Mapping[str, object], skip: tuple[str, ...] = ()) -> list[str]:
    old_opts = old.get("options", {})
    keys = sorted(k for k in set(old_opts) | set(new_opts) if k not in skip)
    return [
        f"option {k} changed ({old_opts.get(k)!r} -> {new_opts.get(k)!r})"
        for k in keys
        if old_opts.get(k) != new_opts.get(k)
    ]


def _refusal(run_dir: Path, changes: list[str]) -> RunMismatchError:
    listed = "\n  - ".join(changes)
    return RunMismatchError(
        f"run folder {run_dir} was started with different inputs:\n  - {listed}\n"
        "Re-run with --update to accept the changes (only changed requests are recomputed), "
        "--restart to start over, or choose another --output folder."
    )


def check_resume(
    run_dir: Path,
    task_hashes: Mapping[str, str],
    options: Mapping[str, object],
    *,
    update: bool = False,
    restart: bool = False,
    model: Mapping[str, object] | None = None,
) -> None:
    """What can refuse a run in its folder before the model loads (the folder held): other tasks or options than
    the folder's, another model where ``model`` (the fields of its fingerprint known before loading: a local
    folder's path and content) says so — the whole fingerprint and --chunk-size ``open_run`` checks once it has
    loaded — and results whose store was deleted."""
    old = read_manifest(run_dir) if not restart and Path(run_dir).is_dir() else None
    if old is None:
        return
    changes = _model_change(old.get("model"), model) + _task_changes(old.get("tasks", {}), task_hashes)
    changes += _option_changes(old, options, skip=("chunk_size",))
    if changes and not update:
        raise _refusal(run_dir, changes)
    store = run_dir / STORE_FILE  # made before results.json, and never empty once it is
    if (run_dir / "results.json").exists() and (not store.exists() or store.stat().st_size == 0):
        raise RunMismatchError(
            f"{run_dir} has results.json but its {STORE_FILE} is missing or empty (deleted, cut?): a run would answer "
            f"every request again and replace results.json and samples.jsonl; use --restart to do that, or restore "
            f"{STORE_FILE}, or choose another --output"
        )


def _leftover(name: str) -> bool:
    """What a run killed before its run.json was complete leaves: its lock, a half-written run.json or
    results.json under the temporary name of an atomic write. The folder is still that run's."""
    return name == LOCK_FILE or name.startswith((f".{MANIFEST}.", ".results.json."))


def check_output_folder(run_dir: Path, restart: bool = False) -> None:
    """What ``--output`` holds, checked before any model loads: a new or empty folder, or a proctor run folder
    (run.json or its response store). A folder holding anything else is the user's own, and a run would overwrite
    files there (results.json, samples.jsonl): refused, even with --restart. A run folder's run.json must read."""
    run_dir = Path(run_dir).expanduser()
    if not run_dir.is_dir():
        return
    if not (run_dir / MANIFEST).exists() and not (run_dir / STORE_FILE).exists():
        others = sorted(p.name for p in run_dir.iterdir() if not _leftover(p.name))
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            raise ProctorError(
                f"--output {run_dir}: the folder is not empty ({shown}) and is not a proctor run folder "
                f"(no {MANIFEST}); nothing was written. Choose a new or empty folder"
            )
        return
    _check_kinds(run_dir)
    if restart:
        return
    if read_manifest(run_dir) is None:
        raise RunMismatchError(
            f"{run_dir} holds a response store but no {MANIFEST}; use --restart to start it over, or another --output"
        )


def _check_kinds(run_dir: Path) -> None:
    """Each name a run writes is a file, or a folder where a run keeps one: a folder named results.json, a file
    named tasks, ... would fail the run only after the model loaded and the folder's results were removed."""
    files = (*RUN_FILES, *STORE_FILES, LOCK_FILE)
    wrong = [(name, "a folder", "a file") for name in files if (run_dir / name).is_dir()]
    wrong += [(name, "a file", "a folder") for name in RUN_FOLDERS if (run_dir / name).is_file()]
    if (run_dir / "tasks").is_dir():  # each task's configuration, tasks/NAME.yaml
        wrong += [
            (f"tasks/{p.name}", "a folder", "a file") for p in sorted((run_dir / "tasks").glob("*.yaml")) if p.is_dir()
        ]
    if wrong:
        name, found, kept = wrong[0]
        raise ProctorError(
            f"{run_dir / name} is {found}, where a run keeps {kept}; move it out of {run_dir} (nothing was written)"
        )


def clear_run_dir(run_dir: Path) -> None:
    """Remove what a run wrote (store, results, samples, exports), keeping unrelated files."""
    for name in (*RUN_FILES, *STORE_FILES):
        (run_dir / name).unlink(missing_ok=True)
    for name in RUN_FOLDERS:
        shutil.rmtree(run_dir / name, ignore_errors=True)


def open_run(run_dir: Path, manifest: Manifest, *, update: bool = False, restart: bool = False) -> Manifest:
    """Check (or start) the run folder and record this attempt; returns the manifest in force."""
    old = read_manifest(run_dir) if not restart else None
    if restart:
        clear_run_dir(run_dir)
    elif old is None and (run_dir / STORE_FILE).exists():
        raise RunMismatchError(
            f"{run_dir} holds a response store but no {MANIFEST}; use --restart to start it over, or another --output"
        )
    attempt = {"started": manifest["created"], "command": manifest["command"]}
    if old is not None:
        changes = differences(old, manifest)
        if changes and not update:
            raise _refusal(run_dir, changes)
        merged = dict(manifest)
        merged["created"] = old.get("created", manifest["created"])
        merged["run_id"] = old.get("run_id", manifest["run_id"])  # a resumed run is the same run
        merged["attempts"] = list(old.get("attempts", []))
        attempt["resumed"] = True
        if changes:
            attempt["changes"] = changes
        manifest = merged
    manifest["attempts"] = manifest.get("attempts", []) + [attempt]
    write_json_atomic(run_dir / MANIFEST, manifest)
    return manifest


def mark(run_dir: Path, manifest: Manifest, **fields: object) -> None:
    """Update this attempt's entry (e.g. finished time, store statistics)."""
    manifest["attempts"][-1].update(fields)
    write_json_atomic(run_dir / MANIFEST, manifest)
