"""The run's progress on stderr: Rich bars on a terminal, a plain line per interval otherwise (batch
jobs, CI, nohup), nothing with ``--quiet``.

The ETA comes from a smoothed rate of the answers the model gives (``Clock``); answers read back from the run
store or the cache are done, but say nothing about the model's speed: the engine reports them through the
hook's ``reused``. It is shown from the first answers on, and climbs no faster than time passes.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Callable, Optional

from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.text import Text

from proctor.cli.display import err_console
from proctor.core.errors import ProctorError

INTERVAL_ENV = "PROCTOR_PROGRESS_INTERVAL"  # seconds between plain progress lines (default 5)
OVERALL = "all tasks"


SMOOTHING_SECONDS = 20.0  # the smoothed rate's time constant: how fast the ETA follows a change of speed


@dataclass
class Clock:
    """One count of work: when it began, how much is done, how much of that was reused, and the ETA.

    The rate is the model's answers per second, exponentially smoothed over the samples the updates give (a
    sample: the answers computed since the last one, over the time since). The ETA set at an update is the work
    left at that rate, but it may rise above the previous one by at most the time since that was set (a slow
    stretch moves the finish only as far as the time it took); between updates it counts down, never up."""

    total: int = 0
    done: int = 0
    reused: int = 0
    start: Optional[float] = None
    running: bool = False  # answers have come in: the start is fixed
    rate: Optional[float] = None  # computed answers per second, smoothed
    sampled_at: Optional[float] = None  # when the rate last took a sample
    sampled: int = 0  # answers computed by then
    eta_set: Optional[float] = None  # the ETA as of eta_set_at
    eta_set_at: float = 0.0
    eta_total: int = 0  # the total it was set for: more work announced may raise it at once

    def elapsed(self, now: float) -> Optional[float]:
        return None if self.start is None else max(0.0, now - self.start)

    def observe(self, now: float, estimate: Optional[float] = None) -> None:
        """Take the counts as of ``now``: a rate sample when answers were computed, and a new ETA (``estimate``:
        the seconds left as the caller knows them better than this clock's own rate, clamped the same way)."""
        if self.start is None:
            return
        computed = self.done - self.reused
        since = self.sampled_at if self.sampled_at is not None else self.start
        if computed > self.sampled and now > since:
            sample = (computed - self.sampled) / (now - since)
            weight = 1.0 if self.rate is None else 1.0 - math.exp(-(now - since) / SMOOTHING_SECONDS)
            self.rate = sample if self.rate is None else weight * sample + (1.0 - weight) * self.rate
            self.sampled_at, self.sampled = now, computed
        if estimate is None:
            if self.rate is None or self.rate <= 0:
                return
            estimate = max(0, self.total - self.done) / self.rate
        if self.eta_set is not None and self.total == self.eta_total:
            estimate = min(estimate, self.eta_set + (now - self.eta_set_at))
        self.eta_set, self.eta_set_at, self.eta_total = estimate, now, self.total

    def eta(self, now: float) -> Optional[float]:
        """Seconds left; None before the model's first answers."""
        if self.start is None or self.done - self.reused <= 0:
            return None
        if self.done >= self.total:
            return 0.0
        if self.eta_set is None:
            return None
        return max(0.0, self.eta_set - max(0.0, now - self.eta_set_at))


def clock_text(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-:--:--"
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class ProgressState:
    """Per-task clocks and the overall one, fed by the engine's progress hook."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.tasks: dict[str, Clock] = {}
        self.overall = Clock()

    def update(self, name: str, done: int, total: int) -> Clock:
        clock = self.tasks.setdefault(name, Clock())
        now = self.now()
        if done == 0 and not clock.running:  # announced, or about to send its requests: its clock starts now
            clock.start = now
        clock.done, clock.total = done, total
        if done and not clock.running:
            clock.running = True
            self.overall.eta_set = None  # a task with its own speed began: the run's ETA is new, not a jump
            if not self.overall.running:  # the run's clock: from the first task that began
                self.overall.start, self.overall.running = clock.start, True
        self.overall.done = sum(c.done for c in self.tasks.values())
        self.overall.total = sum(c.total for c in self.tasks.values())
        clock.observe(now)
        self.overall.observe(now, self._overall_estimate(now))
        return clock

    def _overall_estimate(self, now: float) -> Optional[float]:
        """The run's seconds left: each running task's ETA (its own rate: a generation task runs far slower per
        request than a scoring one), and the tasks not yet begun at the run's rate so far."""
        if self.overall.rate is None:
            return None
        seconds, waiting = 0.0, 0
        for clock in self.tasks.values():
            left = clock.eta(now)
            if left is not None:
                seconds += left
            else:
                waiting += max(0, clock.total - clock.done)
        return seconds + waiting / self.overall.rate

    def reused(self, name: str, count: int) -> None:
        self.tasks.setdefault(name, Clock()).reused += count
        self.overall.reused += count


class _ElapsedColumn(ProgressColumn):
    def __init__(self, clocks: dict[int, Clock], now: Callable[[], float]) -> None:
        super().__init__()
        self.clocks, self.now = clocks, now

    def render(self, task: Task) -> Text:
        clock = self.clocks.get(task.id)
        return Text(
            clock_text(clock.elapsed(self.now()) if clock and clock.running else None), style="progress.elapsed"
        )


class _EtaColumn(_ElapsedColumn):
    def render(self, task: Task) -> Text:
        clock = self.clocks.get(task.id)
        return Text("ETA " + clock_text(clock.eta(self.now()) if clock else None), style="progress.remaining")


class progress_display:
    """``with progress_display(quiet) as hook``: the hook to hand ``evaluate``, or None when quiet.

    ``live`` picks Rich bars (default: when stderr is a terminal) or plain lines."""

    def __init__(self, quiet: bool, live: Optional[bool] = None, now: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.live = err_console.is_terminal if live is None else live
        self.state = ProgressState(now)
        self.interval = _interval()
        self.last_line: Optional[float] = None
        self.finished: set[str] = set()
        self.running = False

    def __enter__(self) -> progress_display | None:
        if self.quiet:
            return None
        if self.live:
            self.ids: dict[str, TaskID] = {}
            self.by_id: dict[int, Clock] = {}
            now = self.state.now
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _ElapsedColumn(self.by_id, now),
                _EtaColumn(self.by_id, now),
                console=err_console,
                transient=False,
            )
            self.overall_id = self.progress.add_task(f"[bold]{OVERALL}[/bold]", total=0)
            self.by_id[self.overall_id] = self.state.overall
        return self

    # the engine's progress hook: (task, done, total), and reused(task, n) for answers it already held
    def __call__(self, name: str, done: int, total: int) -> None:
        clock = self.state.update(name, done, total)
        if self.live:
            self._draw(name, clock)
        else:
            self._line(name, clock)

    def reused(self, name: str, count: int) -> None:
        self.state.reused(name, count)

    def _draw(self, name: str, clock: Clock) -> None:
        if not self.running:  # started with the first task announced: an input error shows no empty bar
            self.running = True
            self.progress.start()
        if name not in self.ids:
            self.ids[name] = self.progress.add_task(name, total=clock.total)
            self.by_id[self.ids[name]] = clock
        self.progress.update(self.ids[name], completed=clock.done, total=clock.total)
        overall = self.state.overall
        self.progress.update(self.overall_id, completed=overall.done, total=overall.total)

    def _line(self, name: str, clock: Clock) -> None:
        """A line when a task finishes, and otherwise at most one per interval (only as answers come in)."""
        now = self.state.now()
        finished = clock.total > 0 and clock.done >= clock.total and name not in self.finished
        due = clock.done > 0 and (self.last_line is None or now - self.last_line >= self.interval)
        if not (finished or due):
            return
        if finished:
            self.finished.add(name)
        self.last_line = now
        overall = self.state.overall
        share = f" ({100 * overall.done / overall.total:.0f}%)" if overall.total else ""
        err_console.print(
            f"progress: {name} {clock.done}/{clock.total}{' done' if finished else ''} · {OVERALL} "
            f"{overall.done}/{overall.total}{share} · elapsed {clock_text(overall.elapsed(now))} · "
            f"ETA {clock_text(overall.eta(now))}",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )

    def __exit__(self, *exc: object) -> None:
        if not self.quiet and self.live and self.running:
            self.progress.stop()


def _interval() -> float:
    raw = os.environ.get(INTERVAL_ENV, "5")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # NaN too
        raise ProctorError(f"{INTERVAL_ENV} takes a number of seconds >= 0, got '{raw}'")
    return value
