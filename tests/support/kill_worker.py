"""Run an evaluation in a child process and SIGKILL it at a chosen point.

usage: kill_worker.py TASKS RUN_DIR CALL_LOG KILL [SLEEP]

KILL is ``none`` or ``POINT:N``, the N-th time (in this process) the run reaches POINT:
  call           inside a model call, after it is logged and before it answers
  store-commit   inside a store write: rows inserted, transaction not yet committed
  commit-done    right after a batch was committed
  samples        halfway through appending a task's samples to samples.jsonl
  results        while results.json is being written (temporary file half written)
  manifest       while run.json is being written
Every call the model receives is logged to CALL_LOG (one line, flushed) before it is answered.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.support

from proctor import evaluate  # noqa: E402
from proctor.runs import manifest as manifest_module  # noqa: E402
from proctor.runs import results as results_module  # noqa: E402
from proctor.runs import store as store_module  # noqa: E402
from tests.support.fakes import FakeModel  # noqa: E402

COMMAND = ["proctor", "run", "tasks", "--output", "run"]  # the same command line every time


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    tasks, run_dir, call_log, kill = sys.argv[1:5]
    sleep = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    point, _, nth = kill.partition(":")
    target = int(nth or 0)
    seen: dict[str, int] = {}

    def reached(name: str) -> bool:
        seen[name] = seen.get(name, 0) + 1
        return point == name and seen[name] == target

    class KillableModel(FakeModel):
        def _log(self, kind: str, n: int) -> None:
            super()._log(kind, n)
            if sleep:
                time.sleep(sleep)
            if reached("call"):
                die()

    original_put = store_module.ResponseStore.put_many

    def put_many(self, model, items):
        items = list(items)
        if self.path.name == store_module.STORE_FILE and reached("store-commit"):
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                [(model, k, type(r).__name__, "{}", store_module.encode_result(res), 0.0) for k, r, res, *_ in items],
            )
            die()
        original_put(self, model, items)
        if self.path.name == store_module.STORE_FILE and reached("commit-done"):
            die()

    store_module.ResponseStore.put_many = put_many

    original_append = results_module.RunWriter.append_samples

    def append_samples(self, records):
        if reached("samples"):
            original_append(self, records[: len(records) // 2])
            with self.samples_path.open("a") as handle:
                handle.write('{"task": "half a li')
                handle.flush()
            die()
        original_append(self, records)

    results_module.RunWriter.append_samples = append_samples

    original_write_json = results_module.write_json_atomic

    def write_json_atomic(path, data):
        name = {"results.json": "results", "run.json": "manifest"}.get(Path(path).name)
        if name and reached(name):
            with results_module.replaced(Path(path)) as tmp:  # the temporary file a real write makes
                tmp.write_text('{"status": "half wri')
                die()
        original_write_json(path, data)

    results_module.write_json_atomic = write_json_atomic
    manifest_module.write_json_atomic = write_json_atomic

    original_write_text = results_module.write_text_atomic

    def write_text_atomic(path, text):  # results.json: RunWriter writes the text it checked
        if Path(path).name == "results.json" and reached("results"):
            with results_module.replaced(Path(path)) as tmp:
                tmp.write_text('{"status": "half wri')
                die()
        original_write_text(path, text)

    results_module.write_text_atomic = write_text_atomic
    evaluate([tasks], KillableModel(batch_size=4, log_file=call_log), output_dir=run_dir, command=COMMAND)


if __name__ == "__main__":
    main()
