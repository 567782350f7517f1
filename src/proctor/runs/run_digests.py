"""Which samples and which numbers results.json vouches for: ``samples_digest`` (the sha256 of samples.jsonl's
first ``samples_bytes`` bytes, the finished file, its lines in any order) and ``numbers_digest`` (the sha256 of
every task's metric values and sample count, the group scores and the roll-up). Both are written with results.json
(``RunWriter.write_results``) and checked wherever a run is read back (report, compare, export, the viewer:
``run_exports``): a hand edit that keeps the byte length of samples.jsonl, another run's samples copied in, or
an edited number in results.json is refused naming the file, instead of being shown as the run's number.

A run of an earlier version records neither and is read as before. The digests cover the finished file: a run
resumed with ``--update`` appends to samples.jsonl and writes both again when results.json is rewritten."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

from proctor.core.errors import ProctorError

SAMPLES_DIGEST = "samples_digest"
NUMBERS_DIGEST = "numbers_digest"


def samples_digest(data: bytes) -> str:
    """Over the lines as a set: sorted, each stripped, blank ones and a byte-order mark an editor put before them
    left out (the readers pair samples by task and id, not by line order, and drop blanks and a mark too), so a file
    whose lines were reordered still reads; one whose content changed does not."""
    lines = sorted(line.strip() for line in data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if line.strip())
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


def numbers_digest(results: Mapping[str, Any]) -> str:
    """The sha256 of what report, compare and export show as the run's numbers, over the JSON as written (NaN as
    null), keys sorted: tasks' ``metrics`` and ``n_samples``, ``groups`` and ``rollup``."""
    tasks = results.get("tasks")
    shown = {
        "tasks": {
            str(name): {"metrics": task.get("metrics"), "n_samples": task.get("n_samples")}
            for name, task in (tasks.items() if isinstance(tasks, Mapping) else ())
            if isinstance(task, Mapping)
        },
        "groups": results.get("groups"),
        "rollup": results.get("rollup"),
    }
    text = json.dumps(shown, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_numbers(path: Path, results: Mapping[str, Any]) -> None:
    """results.json's numbers as its run wrote them (where it records their digest)."""
    recorded = results.get(NUMBERS_DIGEST)
    if isinstance(recorded, str) and recorded != numbers_digest(results):
        raise ProctorError(
            f"{path}: its metric values, sample counts or group scores differ from those the run wrote (field "
            f"'{NUMBERS_DIGEST}' does not match them): the file was edited after the run, so its numbers are not "
            "the run's; re-run the run (or restore the file) to rebuild it"
        )


def check_samples(path: Path, data: bytes, results: Mapping[str, Any] | None) -> None:
    """``data`` (samples.jsonl's first ``samples_bytes`` bytes) as the run wrote them (where results.json records
    their digest)."""
    recorded = results.get(SAMPLES_DIGEST) if isinstance(results, Mapping) else None
    if isinstance(recorded, str) and recorded != samples_digest(data):
        for number, line in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
            try:  # a line that is no JSON at all: named by its number, as the readers name it
                json.loads(line.decode("utf-8")) if line.strip() else None
            except ValueError:
                raise ProctorError(
                    f"{path}:{number}: not a JSON line (an interrupted write? re-run to rebuild it)"
                ) from None
        raise ProctorError(
            f"{path}: its lines (the first {len(data)} bytes) differ from the samples the run wrote (results.json's "
            f"field '{SAMPLES_DIGEST}' does not match them): the file was edited or replaced after the run, so its "
            "answers and scores are not the run's; re-run the run (or restore the file) to rebuild it"
        )


def vouched(run_dir: Path, results: Mapping[str, Any]) -> bool:
    """Whether results.json's numbers and samples.jsonl are as the run wrote them (a folder of an earlier version,
    with no digests: True). A re-run of a finished run reports it without the model only where they are."""
    try:
        check_numbers(Path(run_dir) / "results.json", results)
        covered = results.get("samples_bytes")
        path = Path(run_dir) / "samples.jsonl"
        if isinstance(covered, int) and results.get(SAMPLES_DIGEST) is not None:
            with path.open("rb") as raw:
                data = raw.read(covered)
            check_samples(path, data, results)
    except (ProctorError, OSError):
        return False
    return True
