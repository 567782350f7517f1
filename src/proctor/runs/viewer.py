"""``proctor view``: every run folder under a folder, in the browser, offline.

A local server (the standard library's, on 127.0.0.1 only) answers the page (``report.render_page``:
the runs table), ``/api/samples?key=`` with a run's samples.jsonl lines (the page reads them),
``/api/run?key=`` with its summary fragment made from results.json, and ``/api/calibration?key=``
with the summary's calibration section (which reads every sample); both made when first asked for
and kept while the run's files are unchanged. ``export_folder`` writes the same
page as one file with every run embedded (no server, no network). Only regular files inside the folder are
read, and only requests addressed to a loopback name are answered (``runs/served_files.py``).
"""

from __future__ import annotations

import json
import os
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from proctor.core.errors import ProctorError
from proctor.runs.report import render_page, run_calibration, run_summary, script_json, static_page
from proctor.runs.report_data import RunRow, run_entry
from proctor.runs.results import write_output
from proctor.runs.run_exports import samples_text
from proctor.runs.served_files import NotServed, check_run_files, loopback_host
from proctor.runs.task_settings import CHANGE_CONTENT, ROWS_ONLY, SETTING_NAMES

RUN_MARKERS = ("results.json", "run.json")
CACHED_RUNS = 16  # run summaries kept in memory
SKIPPED_FOLDERS = {"lm_eval", "tasks", "__pycache__", "node_modules"}


def find_runs(folder: Path) -> list[Path]:
    """Run folders under ``folder`` (the folder itself included): those holding results.json or run.json.

    A run folder is not searched further (its lm_eval/ and tasks/ are its own); hidden folders are skipped.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ProctorError(f"{folder} is not a folder")
    found = []
    for root, dirs, files in os.walk(folder, onerror=None):
        if any(marker in files for marker in RUN_MARKERS):
            found.append(Path(root))
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
    return sorted(found)


def _key(folder: Path, run_dir: Path) -> str:
    rel = run_dir.relative_to(folder).as_posix()
    return rel if rel != "." else run_dir.resolve().name


def index(folder: Path) -> list[tuple[RunRow, Path]]:
    """Each run's row of the runs table, with its folder. A folder with run.json only has not finished a task yet."""
    rows = []
    for run_dir in find_runs(folder):
        try:
            check_run_files(folder, run_dir)
        except NotServed as exc:  # its row says why; nothing of it is read
            rows.append((_no_results(_key(folder, run_dir), "not served", str(exc)), run_dir))
            continue
        if (run_dir / "results.json").exists():
            entry = run_entry(run_dir, _key(folder, run_dir))
        else:
            why = "no results.json yet: no task has finished"
            entry = _no_results(_key(folder, run_dir), "started (no results yet)", why)
        rows.append((entry, run_dir))
    return rows


def _no_results(key: str, status: str, why: str) -> RunRow:
    """The row of a run whose results are not read: one that has not finished a task, or one not served."""
    return {
        "key": key,
        "model": "?",
        "created": None,
        "status": status,
        "tasks": [],
        "n_samples": 0,
        "key_metrics": [],
        "settings": {},
        "error": why,
    }


def export_folder(folder: Path, path: Path) -> Path:
    """The viewer over every run under ``folder`` as one self-contained HTML file."""
    runs = index(folder)
    if not runs:
        raise ProctorError(f"no run folder (results.json or run.json) under {folder}")
    return write_output(path, static_page(runs, title=f"proctor runs · {Path(folder).resolve().name}"))


class Viewer:
    """What the server answers; each run's payload is read once and kept while its files are unchanged."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise ProctorError(f"{folder} is not a folder")
        self._runs: dict[str, Path] = {}
        # (run, part) -> (its files' (mtime, size) or None each, the answer built from them)
        self._cache: dict[tuple[str, str], tuple[tuple[tuple[int, int] | None, ...], bytes]] = {}
        self._lock = threading.Lock()

    def page(self) -> bytes:
        runs = index(self.folder)
        with self._lock:
            self._runs = {entry["key"]: run_dir for entry, run_dir in runs}
        data = {
            "mode": "served",
            "runs": [entry for entry, _ in runs],
            "start": "",
            "setting_names": SETTING_NAMES,
            "content_settings": sorted(CHANGE_CONTENT),
            "rows_only_settings": sorted(ROWS_ONLY),
        }
        return render_page(f"proctor runs · {self.folder.resolve().name}", script_json(data), []).encode("utf-8")

    def _folder(self, key: str) -> Path | None:
        with self._lock:
            run_dir = self._runs.get(key)
        if run_dir is None:
            self.page()  # a run that appeared since the page was drawn
            run_dir = self._runs.get(key)
        if run_dir is not None:
            check_run_files(self.folder, run_dir)  # as they are now: a file may have become a link since
        return run_dir

    def samples(self, key: str) -> bytes | None:
        """A run's samples.jsonl lines (raises ``ProctorError`` where the file does not read, e.g. a folder)."""
        run_dir = self._folder(key)
        return None if run_dir is None else samples_text(run_dir).encode("utf-8")

    def run(self, key: str, part: str = "summary") -> bytes | None:
        """A run's summary (from results.json: at once) or its calibration section (reads every sample), as JSON."""
        run_dir = self._folder(key)
        if run_dir is None:
            return None
        stamp = tuple(
            (p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None
            for p in (run_dir / "results.json", run_dir / "samples.jsonl")
        )
        cached = self._cache.get((key, part))
        if cached and cached[0] == stamp:
            return cached[1]
        try:
            if part == "summary":
                summary, error = run_summary(run_dir, with_samples=False)
            else:
                summary, error = run_calibration(run_dir), None
        except ProctorError as exc:
            summary, error = "", str(exc)
        body = json.dumps({"summary": summary, "error": error}, ensure_ascii=False).encode("utf-8")
        with self._lock:
            self._cache[(key, part)] = (stamp, body)
            while len(self._cache) > CACHED_RUNS:  # the oldest first: a dict keeps insertion order
                self._cache.pop(next(iter(self._cache)))
        return body


def make_handler(viewer: Viewer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "proctor-view"

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            url = urlsplit(self.path)
            if not loopback_host(self.headers.get("Host")):  # another site's name for 127.0.0.1 (DNS rebinding)
                why = "proctor view answers only requests addressed to localhost, 127.0.0.1 or [::1]"
                return self._send(HTTPStatus.FORBIDDEN, why.encode("utf-8"), "text/plain; charset=utf-8")
            try:
                if url.path in ("/", "/index.html"):
                    return self._send(HTTPStatus.OK, viewer.page(), "text/html; charset=utf-8")
                if url.path in ("/api/run", "/api/calibration", "/api/samples"):
                    key = (parse_qs(url.query).get("key") or [""])[0]
                    body = (
                        viewer.samples(key)
                        if url.path == "/api/samples"
                        else viewer.run(key, "summary" if url.path == "/api/run" else "calibration")
                    )
                    if body is None:
                        return self._send(HTTPStatus.NOT_FOUND, b'{"error": "no such run"}', "application/json")
                    kind = "text/plain" if url.path == "/api/samples" else "application/json"
                    return self._send(HTTPStatus.OK, body, kind + "; charset=utf-8")
                if url.path == "/favicon.ico":  # browsers ask for one; the page has none
                    return self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
                self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain; charset=utf-8")
            except (BrokenPipeError, ConnectionResetError):  # the browser went away mid-answer
                pass
            except NotServed as exc:  # a link out of the folder, a FIFO, a device: not read
                self._send(HTTPStatus.FORBIDDEN, str(exc).encode("utf-8"), "text/plain; charset=utf-8")
            except ProctorError as exc:  # a run's file that does not read: the page shows why
                self._send(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc).encode("utf-8"), "text/plain; charset=utf-8")

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
            pass  # no line per request on the console

    return Handler


def serve(folder: Path, port: int = 8000) -> ThreadingHTTPServer:
    """A server for ``folder`` on 127.0.0.1 (port 0: any free port); the caller runs ``serve_forever``."""
    viewer = Viewer(folder)
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(viewer))
    except OSError as exc:
        raise ProctorError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc} (choose another --port, or 0 for any free one)"
        ) from None
    server.daemon_threads = True
    return server
