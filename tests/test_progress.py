"""The CLI progress display: a bar per task plus an overall bar, with ETA; nothing when quiet."""

from __future__ import annotations

from fakes import FakeModel, write_tasks

from proctor import evaluate
from proctor.cli.display import progress_display


def test_overall_bar_sums_every_announced_task(tmp_path):
    display = progress_display(quiet=False)
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
    assert any("ETA" in str(getattr(c, "text_format", "")) for c in display.progress.columns)


def test_quiet_mode_has_no_display():
    display = progress_display(quiet=True)
    assert display.__enter__() is None
    display.__exit__(None, None, None)
