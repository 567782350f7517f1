"""``report.html``: one self-contained page (inline CSS, JS and SVG; no network) for a run folder.

The page is the viewer's (runs/viewer.py) with one run in it: summary table with standard errors,
group roll-ups, per-task charts (each metric with a 95% interval; breakdowns where the task has
them), a calibration plot for every task scored by per-choice probabilities, and a sortable,
searchable browser over every sample. Markup is in ``runs/templates`` (Jinja2, autoescaped);
``runs/report_data.py`` computes what the templates show (``runs/report_charts.py`` the charts' geometry)
and this module renders and writes the page. The samples go into the page as samples.jsonl's own lines;
``runs/static/viewer.js`` turns each record into what a card shows (every dialect writes the same
fields for choices and for generations: docs/results.md), in the browser, where a run of 100,000
samples is read in about a second.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from proctor.core.errors import ProctorError
from proctor.runs.documents import ResultsDocument, SampleLine
from proctor.runs.report_data import N_BINS, RunRow, calibrations, run_entry, summary_context
from proctor.runs.results import write_output
from proctor.runs.run_exports import iter_samples, load_results, samples_text
from proctor.runs.task_settings import CHANGE_CONTENT, ROWS_ONLY, SETTING_NAMES

if TYPE_CHECKING:
    import jinja2

REPORT_FILE = "report.html"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("proctor.runs", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["num_attr"] = lambda v: "" if v is None else json.dumps(v)
    return env


def static_text(name: str) -> str:
    """A file shipped in ``runs/static`` (the page's script and style sheet)."""
    from importlib.resources import files

    return files("proctor.runs").joinpath("static").joinpath(name).read_text(encoding="utf-8")


def script_json(value: object) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` that could end it."""
    return script_text(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))


def script_text(json_text: str) -> str:
    """JSON text (or JSON lines) made safe inside ``<script>``: outside strings JSON has no ``<``, ``>`` or
    ``&``, so their escapes change no value."""
    return json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def fmt(value: object) -> str:
    """How the report prints a metric: 4 decimals (a count: whole), '—' for none, 'nan' for NaN."""
    if value is None:
        return "—"
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, int) and not isinstance(value, bool):  # a count (null_count): a whole number
        return str(value)
    if isinstance(value, (int, float)):
        return f"{value:.4f}"
    return str(value)


def render_summary(results: ResultsDocument, records: list[SampleLine] | None) -> str:
    return environment().get_template("summary.html.j2").render(**summary_context(results, records))


def render_calibration(results: ResultsDocument, records: list[SampleLine]) -> str:
    return (
        environment()
        .get_template("calibration.html.j2")
        .render(calibrations=calibrations(results, records), bins=N_BINS)
    )


def render_page(title: str, data: str, embedded: list[dict[str, str | None]]) -> str:
    """The viewer's page: runs index, run, comparison; ``embedded`` carries each run's summary and samples
    (a static page), or is empty when a server answers for them."""
    return (
        environment()
        .get_template("page.html.j2")
        .render(title=title, css=static_text("viewer.css"), js=static_text("viewer.js"), data=data, embedded=embedded)
    )


def _layout_error(run_dir: Path, exc: Exception) -> str:
    return f"{run_dir}/results.json does not have proctor's layout ({type(exc).__name__}: {exc})"


def readable_records(run_dir: Path, strict: bool = False) -> list[SampleLine]:
    """The run's records up to a torn line, if any (the page names that line: it reads the lines itself);
    ``strict``: a line that is not a record is an error naming it (``proctor report``)."""
    records: list[SampleLine] = []
    try:
        for record in iter_samples(run_dir):
            if isinstance(record, dict):
                records.append(record)
    except ProctorError:
        if strict:
            raise
    return records


def run_summary(run_dir: Path, with_samples: bool = True, strict: bool = False) -> tuple[str, str | None]:
    """A run's summary fragment, or why there is none (a results.json not in proctor's layout). Without
    ``with_samples`` it is made from results.json alone (at once, whatever the run's size) and its
    calibration section is left for ``run_calibration``."""
    results = load_results(run_dir)
    try:
        return render_summary(results, readable_records(run_dir, strict) if with_samples else None), None
    except (AttributeError, TypeError, KeyError) as exc:  # a results.json that is JSON but not proctor's layout
        return "", _layout_error(run_dir, exc)


def run_calibration(run_dir: Path) -> str:
    """The calibration section of a run's summary (reads every sample)."""
    results = load_results(run_dir)
    try:
        return render_calibration(results, readable_records(run_dir))
    except (AttributeError, TypeError, KeyError) as exc:
        raise ProctorError(_layout_error(run_dir, exc)) from None


def static_page(runs: list[tuple[RunRow, Path]], title: str, start: str = "", strict: bool = False) -> str:
    """One file holding every run given (their summaries and samples embedded): no server, no network."""
    embedded = []
    for entry, run_dir in runs:
        if entry.get("error"):
            embedded.append({"summary": "", "samples": "", "error": entry["error"]})
            continue
        summary, error = run_summary(run_dir, strict=strict)
        try:
            samples = samples_text(run_dir)
        except ProctorError as exc:  # samples.jsonl unreadable (a folder, say): the run's row says why
            if strict:
                raise
            samples, error = "", error or str(exc)
        embedded.append({"summary": summary, "samples": script_text(samples), "error": error})
    data = {
        "mode": "static",
        "runs": [entry for entry, _ in runs],
        "start": start,
        "setting_names": SETTING_NAMES,
        "content_settings": sorted(CHANGE_CONTENT),
        "rows_only_settings": sorted(ROWS_ONLY),
    }
    return render_page(title, script_json(data), embedded)


def render_report(run_dir: Path) -> str:
    run_dir = Path(run_dir)
    load_results(run_dir)  # a folder without results.json is refused here, with its reason
    entry = run_entry(run_dir, run_dir.resolve().name)
    # one run asked for by name: a damaged samples.jsonl is an error naming its line, not a page without those samples
    return static_page([(entry, run_dir)], title=f"proctor report · {entry['model']}", start=entry["key"], strict=True)


def write_report(run_dir: Path, path: Path | None = None) -> Path:
    target = path or Path(run_dir) / REPORT_FILE
    return write_output(target, render_report(Path(run_dir)))
