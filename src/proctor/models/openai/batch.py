"""Generation through an OpenAI-compatible Batch API (OpenAI's Files and Batches endpoints), as SEA-HELM sends
calls when a task's judge says ``batch_api_calls: true`` (and as its ``openai`` model type always does).

``openai_compat.BatchedOpenAIModel`` is an ``OpenAIModel`` whose generation goes in batches, through the
``BatchRunner`` here. ``runs/executor.execute`` hands it every chunk of a call at once (``map_chunks``); per
chunk and endpoint the runner

1. writes one JSONL line per request, ``{"custom_id", "method": "POST", "url": "/v1/chat/completions"
   (or "/v1/completions"), "body"}``, the body being exactly what the online path would POST;
2. uploads the file (``POST /files``, multipart, ``purpose=batch``) and creates the batch (``POST /batches``:
   ``input_file_id``, ``endpoint``, ``completion_window: 24h``);
3. polls ``GET /batches/{id}`` every ``batch_poll`` seconds until ``completed``, ``failed``, ``expired`` or
   ``cancelled`` (all chunks' batches are pending together);
4. reads the output file and the error file (``GET /files/{id}/content``), matching lines by ``custom_id``
   (output order is not input order), and hands the chunk's results back, so the run store commits them.

**Resume.** A batch's id is written to a journal before it is polled: one file per batch under
``batch_dir`` (default ``PROCTOR_HOME/openai-batches``), named by the SHA-256 of the server address and the
JSONL. Custom ids are made from each request's own body, so the same chunk gives the same JSONL in every run;
a run killed while a batch is pending finds its id there on the next run and polls that batch instead of
submitting a new one (a ``failed`` batch is forgotten and submitted again). The journal entry goes once the
chunk's results are handed back.

**Failures.** Lines in the error file, or missing from the output (an expired or cancelled batch), go into a
new batch, at most ``RETRY_ROUNDS`` more times; then the call fails naming the request and the server's error.
A ``failed`` batch (the server rejected the file) fails the call with the server's errors.

**Servers without the Batch API** (404, 405 or 501 on ``GET /batches``): generation goes one request at a time,
as without ``batch_api`` (warned once). Log-likelihoods always go one request at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence, cast

from proctor.core.model_requests import GenerateRequest, GenerateResult
from proctor.models.openai.http import ApiClient, ApiError, RequestBody, ServerReply
from proctor.models.reply_checks import Where, a_dict


class BatchedServer(Protocol):
    """What the Batch API asks of its model (``compat.OpenAIModel``, which imports this module: named by what it
    gives, so the two modules do not import each other)."""

    client: ApiClient
    shown_url: str
    batch_poll: float
    batch_dir: str | None

    def generation_call(self, r: GenerateRequest) -> tuple[str, RequestBody] | GenerateResult: ...

    def generation_result(self, r: GenerateRequest, path: str, data: ServerReply) -> GenerateResult: ...


log = logging.getLogger(__name__)

COMPLETION_WINDOW = "24h"
RETRY_ROUNDS = 2  # new batches for the lines that failed, after the first
BATCH_CHUNK = 2000  # requests per chunk (one batch per chunk and endpoint); OpenAI takes up to 50,000
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
NO_BATCH_API = frozenset({404, 405, 501})


class BatchJournal:
    """Pending batches by key: a JSON file each, written atomically, in ``folder``."""

    def __init__(self, folder: str | Path | None = None) -> None:
        if folder is None:
            from proctor.core.home import proctor_home

            folder = proctor_home() / "openai-batches"
        self.folder = Path(folder).expanduser()

    def get(self, key: str) -> dict[str, object] | None:
        try:  # a record put wrote
            return cast("dict[str, object]", json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: Mapping[str, object]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".batch-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(record, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.folder / f"{key}.json")

    def forget(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.folder / f"{key}.json").unlink()


@dataclass
class _Chunk:
    index: int
    requests: Sequence[GenerateRequest]
    results: dict[int, GenerateResult] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # journal entries of its batches, forgotten once it is handed back
    open: int = 0  # its submissions not finished yet


@dataclass
class _Submission:
    chunk: _Chunk
    path: str  # "/chat/completions" or "/completions"
    items: dict[str, tuple[int, RequestBody]]  # custom_id -> (position in the chunk, body)
    round: int
    key: str = ""
    content: bytes = b""
    batch_id: str = ""  # set by BatchRunner._submit, before the submission is polled


def _custom_ids(calls: list[tuple[int, RequestBody]]) -> dict[str, tuple[int, RequestBody]]:
    """A custom id per call, from its body (the same requests give the same ids in every run)."""
    out: dict[str, tuple[int, RequestBody]] = {}
    for position, body in calls:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:20]
        n = 0
        while f"proctor-{digest}-{n}" in out:
            n += 1
        out[f"proctor-{digest}-{n}"] = (position, body)
    return out


def _batch_line(raw: str, where: Where) -> dict[str, object]:
    """One line of a batch's output or error file: a JSON object (``custom_id``, ``response``, ``error``)."""
    try:
        line = json.loads(raw)
    except ValueError:
        raise where.error("(the line)", f"is not JSON: {raw[:120]!r}") from None
    return a_dict(line, where, "(the line)")


def _error_text(line: dict[str, object]) -> str:
    """What the server says went wrong with one line of a batch (its ``error``, or the failed response's body);
    any shape (an error given as text, a body that is not an object) is shown, not read as the API's."""
    error = line.get("error")
    error = error if isinstance(error, dict) else ({"message": str(error)} if error else {})
    response = line.get("response")
    response = response if isinstance(response, dict) else {}
    body = response.get("body")
    message = error.get("message")
    if not message and isinstance(body, dict):
        inner = body.get("error")
        message = inner.get("message") if isinstance(inner, dict) else inner
    status = response.get("status_code")
    return f"{'HTTP ' + str(status) + ': ' if status else ''}{message or error.get('code') or json.dumps(line)[:300]}"


class BatchRunner:
    """The Batch API for one ``OpenAIModel`` (``openai_compat.BatchedOpenAIModel`` holds one): it uses the
    model's client, its request bodies (``generation_call``) and its reading of replies (``generation_result``)."""

    def __init__(self, model: BatchedServer) -> None:
        self.model = model
        self.client = model.client
        self.base_url = model.shown_url  # credentials written in the URL masked: it names journal entries and errors
        self.poll = model.batch_poll
        self._ok: bool | None = None
        self._journal = BatchJournal(model.batch_dir)

    def available(self) -> bool:
        """Whether the server has the Batch API (asked once: ``GET /batches?limit=1``)."""
        if self._ok is None:
            try:
                self.client.get("/batches?limit=1", max_retries=2)
                self._ok = True
            except ApiError as exc:
                if exc.status not in NO_BATCH_API:
                    raise
                log.warning(
                    "'%s' has no Batch API (HTTP %s on /batches): generation goes one request at a time",
                    self.base_url,
                    exc.status,
                )
                self._ok = False
        return self._ok

    def run(
        self, chunks: Sequence[Sequence[GenerateRequest]], done: Callable[[int, Sequence[GenerateResult]], None]
    ) -> None:
        """Each chunk's results, handed to ``done(index, results)`` as its batches complete."""
        self._run([_Chunk(k, list(chunk)) for k, chunk in enumerate(chunks)], done)

    # ------------------------------------------------------------------ batches
    def _run(self, chunks: list[_Chunk], done: Callable[[int, Sequence[GenerateResult]], None]) -> None:
        pending: list[_Submission] = []
        for chunk in chunks:
            by_path: dict[str, list[tuple[int, RequestBody]]] = {}
            for position, request in enumerate(chunk.requests):
                call = self.model.generation_call(request)
                if isinstance(call, GenerateResult):
                    chunk.results[position] = call
                else:
                    by_path.setdefault(call[0], []).append((position, call[1]))
            chunk.open = len(by_path)
            pending += [
                self._submit(_Submission(chunk, path, _custom_ids(calls), 0)) for path, calls in by_path.items()
            ]
            if not by_path:
                self._finish(chunk, done)
        while pending:
            still: list[_Submission] = []
            moved = False  # a batch finished in this pass
            for submission in pending:
                batch = self.client.get(f"/batches/{submission.batch_id}")
                if str(batch.get("status")) not in TERMINAL:
                    still.append(submission)
                    continue
                moved = True
                retry = self._collect(submission, batch)
                if retry is not None:
                    still.append(self._submit(retry))
                    continue
                submission.chunk.open -= 1
                if submission.chunk.open == 0:
                    self._finish(submission.chunk, done)
            if still and not moved:
                time.sleep(self.poll)
            pending = still

    def _submit(self, submission: _Submission) -> _Submission:
        """Create the submission's batch, or pick up the one a previous run created for the same lines."""
        url = "/v1" + submission.path
        lines = [
            {"custom_id": cid, "method": "POST", "url": url, "body": body}
            for cid, (_, body) in submission.items.items()
        ]
        submission.content = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        submission.key = hashlib.sha256(self.base_url.encode() + b"\0" + submission.content).hexdigest()
        submission.chunk.keys.append(submission.key)
        known = self._journal.get(submission.key)
        if known and known.get("batch_id"):
            try:
                batch = self.client.get(f"/batches/{known['batch_id']}")
                if batch.get("status") != "failed":
                    log.info(
                        "picking up batch %s (%d requests) left pending by an earlier run", batch["id"], len(lines)
                    )
                    submission.batch_id = batch["id"]
                    return submission
            except ApiError as exc:
                if exc.status not in (404,):
                    raise
            self._journal.forget(submission.key)
        uploaded = self.client.upload(
            "/files", f"proctor-{submission.key[:16]}.jsonl", submission.content, {"purpose": "batch"}
        )
        batch = self.client.request(
            "POST",
            "/batches",
            json={
                "input_file_id": uploaded["id"],
                "endpoint": url,
                "completion_window": COMPLETION_WINDOW,
                "metadata": {"proctor_key": submission.key[:64]},
            },
        )
        submission.batch_id = batch["id"]
        self._journal.put(
            submission.key,
            {
                "batch_id": batch["id"],
                "input_file_id": uploaded["id"],
                "base_url": self.base_url,
                "requests": len(lines),
                "created": time.time(),
            },
        )
        log.info("batch %s: %d requests to %s", batch["id"], len(lines), url)
        return submission

    def _collect(self, submission: _Submission, batch: ServerReply) -> _Submission | None:
        """Take a finished batch's answers; a submission of what failed when another round is allowed."""
        status = str(batch.get("status"))
        if status == "failed":
            self._journal.forget(submission.key)
            errors = (batch.get("errors") or {}).get("data") or []
            detail = "; ".join(str(e.get("message") or e) for e in errors[:3]) or "no reason given"
            raise ApiError(f"{self.base_url}: batch {batch.get('id')} failed: {detail}")
        answered: dict[str, ServerReply] = {}
        failed: dict[str, str] = {}
        for file_key in ("output_file_id", "error_file_id"):
            file_id = batch.get(file_key)
            if not file_id:
                continue
            content = self.client.get_bytes(f"/files/{file_id}/content").decode("utf-8", errors="replace")
            for number, raw in enumerate(content.splitlines(), 1):
                if not raw.strip():
                    continue
                line = _batch_line(raw, Where(f"{self.base_url}/files/{file_id}/content", f"line {number}"))
                custom_id = line.get("custom_id")
                if not isinstance(custom_id, str) or custom_id not in submission.items:
                    continue
                response = line.get("response") or {}
                status_code = response.get("status_code", 200) if isinstance(response, dict) else 500
                if (
                    not line.get("error")
                    and isinstance(status_code, int)
                    and status_code < 400
                    and isinstance(response, dict)  # (it is: a status below 400 came from it)
                    and isinstance(response.get("body"), dict)
                ):
                    answered[custom_id] = response["body"]
                else:
                    failed[custom_id] = _error_text(line)
        chunk = submission.chunk
        for custom_id, body in answered.items():
            position, _ = submission.items[custom_id]
            chunk.results[position] = self.model.generation_result(chunk.requests[position], submission.path, body)
            self.client.usage.add(body, 0)
        missing = {cid: item for cid, item in submission.items.items() if cid not in answered}
        if not missing:
            return None
        reasons = {cid: failed.get(cid, f"no answer in batch {batch.get('id')} ({status})") for cid in missing}
        if submission.round >= RETRY_ROUNDS:
            self._journal.forget(submission.key)
            first = next(iter(reasons.items()))
            raise ApiError(
                f"{self.base_url}: {len(missing)} request(s) got no answer from the Batch API after "
                f"{RETRY_ROUNDS + 1} batches (first: {first[0]}: {first[1]})"
            )
        log.warning(
            "batch %s: %d of %d requests got no answer (%s); sending them again in a new batch",
            batch.get("id"),
            len(missing),
            len(submission.items),
            next(iter(reasons.values())),
        )
        self._journal.forget(submission.key)
        return _Submission(chunk, submission.path, missing, submission.round + 1)

    def _finish(self, chunk: _Chunk, done: Callable[[int, Sequence[GenerateResult]], None]) -> None:
        done(chunk.index, [chunk.results[i] for i in range(len(chunk.requests))])
        for key in chunk.keys:  # after the results are handed back (committed to the run store by the caller)
            self._journal.forget(key)
