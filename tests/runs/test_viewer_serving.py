"""The viewer serves only what it should: regular files inside the runs folder (no symlink that leads out, no
FIFO), and only to requests whose Host header is a loopback name (DNS rebinding). A real `proctor view` server
on 127.0.0.1, asked with raw HTTP requests."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from proctor import evaluate
from proctor.runs.served_files import loopback_host
from tests.conftest import REPO
from tests.support.fakes import FakeModel, write_tasks

SECRET = "not-for-the-browser-7f3a"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("served")
    tasks = write_tasks(tmp / "tasks", n_mc=8, n_gen=2, star_gold=True)
    runs = tmp / "runs"
    for name in ("a", "leak", "leak_results", "fifo", "inside"):
        evaluate([tasks], FakeModel(), output_dir=runs / name, export=False)
    secret = tmp / "secret.txt"  # outside the runs folder
    secret.write_text(json.dumps({"task": "mc_alpha", "id": SECRET}) + "\n")
    (runs / "leak" / "samples.jsonl").unlink()
    (runs / "leak" / "samples.jsonl").symlink_to("/etc/passwd")
    (runs / "leak_results" / "results.json").unlink()
    (runs / "leak_results" / "results.json").symlink_to(secret)
    (runs / "fifo" / "samples.jsonl").unlink()
    os.mkfifo(runs / "fifo" / "samples.jsonl")  # reading it would wait for a writer forever
    (runs / "inside" / "samples.jsonl").unlink()
    (runs / "inside" / "samples.jsonl").symlink_to(runs / "a" / "samples.jsonl")  # a link that stays inside
    return runs


@pytest.fixture(scope="module")
def port(folder):
    """`proctor view FOLDER --port 0` in a fresh process; the port from the line it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "proctor.cli", "view", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    match = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
    if not match:
        proc.kill()
        pytest.fail(f"no address printed: {proc.stderr.read()}")
    yield int(match.group(1))
    proc.terminate()
    proc.wait(timeout=30)


def get(port: int, path: str, host: str | None = "default") -> tuple[int, bytes]:
    """GET ``path`` with the Host header given (None: none at all), as a browser or a rebinding page would."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        if host is not None:
            connection.putheader("Host", f"127.0.0.1:{port}" if host == "default" else host.format(port=port))
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "evil.example", "localhost.evil.example:{port}", "127.0.0.1.nip.io:{port}", None]
)
def test_a_request_not_addressed_to_a_loopback_name_is_refused(port, host):
    for path in ("/", "/api/samples?key=a", "/api/run?key=a"):
        status, body = get(port, path, host)
        assert status == 403 and b"localhost, 127.0.0.1 or [::1]" in body
        assert b"mc_alpha" not in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST", "localhost:9"])
def test_loopback_names_are_answered(port, folder, host):
    status, body = get(port, "/api/samples?key=a", host)
    assert status == 200 and body == (folder / "a" / "samples.jsonl").read_bytes()


def test_loopback_host_names():
    assert [loopback_host(h) for h in ("localhost", "127.0.0.1:80", "[::1]:8000", "localhost.:1")] == [True] * 4
    refused = ("", None, "127.0.0.2", "[::2]", "localhost:x", "localhost:80:80", "evil@localhost", "0.0.0.0")
    assert [loopback_host(h) for h in refused] == [False] * len(refused)


def test_a_symlink_that_leads_out_is_not_served(port):
    status, body = get(port, "/api/samples?key=leak")
    assert status == 403 and b"root:" not in body and b"outside the folder being viewed" in body
    status, body = get(port, "/api/run?key=leak_results")
    assert status == 403 and SECRET.encode() not in body
    status, body = get(port, "/api/calibration?key=leak")
    assert status == 403 and b"root:" not in body
    # the runs table names both, and reads nothing of them
    status, page = get(port, "/")
    data = json.loads(re.search(rb'<script type="application/json" id="viewer-data">(.*?)</script>', page, re.S)[1])
    rows = {r["key"]: r for r in data["runs"]}
    assert rows["leak"]["status"] == "not served" and "samples.jsonl: not served" in rows["leak"]["error"]
    assert rows["leak_results"]["status"] == "not served" and SECRET.encode() not in page


def test_a_fifo_is_refused_at_once(port):
    status, body = get(port, "/api/samples?key=fifo")  # the 30-second socket timeout would end a hang
    assert status == 403 and b"not a regular file" in body


def test_a_link_inside_the_folder_is_served(port, folder):
    status, body = get(port, "/api/samples?key=inside")
    assert status == 200 and body == (folder / "a" / "samples.jsonl").read_bytes()


def test_the_exported_page_embeds_nothing_from_outside(folder, tmp_path):
    page = tmp_path / "runs.html"
    done = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "view", str(folder), "--export", str(page)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert SECRET not in text and "root:x:0:0" not in text and "not served" in text
