"""HTTP for the OpenAI-compatible backend: retries with backoff, a per-request timeout and an overall
deadline, bounded concurrency, token usage, and an API key that never leaves the ``Authorization`` header.

Only transport faults are retried (a dropped connection, a timeout, a deadline passed, 429 and 5xx): a reply
that arrived whole but is wrong (not JSON here; the invariants of ``reply_checks`` in the backend) is an
error at once, since the same request would get the same reply.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence, TypeVar, cast, overload

from proctor.core.errors import ProctorError, require
from proctor.core.redact import mask_url_credentials, secret_forms, split_url_credentials
from proctor.models.openai.reply_tallies import ReplyOrigins, Usage

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# A server's JSON reply as parsed, before its shape is checked (reply_checks, where the backend reads it)
ServerReply = dict[str, Any]
# A request's JSON body, as the backend builds it
RequestBody = Mapping[str, object]
# A multipart upload's file: (file name, content, content type)
UploadFile = tuple[str, bytes, str]

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})


class ApiError(ProctorError):
    """The server refused a request (a 4xx other than 429), or kept failing past the retry budget."""

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class DeadlinePassed(Exception):
    """An attempt ran past the overall deadline: a transport fault, retried as a timeout is."""


class RetryBudgetExceeded(ApiError):
    """Every attempt failed: the run store keeps what finished, so a rerun resumes."""


class ApiClient:
    """POSTs JSON to ``base_url + path``; retries 429/5xx/timeouts/disconnects with jittered backoff."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 120.0,
        deadline: float = 600.0,
        max_retries: int = 6,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        concurrency: int = 8,
        seed: int | None = None,
    ) -> None:
        httpx = require("httpx", "openai", "The OpenAI-compatible backend")
        # credentials written in the URL go in a Basic-auth header of their own making, never in the URL httpx
        # sees: httpx would put them in the Authorization header and silently drop the API key's Bearer
        url, user, password = split_url_credentials(base_url.rstrip("/"))
        self.base_url = url
        self.shown_url = mask_url_credentials(base_url.rstrip("/"))  # what messages say: user:***@host
        self.api_key_env = api_key_env
        self._key = os.environ.get(api_key_env) if api_key_env else None
        headers: dict[str, str] = {}  # httpx sets the content type of each body (JSON, or a multipart file upload)
        if user is not None and self._key:
            raise ProctorError(
                f"{mask_url_credentials(base_url)} holds credentials, and ${api_key_env} holds an API key: both "
                "would be the request's Authorization header, so one would be dropped. Give one of them (the URL "
                "without user:password@, or unset the variable / --model-arg api_key_env=)"
            )
        auth = None
        if user is not None:
            auth = httpx.BasicAuth(user, password or "")
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        # every form a secret may come back in (a server echoing its headers): masked in messages
        self._secrets = secret_forms(self._key, user, password)
        if deadline <= 0 or timeout <= 0:
            raise ProctorError(f"timeout and deadline must be above 0 seconds, got {timeout} and {deadline}")
        self.deadline = float(deadline)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = max(1, int(concurrency))
        self.usage = Usage()
        self.origins = ReplyOrigins()
        self._random = random.Random(seed)
        self._httpx = httpx
        # twice the connections in flight: an attempt abandoned at its deadline may hold one until the server
        # stops sending, and must not keep the next attempt from being sent (``concurrency`` bounds the requests)
        limits = httpx.Limits(max_connections=2 * self.concurrency, max_keepalive_connections=self.concurrency)
        self._client = httpx.Client(
            headers=headers, auth=auth, timeout=httpx.Timeout(self.timeout), limits=limits, follow_redirects=False
        )

    # ------------------------------------------------------------------ secrets
    def scrub(self, text: str) -> str:
        """``text`` with the API key (if any) and a URL's credentials replaced: error messages may quote server
        replies."""
        text = mask_url_credentials(text)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # ------------------------------------------------------------------ one request
    def post(self, path: str, payload: RequestBody, *, max_retries: int | None = None) -> ServerReply:
        """POST ``payload`` as JSON (a model call: its token usage is counted); the JSON reply."""
        return self.request("POST", path, json=payload, max_retries=max_retries, count=True)

    def get(self, path: str, *, max_retries: int | None = None) -> ServerReply:
        """GET; the JSON reply."""
        return self.request("GET", path, max_retries=max_retries)

    def get_bytes(self, path: str, *, max_retries: int | None = None) -> bytes:
        """GET; the reply's bytes (a file's content)."""
        return self.request("GET", path, raw=True, max_retries=max_retries)

    def upload(
        self, path: str, filename: str, content: bytes, fields: Mapping[str, str], *, max_retries: int | None = None
    ) -> ServerReply:
        """POST a multipart form: ``fields`` and one file under the name ``file``; the JSON reply."""
        return self.request(
            "POST", path, files={"file": (filename, content, "application/jsonl")}, data=fields, max_retries=max_retries
        )

    @overload
    def request(
        self,
        method: str,
        path: str,
        *,
        json: RequestBody | None = None,
        files: Mapping[str, UploadFile] | None = None,
        data: Mapping[str, str] | None = None,
        raw: Literal[False] = False,
        max_retries: int | None = None,
        count: bool = False,
    ) -> ServerReply: ...

    @overload
    def request(
        self,
        method: str,
        path: str,
        *,
        json: RequestBody | None = None,
        files: Mapping[str, UploadFile] | None = None,
        data: Mapping[str, str] | None = None,
        raw: Literal[True],
        max_retries: int | None = None,
        count: bool = False,
    ) -> bytes: ...

    def request(
        self,
        method: str,
        path: str,
        *,
        json: RequestBody | None = None,
        files: Mapping[str, UploadFile] | None = None,
        data: Mapping[str, str] | None = None,
        raw: bool = False,
        max_retries: int | None = None,
        count: bool = False,
    ) -> ServerReply | bytes:
        """One HTTP request with retries; the JSON reply (``raw``: its bytes). ``count``: add its usage to ``usage``."""
        budget = self.max_retries if max_retries is None else max_retries
        url = self.base_url + path
        shown = self.shown_url + path  # what messages and logs say
        httpx = self._httpx
        last = ""
        retry_after = 0.0  # the server's Retry-After from the previous attempt
        for attempt in range(budget + 1):
            if attempt:
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                delay *= 0.5 + self._random.random()  # jitter: 0.5x .. 1.5x
                time.sleep(delay if not retry_after else max(delay, min(retry_after, self.max_backoff)))
            retry_after = 0.0
            try:
                response = self._send(method, url, json=json, files=files, data=data)
            except (httpx.TimeoutException, httpx.TransportError, DeadlinePassed) as exc:
                last = f"{type(exc).__name__}: {exc}"
                log.info(
                    "request to %s failed (%s), attempt %d of %d", shown, self.scrub(last), attempt + 1, budget + 1
                )
                continue
            if response.status_code in RETRY_STATUS:
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                retry_after = _retry_after(response.headers.get("retry-after"))
                log.info(
                    "request to %s got HTTP %d, attempt %d of %d", shown, response.status_code, attempt + 1, budget + 1
                )
                continue
            if response.status_code >= 400:
                body = self.scrub(response.text[:1000])
                raise ApiError(f"{shown} answered HTTP {response.status_code}: {body}", response.status_code, body)
            if raw:
                return response.content
            try:
                reply: ServerReply = response.json(object_pairs_hook=_unique_keys)
            except DuplicateKey as exc:
                raise ApiError(
                    f"{shown} answered HTTP {response.status_code} with a JSON object that holds the key {exc.key!r} "
                    "twice: which of the two the server meant is unknown (JSON readers silently keep the last), so "
                    "it is refused (not retried: the same request gets the same reply)",
                    response.status_code,
                    self.scrub(response.text[:300]),
                ) from None
            except ValueError:
                body = self.scrub(response.text[:300])
                raise ApiError(
                    f"{shown} answered HTTP {response.status_code} with a body that is not JSON (not retried: the "
                    f"same request gets the same reply): {body!r}",
                    response.status_code,
                    body,
                ) from None
            if count:
                self.usage.add(reply, attempt)
                self.origins.add(reply)
            return reply
        raise RetryBudgetExceeded(
            f"{shown} failed {budget + 1} times in a row (last: {self.scrub(last)}). Responses that finished are "
            "kept in the run folder's store: run the same command with the same --output to resume."
        )

    def _send(self, method: str, url: str, **content: object) -> httpx.Response:
        """One attempt, answered in full (headers and body) within ``deadline`` seconds, or ``DeadlinePassed``.

        The socket's read timeout bounds each wait for a byte only, so a server that trickles a byte a second
        would hold a request for ever. The attempt runs in a thread of its own that this one waits for; past the
        deadline it is abandoned (told to stop at its next bytes; a read blocked on the socket ends at the read
        timeout) and the attempt counts as a transport fault."""
        box: dict[str, httpx.Response | BaseException] = {}
        stop = threading.Event()

        def attempt() -> None:
            try:
                box["response"] = self._read(method, url, stop, content)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which raises it
                box["error"] = exc

        worker = threading.Thread(target=attempt, name="proctor-http-attempt", daemon=True)
        worker.start()
        worker.join(self.deadline)
        if worker.is_alive():
            stop.set()
            raise DeadlinePassed(
                f"the reply took longer than the deadline of {self.deadline:g} s (--model-arg deadline=...)"
            )
        if "error" in box:
            raise cast(BaseException, box["error"])
        return cast("httpx.Response", box["response"])

    def _read(self, method: str, url: str, stop: threading.Event, content: dict[str, object]) -> httpx.Response:
        """The request sent and its reply read whole (a buffered ``httpx.Response``), unless ``stop`` is set."""
        with self._client.stream(method, url, **content) as response:
            chunks: list[bytes] = []
            for chunk in response.iter_bytes():
                if stop.is_set():
                    raise DeadlinePassed("abandoned: past the deadline")
                chunks.append(chunk)
            body = b"".join(chunks)
        return cast(
            "httpx.Response", self._httpx.Response(response.status_code, headers=response.headers, content=body)
        )

    # ------------------------------------------------------------------ many requests
    def map(self, fn: Callable[[T], R], items: Sequence[T], on_done: Callable[[int, T], None] | None = None) -> list[R]:
        """``fn`` over ``items`` with at most ``concurrency`` in flight; results in item order.

        ``on_done(index, item)`` is called in this thread as each finishes. The first error stops
        new work and is raised once the requests in flight return.
        """
        if len(items) <= 1 or self.concurrency == 1:
            out: list[R] = []
            for i, item in enumerate(items):
                out.append(fn(item))
                if on_done:
                    on_done(i, item)
            return out
        results: list[R | None] = [None] * len(items)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
            try:
                for future in as_completed(futures):
                    i = futures[future]
                    results[i] = future.result()
                    if on_done:
                        on_done(i, items[i])
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
        return cast("list[R]", results)  # every one set: each future finished without an error

    def close(self) -> None:
        self._client.close()


def map_progress(
    progress: Callable[[int], None] | None, count: Callable[[T], int] = lambda item: 1
) -> Callable[[int, T], None] | None:
    """An ``on_done`` for ``ApiClient.map`` that reports ``count(item)`` finished requests to ``progress``
    (a backend's progress callback), or None without one."""
    if progress is None:
        return None
    return lambda index, item: progress(count(item))


class DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice (``{"choices": [...], "choices": [...]}``)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def _retry_after(value: str | None) -> float:
    """Seconds a Retry-After header asks for: a number of seconds, or an HTTP date (RFC 9110)."""
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    if when.tzinfo is None:  # an HTTP date is GMT; a date without a zone is read as such
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
