"""Many runs in one DuckDB database (``proctor export RUN... --to duckdb``): the optional ``duckdb`` extra.

Tables: ``samples`` (every run's samples.parquet rows, stacked by column name; a column one run
lacks is NULL there), ``metrics`` (one row per run, task and metric) and ``runs`` (each run's folder name, path
and run id). Exporting a run again replaces its rows (also a new run made into the same folder, which replaced
the old one on disk); another run whose folder has the same name is refused;
the runs go in as one transaction. Without DuckDB's Python package the same stack is one SQL query over the
parquet files (docs/runs.md).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from proctor.core.errors import ProctorError, require
from proctor.runs.documents import ResultsDocument
from proctor.runs.run_exports import PARQUET_FILE, load_results, write_parquet

if TYPE_CHECKING:
    import duckdb


def _metric_rows(run: str, results: ResultsDocument) -> list[tuple[object, ...]]:
    model = (results.get("model") or {}).get("model")
    rows: list[tuple[object, ...]] = []
    for kind in ("tasks", "groups"):
        for name, entry in (results.get(kind) or {}).items():
            for metric, m in (entry.get("metrics") or {}).items():
                value = m.get("value") if isinstance(m, dict) else None
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    stderr = m.get("stderr") if isinstance(m.get("stderr"), (int, float)) else None
                    rows.append(
                        (
                            run,
                            results.get("created"),
                            model,
                            kind[:-1],
                            name,
                            metric,
                            float(value),
                            stderr,
                            entry.get("n_samples"),
                        )
                    )
    return rows


def _add_missing_columns(con: duckdb.DuckDBPyConnection, table: str, source: str, params: list[object]) -> None:
    have = {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()}
    for name, dtype, *_ in con.execute(f"DESCRIBE SELECT * FROM {source}", params).fetchall():
        if name not in have:
            con.execute(f'ALTER TABLE {table} ADD COLUMN "{name}" {dtype}')


def _add_runs(con: duckdb.DuckDBPyConnection, run_dirs: Sequence[Path], scratch: Path) -> None:
    """Each run's samples and metrics into the tables, replacing the rows an earlier export of it left."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS metrics (run VARCHAR, run_created VARCHAR, model VARCHAR, kind VARCHAR, "
        "task VARCHAR, metric VARCHAR, value DOUBLE, stderr DOUBLE, n_samples BIGINT)"
    )
    con.execute("CREATE TABLE IF NOT EXISTS runs (run VARCHAR, path VARCHAR, run_id VARCHAR)")
    for run_dir in map(Path, run_dirs):
        results = load_results(run_dir)
        _check_same_run(con, run_dir, results)
        # Made afresh from samples.jsonl: a samples.parquet in the folder may predate a resumed or updated run.
        parquet = str(write_parquet(run_dir, scratch / PARQUET_FILE))
        run = run_dir.resolve().name
        source = "read_parquet(?)"
        exists = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'samples'").fetchone()
        if not exists or not exists[0]:
            con.execute(f"CREATE TABLE samples AS SELECT * FROM {source}", [parquet])
        else:
            _add_missing_columns(con, "samples", source, [parquet])
            con.execute("DELETE FROM samples WHERE run = ?", [run])
            con.execute(f"INSERT INTO samples BY NAME SELECT * FROM {source}", [parquet])
        con.execute("DELETE FROM metrics WHERE run = ?", [run])
        rows = _metric_rows(run, results)
        if rows:
            con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _check_same_run(con: duckdb.DuckDBPyConnection, run_dir: Path, results: ResultsDocument) -> None:
    """A run already in the database under this folder name is replaced only by itself (the same ``run_id``) or by
    what its folder holds now (the same path: a run made again into the folder replaced the old one on disk, so
    its rows follow): another run whose folder has the same name (``a/r1`` and ``b/r1``, exported by two commands)
    would silently replace its rows. Recorded in ``runs``."""
    run, path, run_id = run_dir.resolve().name, str(run_dir.resolve()), results.get("run_id")
    for known_path, known_id in con.execute("SELECT path, run_id FROM runs WHERE run = ?", [run]).fetchall():
        same = known_path == path or (bool(known_id) and known_id == run_id)
        if not same:
            raise ProctorError(
                f"{run_dir}: the database already holds a run named '{run}' from {known_path} (another run): the "
                "database keys a run by its folder's name, so this one would replace its rows; rename the folder, "
                "or export it into another database"
            )
    if not con.execute("SELECT count(*) FROM runs WHERE run = ?", [run]).fetchone()[0]:  # type: ignore[index]
        old = con.execute("SELECT DISTINCT run_created FROM metrics WHERE run = ?", [run]).fetchall()
        if old and any(created != results.get("created") for (created,) in old):  # a database of an earlier version
            raise ProctorError(
                f"{run_dir}: the database already holds a run named '{run}' created {old[0][0]}, and this one was "
                f"created {results.get('created')}: another run of the same folder name would replace its rows; "
                "rename the folder, or export it into another database"
            )
    con.execute("DELETE FROM runs WHERE run = ?", [run])
    con.execute("INSERT INTO runs VALUES (?, ?, ?)", [run, path, run_id])


def _check_names(run_dirs: Sequence[Path]) -> None:
    """The tables key a run by its folder's name: two runs of one name would keep only the last one's rows."""
    seen: dict[str, Path] = {}
    for run_dir in map(Path, run_dirs):
        name = run_dir.resolve().name
        first = seen.setdefault(name, run_dir)
        if first.resolve() != run_dir.resolve():
            raise ProctorError(
                f"{first} and {run_dir} are both named '{name}': the database keys a run by its folder's name, so "
                "the second would replace the first's rows; rename one folder, or export them into separate databases"
            )


def export_duckdb(run_dirs: Sequence[Path], database: Path) -> Path:
    duckdb = require("duckdb", "duckdb", "proctor export --to duckdb")
    _check_names(run_dirs)
    try:
        con = duckdb.connect(str(database))
    except duckdb.Error as exc:  # not a DuckDB file, a folder, a newer format, ...
        raise ProctorError(f"--database {database}: cannot open it as a DuckDB database: {exc}") from None
    committed = False
    try:  # one transaction: a run that fails (damaged, a full disk) leaves the database as it was, not half of them
        con.begin()
        with tempfile.TemporaryDirectory(prefix="proctor-duckdb-") as scratch:
            _add_runs(con, run_dirs, Path(scratch))
        con.commit()
        committed = True
    except duckdb.IOException as exc:  # a full disk, a file that cannot be written
        raise ProctorError(f"cannot write {database}: {exc}; the database is as it was") from None
    except duckdb.Error as exc:  # tables of that name from something else
        raise ProctorError(f"--database {database}: cannot add the runs: {exc}; the database is as it was") from None
    finally:
        if not committed:
            with contextlib.suppress(duckdb.Error):  # no transaction left to roll back after a failed commit
                con.rollback()
        con.close()
    return database
