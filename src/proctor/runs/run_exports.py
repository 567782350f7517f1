"""Exports of a run folder: lm-evaluation-harness's results layout, and samples as parquet."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from proctor.core.errors import ProctorError
from proctor.core.metric_names import is_count
from proctor.core.version import __version__
from proctor.runs.documents import ResultsDocument, SampleLine
from proctor.runs.lm_eval_layout import SourceRows, results_file, sample_line, stamp
from proctor.runs.results import read_json, replaced, write_json_atomic
from proctor.runs.results_schema import ResultsSchemaError, check_results_json
from proctor.runs.run_digests import check_numbers, check_samples
from proctor.runs.saved_specs import task_specs

if TYPE_CHECKING:
    import pyarrow as pa

LM_EVAL_DIR = "lm_eval"  # lm-eval's EvaluationTracker layout (runs/lm_eval_layout.py)
PARQUET_FILE = "samples.parquet"


def load_results(run_dir: Path) -> ResultsDocument:
    """A run folder's results.json, checked against its schema: a hand-edited or damaged file is an error naming
    the fields that are wrong (report, compare and export would otherwise fail inside, or show wrong numbers)."""
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise ProctorError(f"{run_dir} is not a run folder: no results.json")
    try:
        results = read_json(path)
    except ProctorError as exc:
        raise ProctorError(f"{exc}; re-run the run to rebuild it") from None
    if isinstance(results, dict):
        results.setdefault("samples_bytes", None)  # written by proctor before results.json named its samples
    try:
        check_results_json(json.dumps(results))
    except ResultsSchemaError as exc:
        written_by = results.get("proctor_version") if isinstance(results, dict) else None
        if _newer(written_by):  # a later proctor's layout, not a damaged file
            raise ProctorError(
                f"{path} was written by proctor {written_by}, newer than this one ({__version__}), and does not read "
                f"here ({exc}); upgrade proctor to read it"
            ) from None
        raise ProctorError(f"{path} {exc} (edited by hand, or damaged?); re-run the run to rebuild it") from None
    document: ResultsDocument = results  # the schema's Results model took it: a JSON object
    check_numbers(path, document)
    return document


def _newer(version: object) -> bool:
    """Whether ``version`` (results.json's ``proctor_version``) is a release after this proctor's."""

    def parts(text: str) -> tuple[int, ...] | None:
        numbers = re.match(r"\d+(\.\d+)*", text)
        return tuple(int(n) for n in numbers.group(0).split(".")) if numbers else None

    theirs, ours = parts(version) if isinstance(version, str) else None, parts(__version__)
    return theirs is not None and ours is not None and theirs > ours


def _results_read(run_dir: Path) -> dict[str, Any] | None:
    """results.json as it reads (None: absent, or the file does not read)."""
    try:
        loaded = read_json(Path(run_dir) / "results.json")
    except ProctorError:
        return None
    return loaded if isinstance(loaded, dict) else None


def _samples_bytes(run_dir: Path, loaded: dict[str, Any] | None = None) -> int | None:
    """results.json's ``samples_bytes`` where it is a count (None: absent, or the file does not read)."""
    loaded = _results_read(run_dir) if loaded is None else loaded
    covered = loaded.get("samples_bytes") if isinstance(loaded, dict) else None
    return covered if isinstance(covered, int) and not isinstance(covered, bool) and covered >= 0 else None


def samples_data(run_dir: Path) -> bytes:
    """The part of samples.jsonl that results.json describes: its first ``samples_bytes`` bytes (what a task
    killed before results.json named it appended after them is left out); the whole file without that number."""
    path = Path(run_dir) / "samples.jsonl"
    if not path.exists():
        return b""
    if path.is_dir():
        raise ProctorError(f"{path} is a folder, not the run's samples file; move it out of {run_dir}")
    if not path.is_file():  # a FIFO would wait for a writer forever; a device reads without end
        raise ProctorError(f"{path} is not a regular file (a FIFO, socket or device), not the run's samples file")
    loaded = _results_read(run_dir)
    covered = _samples_bytes(run_dir, loaded)
    try:
        with path.open("rb") as raw:
            data = raw.read() if covered is None else raw.read(covered)
    except OSError as exc:
        raise ProctorError(f"cannot read {path}: {exc.strerror or exc}") from None
    if covered is not None and len(data) == covered:  # a file cut short is named by iter_samples, by its size
        check_samples(path, data, loaded)
    return data


def samples_text(run_dir: Path) -> str:
    """``samples_data`` as text for the viewer (a byte that is not UTF-8 shown as U+FFFD, a byte-order mark dropped)."""
    return samples_data(run_dir).decode("utf-8", errors="replace").removeprefix("\ufeff")


def iter_samples(run_dir: Path) -> Iterator[SampleLine]:
    """The samples results.json describes (``samples_data``), one record per line."""
    path = Path(run_dir) / "samples.jsonl"
    data, covered = samples_data(run_dir), _samples_bytes(run_dir)
    if covered is not None and len(data) < covered:  # proctor appends before it counts: the file lost samples
        raise ProctorError(
            f"{path} holds {len(data)} bytes, fewer than the {covered} that results.json's field 'samples_bytes' "
            "says it describes: samples were lost (the file was cut or replaced); re-run the run to rebuild it"
        )
    for number, line in enumerate(
        data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1
    ):  # bytes: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included
            raise ProctorError(
                f"{path}:{number}: not a JSON line (an interrupted write? re-run to rebuild it)"
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("task"), str):
            raise ProctorError(
                f"{path}:{number}: not a sample record (an object with its 'task'); re-run to rebuild it"
            )
        for field, (kinds, named) in _RECORD_FIELDS.items():  # what report, compare and the exports rely on
            value = record.get(field)
            wrong = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
            if wrong and (value is not None or field == "id"):
                raise ProctorError(
                    f"{path}:{number}, field '{field}': {type(value).__name__} {json.dumps(value)[:40]}, not {named} "
                    "(edited by hand, or damaged?); re-run to rebuild it"
                )
        for field, (kind, named) in _RECORD_ITEMS.items():
            for i, item in enumerate(record.get(field) or []):
                if not isinstance(item, kind):
                    raise ProctorError(
                        f"{path}:{number}, field '{field}[{i}]': {type(item).__name__} "
                        f"{json.dumps(item, default=str)[:40]}, not {named} (edited by hand, or damaged?); "
                        "re-run to rebuild it"
                    )
        yield record


# The types of a sample record's shared fields (docs/results.md): ``id`` always, the others where not null.
_RECORD_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "id": ((str, int), "a sample id (text or a number)"),
    "source": ((dict,), "an object (file, row)"),
    "metrics": ((dict,), "an object (metric -> value)"),
    "choices": ((list,), "a list of choices"),
    "logprobs": ((list,), "a list of log-likelihoods"),
    "distribution": ((list,), "a list of probabilities"),
    "fewshot_ids": ((list,), "a list of sample ids"),
    "correct": ((bool,), "true or false"),
    "parsed": ((bool,), "true or false"),
    "epochs": ((list,), "a list of objects (one per epoch)"),
    "is_greedy": ((list,), "a list of true or false"),
    "arguments": ((list,), "a list of request arguments"),
    "filtered_resps": ((dict,), "an object (filter -> responses)"),
}
# Fields whose items the exports read as one type: epochs as objects, an lm-eval record's arguments as lists.
_RECORD_ITEMS: dict[str, tuple[type, str]] = {"epochs": (dict, "an object"), "arguments": (list, "a list")}


def _texts(values: object) -> list[str] | None:
    if values is None:
        return None
    return [str(v) for v in (values if isinstance(values, list) else [values])]


def _indices(values: Any) -> list[int] | None:
    items = values if isinstance(values, list) else [values]
    if values is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return None
    return list(items)


def _typed(r: SampleLine) -> dict[str, object]:
    """target / prediction as text (a choice's text for multiple choice), with indices beside them."""
    choices = r.get("choices")
    target = r.get("target")
    if choices is not None:
        gold = _indices(target)
        prediction = r.get("prediction")
        index = prediction if isinstance(prediction, int) and not isinstance(prediction, bool) else None
        return {
            "target": [str(choices[i]) for i in gold if 0 <= i < len(choices)] if gold else _texts(target),
            "target_index": gold,
            "prediction": str(choices[index])
            if index is not None and 0 <= index < len(choices)
            else (None if prediction is None else str(prediction)),
            "prediction_index": index,
        }
    prediction = r.get("extracted", r.get("prediction"))
    return {
        "target": _texts(target),
        "target_index": None,
        "prediction": None if prediction is None or isinstance(prediction, (dict, list)) else str(prediction),
        "prediction_index": None,
    }


def _floats(values: object) -> list[float | None] | None:
    """Numbers as floats; a task class may leave gaps (None) in its per-choice values."""
    if not isinstance(values, (list, tuple)):
        return None
    return [float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None for x in values]


def write_parquet(
    run_dir: Path, path: Path | None = None, contents: tuple[ResultsDocument, list[SampleLine]] | None = None
) -> Path:
    """``samples_table`` written as RUN_DIR/samples.parquet (or ``path``)."""
    import pyarrow.parquet as pq

    table = samples_table(run_dir, contents)
    target = path or Path(run_dir) / PARQUET_FILE
    with replaced(target) as tmp:
        pq.write_table(table, tmp)
    return target


def _primary_metrics(records: list[SampleLine], results: ResultsDocument | None = None) -> dict[str, str]:
    """Per task, the first metric whose every per-sample value is 0 or 1 (or unscored), higher being better and
    not a count (null_count is 1 for an empty answer): what decides correct / incorrect where a record has no
    ``correct`` of its own (a generation), as in the report's sample browser (static/viewer.js)."""
    order: dict[str, dict[str, bool]] = defaultdict(dict)
    for r in records:
        flags = order[str(r.get("task"))]
        for name, value in (r.get("metrics") or {}).items():
            binary = value is None or (isinstance(value, (int, float)) and value in (0, 1))
            flags[name] = flags.get(name, True) and binary and not is_count(name)
    tasks = (results or {}).get("tasks") or {}
    for task, flags in order.items():
        lower = ((tasks.get(task) or {}).get("higher_is_better") or {}) if isinstance(tasks, dict) else {}
        for name in flags:
            flags[name] = flags[name] and lower.get(name) is not False
    return {task: next((m for m, ok in flags.items() if ok), "") for task, flags in order.items() if flags}


def _correct(record: SampleLine, primary: str | None) -> bool | None:
    """The record's own ``correct``, else its task's first 0/1 metric (1: correct); None: unscored."""
    if isinstance(record.get("correct"), bool):
        return bool(record["correct"])
    value = (record.get("metrics") or {}).get(primary) if primary else None
    return bool(value == 1) if isinstance(value, (int, float)) else None


def samples_table(run_dir: Path, contents: tuple[ResultsDocument, list[SampleLine]] | None = None) -> pa.Table:
    """samples.jsonl as a flat, typed pyarrow table: one row per sample, run and model columns (to stack runs),
    target / prediction as text (plus choice indices), per-choice log-likelihoods as a list and as
    ``logprob_<i>`` columns, and a float column per metric (``metric_<name>``). The layout of samples.parquet,
    of ``EvaluationResult.samples_frame()`` and of the trackers' samples tables. ``contents``: the run's results
    and samples, when the caller has read them already (``read_run``)."""
    import pyarrow as pa

    run_dir = Path(run_dir)
    results, records = contents or read_run(run_dir)
    model = results.get("model") or {}
    metric_names = sorted({m for r in records for m in (r.get("metrics") or {})})
    n_choices = max((len(r.get("logprobs") or []) for r in records if isinstance(r.get("logprobs"), list)), default=0)
    fields = [
        ("run", pa.string()),
        ("run_created", pa.string()),
        ("model", pa.string()),
        ("model_backend", pa.string()),
        ("task", pa.string()),
        ("id", pa.string()),
        ("source_file", pa.string()),
        ("source_row", pa.int64()),
        ("prompt", pa.string()),
        ("target", pa.list_(pa.string())),
        ("target_index", pa.list_(pa.int64())),
        ("prediction", pa.string()),
        ("prediction_index", pa.int64()),
        ("correct", pa.bool_()),
        ("parsed", pa.bool_()),
        ("choices", pa.list_(pa.string())),
        ("logprobs", pa.list_(pa.float64())),
        ("distribution", pa.list_(pa.float64())),
        *[(f"logprob_{i}", pa.float64()) for i in range(n_choices)],
        ("generation", pa.string()),
        ("record", pa.string()),
        *[(f"metric_{m}", pa.float64()) for m in metric_names],
    ]
    columns: dict[str, list[object]] = {name: [] for name, _ in fields}
    run_name = run_dir.resolve().name
    primary = _primary_metrics(records, results)
    for r in records:
        prompt = r.get("rendered_prompt") or r.get("prompt")
        logprobs = r.get("logprobs") if isinstance(r.get("logprobs"), list) else None
        row = {
            "run": run_name,
            "run_created": results.get("created"),
            "model": model.get("model"),
            "model_backend": model.get("backend"),
            "task": r.get("task"),
            "id": str(r.get("id")),
            "source_file": (r.get("source") or {}).get("file"),
            "source_row": (r.get("source") or {}).get("row"),
            "prompt": prompt if isinstance(prompt, str) or prompt is None else json.dumps(prompt, ensure_ascii=False),
            **_typed(r),
            "correct": _correct(r, primary.get(str(r.get("task")))),
            "parsed": r["parsed"] if isinstance(r.get("parsed"), bool) else None,
            "choices": [str(c) for c in r["choices"]] if r.get("choices") is not None else None,
            "logprobs": _floats(logprobs),
            "distribution": _floats(r.get("distribution")),
            "generation": r.get("generation"),
            "record": json.dumps(r, ensure_ascii=False),
        }
        for i in range(n_choices):
            floats = _floats(logprobs)
            row[f"logprob_{i}"] = floats[i] if floats is not None and i < len(floats) else None
        for m in metric_names:
            value = (r.get("metrics") or {}).get(m)
            row[f"metric_{m}"] = float(value) if isinstance(value, (int, float)) else None
        for name in columns:
            columns[name].append(row.get(name))
    return pa.table(columns, schema=pa.schema(fields))


def write_lm_eval(
    run_dir: Path, folder: Path | None = None, contents: tuple[ResultsDocument, list[SampleLine]] | None = None
) -> Path:
    """lm-eval's layout under ``RUN_DIR/lm_eval/<model>/``: results_<date>.json and samples_<task>_<date>.jsonl.

    The date is the run's start, so exporting again rewrites the same files; other files that an
    earlier export of this run left there are removed. ``contents`` as for ``write_parquet``.
    """
    run_dir = Path(run_dir)
    results, samples = contents or read_run(run_dir)
    specs = task_specs(run_dir, results.get("tasks", {}))
    layout = results_file(results, specs)
    target = folder or run_dir / LM_EVAL_DIR / layout["model_name_sanitized"]
    date = stamp(results.get("created"))
    target.mkdir(parents=True, exist_ok=True)
    keep = {f"results_{date}.json"}
    rows = SourceRows()
    by_task: dict[str | None, list[SampleLine]] = {}  # a record without a task goes under None
    for record in samples:
        by_task.setdefault(record.get("task"), []).append(record)
    for name, records in by_task.items():
        file = target / f"samples_{re.sub(r'[^A-Za-z0-9_.-]', '_', str(name))}_{date}.jsonl"
        keep.add(file.name)
        with replaced(file) as tmp, tmp.open("w", encoding="utf-8") as handle:
            for i, record in enumerate(records):
                handle.write(
                    json.dumps(
                        sample_line(i, record, (specs.get(name) if name is not None else None) or {}, rows.doc(record)),
                        ensure_ascii=False,
                        default=str,
                    )
                    + "\n"
                )
    for old in target.glob("*.json*"):
        if old.name not in keep and (old.name.startswith("results_") or old.name.startswith("samples_")):
            old.unlink()
    path = target / f"results_{date}.json"
    write_json_atomic(path, layout)
    return path


def read_run(run_dir: Path) -> tuple[ResultsDocument, list[SampleLine]]:
    """A run folder's checked results.json and the samples it describes."""
    return load_results(run_dir), list(iter_samples(run_dir))


def write_exports(run_dir: Path, formats: tuple[str, ...] = ("lm-eval", "parquet")) -> list[Path]:
    for fmt in formats:
        if fmt not in ("lm-eval", "parquet"):
            raise ProctorError(f"unknown export format '{fmt}'; choose lm-eval, parquet or duckdb")
    contents = read_run(run_dir) if formats else None  # read once for every format (samples.jsonl can be large)
    writers = {"lm-eval": write_lm_eval, "parquet": write_parquet}
    written = []
    for fmt in formats:
        try:  # what the writers read was checked as it was read (iter_samples, saved_specs)
            written.append(writers[fmt](run_dir, contents=contents))
        except OSError as exc:  # a file where the export makes a folder, a folder where it writes a file, ...
            where = exc.filename2 or exc.filename or run_dir  # a rename: where it went
            raise ProctorError(f"cannot write the {fmt} export of {run_dir}: {where}: {exc.strerror or exc}") from None
    return written
