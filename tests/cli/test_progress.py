"""The CLI progress display: a bar per task plus an overall bar, with elapsed time and ETA; nothing when quiet."""

from __future__ import annotations

from proctor import evaluate
from proctor.cli.progress import progress_display
from tests.support.fakes import FakeModel, write_tasks


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
