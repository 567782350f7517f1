"""The CLI progress display: a bar per task plus an overall bar, with elapsed time and ETA; nothing when quiet."""

from __future__ import annotations

import pytest

from proctor import evaluate
from proctor.cli.progress import ProgressState, progress_display
from tests.support.fakes import FakeModel, write_tasks

pytestmark = pytest.mark.fast


def test_overall_bar_sums_every_announced_task(tmp_path):
    display = progress_display(quiet=False, live=True)
    hook = display.__enter__()
    try:
        tasks = write_tasks(tmp_path / "tasks", n_mc=5, n_gen=3)
        result = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", progress=hook)
        bars = {t.description: t for t in display.progress.tasks}
    finally:
        display.__exit__(None, None, None)
    unique = {name: t["requests"]["unique"] for name, t in result.tasks.items()}
    for name, n in unique.items():
        assert bars[name].total == n and bars[name].completed == n
    overall = bars["[bold]all tasks[/bold]"]
    assert overall.total == overall.completed == sum(unique.values())
    assert display.state.overall.eta(display.state.now()) == 0.0  # all done


def test_a_resumed_run_reports_its_stored_answers_as_reused(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=5, n_gen=3)
    first = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    display = progress_display(quiet=False, live=False)
    hook = display.__enter__()
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", progress=hook)
    display.__exit__(None, None, None)
    unique = {name: t["requests"]["unique"] for name, t in first.tasks.items()}
    assert {name: c.reused for name, c in display.state.tasks.items()} == unique  # every answer came from the store
    assert all(c.eta(display.state.now()) is None for c in display.state.tasks.values())  # no model work: no rate


def test_quiet_mode_has_no_display():
    display = progress_display(quiet=True)
    assert display.__enter__() is None
    display.__exit__(None, None, None)


class Ticks:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_eta_counts_down_between_updates_and_climbs_no_faster_than_time_passes():
    now = Ticks()
    state = ProgressState(now)
    state.update("a", 0, 1000)
    now.t = 10.0
    state.update("a", 100, 1000)  # 10 answers a second: 900 left take 90 s
    task = state.tasks["a"]
    assert task.eta(10.0) == pytest.approx(90.0)
    assert task.eta(40.0) == pytest.approx(60.0)  # a long forward call: it counts down, it does not climb
    assert task.eta(200.0) == 0.0
    now.t = 70.0
    state.update("a", 200, 1000)  # 100 answers in 60 s: the smoothed rate falls near 2/s (800 left: ~380 s)
    assert 1.5 < task.rate < 3.0
    assert task.eta(70.0) == pytest.approx(90.0 + 60.0)  # risen by the 60 s that passed, no more
    now.t = 71.0
    state.update("a", 202, 1000)
    assert task.eta(71.0) == pytest.approx(151.0)  # a second later: at most a second more


def test_one_fast_call_moves_the_smoothed_rate_only_part_way():
    now = Ticks()
    state = ProgressState(now)
    state.update("a", 0, 10_000)
    for second in range(1, 31):  # 10 answers a second for 30 s
        now.t = float(second)
        state.update("a", 10 * second, 10_000)
    assert state.tasks["a"].rate == pytest.approx(10.0)
    now.t = 31.0
    state.update("a", 400, 10_000)  # 100 answers in one second
    assert 10.0 < state.tasks["a"].rate < 20.0


def test_the_runs_eta_adds_each_running_tasks_own_rate():
    now = Ticks()
    state = ProgressState(now)
    state.update("scored", 0, 100)  # both announced before the first model call: the total is known
    state.update("generated", 0, 10)
    assert state.overall.total == 110
    now.t = 1.0
    state.update("scored", 100, 100)  # 100 scored in a second
    now.t = 2.0
    state.update("generated", 0, 10)  # begins
    now.t = 4.0
    state.update("generated", 1, 10)  # one answer in 2 s: 9 left take 18 s, not 9/100ths of a second
    assert state.overall.eta(4.0) == pytest.approx(18.0)
