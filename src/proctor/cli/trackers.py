"""Experiment trackers on the command line: ``proctor run --log-to`` (checked before the run, logged after it)
and ``proctor log RUN_DIR --to``; what is logged and how is ``runs/trackers/``."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from proctor.cli.display import console, err_console
from proctor.core.errors import ProctorError

if TYPE_CHECKING:  # the trackers' modules are imported when a run is logged
    from proctor.runs.trackers import RunContents, Target


def tracker_targets(texts: Optional[List[str]], flag: str = "--log-to") -> list[Target]:
    """The flag's values parsed and their libraries found: a typo or a missing library fails before a run."""
    if not texts:
        return []
    from proctor.runs.trackers import check_installed, parse_targets

    targets = parse_targets(texts, flag)
    check_installed(targets, flag)
    return targets


def log_finished(run_dir: Path, targets: list[Target]) -> bool:
    """A finished run folder logged to each tracker (``log_each``); whether all logged. A folder that does not read
    as a finished run is an error here, after ``proctor run`` (its results are printed and kept)."""
    if not targets:
        return True
    from proctor.runs.trackers import read_contents

    try:
        contents = read_contents(run_dir)
    except ProctorError as exc:
        err_console.print(f"[bold red]error:[/bold red] cannot log the run to trackers: {exc}", highlight=False)
        return False
    return log_each(contents, targets)


def log_each(contents: RunContents, targets: list[Target]) -> bool:
    """Each tracker in turn; one that fails is an error naming it and the command that logs the run, and the
    others still log (the run folder is complete and untouched either way). Whether all logged."""
    from proctor.runs.trackers import log_to

    ok = True
    for target in targets:
        try:
            console.print(log_to(contents, target).line(), highlight=False, soft_wrap=True)
        except ProctorError as exc:
            ok = False
            run_dir = contents.run_dir
            err_console.print(
                f"[bold red]error:[/bold red] {exc}\nThe run is complete in {run_dir}; log it with: "
                f"proctor log {shlex.quote(str(run_dir))} --to {shlex.quote(target.text)}",
                highlight=False,
                soft_wrap=True,
            )
    return ok
