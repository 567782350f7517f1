"""Ctrl-C inside ``proctor.evaluate`` (the Python API): the ``KeyboardInterrupt`` goes on to the caller, after
a log line saying how many answers the run folder's store kept; evaluating again with the same folder
resumes from them."""

from __future__ import annotations

import logging

import pytest

from proctor import evaluate
from tests.support.fakes import FakeModel, write_tasks


class StopsAfter(FakeModel):
    """Ctrl-C pressed during the model's fourth call."""

    def _log(self, kind: str, n: int) -> None:
        super()._log(kind, n)
        if len(self.calls) == 4:
            raise KeyboardInterrupt


def test_ctrl_c_in_evaluate_logs_what_was_kept_and_a_rerun_resumes(tmp_path, caplog):
    tasks = write_tasks(tmp_path / "tasks")
    run = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="proctor.api"), pytest.raises(KeyboardInterrupt):
        evaluate([tasks], StopsAfter(batch_size=4), output_dir=run)
    kept = [r.getMessage() for r in caplog.records if r.getMessage().startswith("interrupted:")]
    assert kept == [
        f"interrupted: 12 answer(s) saved in {run / 'store.sqlite'}; run again with the same output " "folder to resume"
    ]  # three calls of four answered before the fourth was interrupted
    again, fresh = FakeModel(batch_size=4), FakeModel(batch_size=4)
    finished = evaluate([tasks], again, output_dir=run)
    whole = evaluate([tasks], fresh, output_dir=tmp_path / "whole")
    assert {t: d["metrics"] for t, d in finished.tasks.items()} == {t: d["metrics"] for t, d in whole.tasks.items()}
    assert sum(n for _, n in again.calls) == sum(n for _, n in fresh.calls) - 12  # the kept answers not asked again
