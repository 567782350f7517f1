"""Test servers on 127.0.0.1 for the OpenAI-compatible backend.

- ``TrueLogprobServer``: an in-process OpenAI-compatible server (labelled as such: it is NOT vLLM)
  that computes true log-probs with transformers, for the ``echo`` / ``prompt_logprobs`` paths
  (no CPU vLLM exists here). ``bug="echo_shift"`` makes its echo log-probs off by one position,
  as a broken server's are, to test the self-check.
- ``FaultProxy``: forwards to a real server and fails a seeded ~20% of requests with 429, 500 or
  a dropped connection.
- ``ScriptedJudgeServer``: an in-process stand-in chat server (NOT a model) whose MT-Bench verdicts
  follow a fixed rule (the longer answer wins), so judge parsing can be tested with parseable replies.
- ``CaptureServer``: an in-process stand-in chat server (NOT a model) that records each /chat/completions body
  and answers with the number of image parts it saw.
- ``BatchServer``: OpenAI's Files and Batches endpoints, as OpenAI documents them, in front of another
  server's ``respond`` (a ``ScriptedJudgeServer``'s, say); batches can be held pending, and lines made to fail.
- ``start_process_server``: a real server process (transformers serve, llama.cpp) on a free port.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    def __init__(self, handler) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _json_handler(respond):
    """A handler answering each POST with ``respond(path, body, headers)``'s (status, payload): JSON written out,
    or bytes sent as they are (a body ``json.dumps`` cannot write)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, payload = respond(self.path, body, dict(self.headers))
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


class TrueLogprobServer(_Server):
    """OpenAI-compatible completions/chat computed with transformers (a test double, not vLLM)."""

    def __init__(
        self, model_dir: Path, *, bug: str | None = None, lists: bool = True, api_key: str | None = None
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.bug, self.lists, self.api_key = bug, lists, api_key
        self.lock = threading.Lock()
        self.headers_seen: list[dict] = []
        super().__init__(_json_handler(self.respond))

    # ------------------------------------------------------------------ model
    def _logprobs(self, ids: list[int]):
        with self.lock, self.torch.no_grad():
            return self.model(self.torch.tensor([ids])).logits[0].float().log_softmax(-1)

    def _greedy(self, ids: list[int], n: int) -> list[tuple[int, float, dict]]:
        out = []
        for _ in range(n):
            lp = self._logprobs(ids)[-1]
            top = self.torch.topk(lp, 5)
            token = int(top.indices[0])
            tops = {self.tok.decode([int(i)]): float(v) for i, v in zip(top.indices, top.values)}
            out.append((token, float(lp[token]), tops))
            ids = ids + [token]
            if token == self.tok.eos_token_id:
                break
        return out

    def _prompt(self, prompt: str, echo: bool, prompt_logprobs: int | None, k: int, n_new: int) -> dict:
        enc = self.tok(prompt, add_special_tokens=False, return_offsets_mapping=True)
        ids = enc["input_ids"]
        starts = [a for a, _ in enc["offset_mapping"]] + [len(prompt)]
        texts = [prompt[starts[i] : starts[i + 1]] for i in range(len(ids))]
        lp = self._logprobs(ids)
        own = [None] + [float(lp[i - 1, ids[i]]) for i in range(1, len(ids))]
        if self.bug == "echo_shift":
            own = own[1:] + [float(lp[-1].max())]
        gen = self._greedy(ids, n_new)
        gen_ids = [g[0] for g in gen]
        full = self.tok.decode(ids + gen_ids)
        head = self.tok.decode(ids)
        text = full[len(head) :]
        ended = bool(gen) and gen[-1][0] == self.tok.eos_token_id  # stopped at end-of-sequence, not the limit
        finish = "stop" if ended else "length"
        choice: dict = {"index": 0, "text": (prompt if echo else "") + text, "finish_reason": finish}
        new_tokens = [
            self.tok.decode(ids + gen_ids[: j + 1])[len(self.tok.decode(ids + gen_ids[:j])) :] for j in range(len(gen))
        ]
        if k or echo:
            tokens, offsets, lps, tops = [], [], [], []
            if echo:
                for i, t in enumerate(texts):
                    tokens.append(t)
                    offsets.append(starts[i])
                    lps.append(own[i])
                    if i == 0:
                        tops.append(None)
                    else:
                        v, j = lp[i - 1].max(0)
                        tops.append({self.tok.decode([int(j)]): float(v)})
            position = len(prompt)
            for t, (_, glp, gtops) in zip(new_tokens, gen):
                tokens.append(t)
                offsets.append(position)
                position += len(t)
                lps.append(glp)
                tops.append(dict(list(gtops.items())[: max(k, 1)]))
            choice["logprobs"] = {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
        if prompt_logprobs is not None:
            entries = [None]
            for i in range(1, len(ids)):
                rank = int((lp[i - 1] > lp[i - 1, ids[i]]).sum()) + 1
                entries.append({str(ids[i]): {"logprob": own[i], "rank": rank, "decoded_token": texts[i]}})
            choice["prompt_logprobs"] = entries
        return {"choice": choice, "prompt_tokens": len(ids), "completion_tokens": len(gen)}

    # ------------------------------------------------------------------ HTTP
    def respond(self, path: str, body: dict, headers: dict) -> tuple[int, dict]:
        self.headers_seen.append(headers)
        if self.api_key and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, {"error": {"message": "bad key"}}
        n_new = max(1, int(body.get("max_tokens") or 16))
        if path.endswith("/chat/completions"):
            text = self.tok.apply_chat_template(body["messages"], tokenize=False, add_generation_prompt=True)
            r = self._prompt(text, False, None, 0, n_new)
            message = {"role": "assistant", "content": r["choice"]["text"]}
            choices = [{"index": 0, "message": message, "finish_reason": r["choice"]["finish_reason"]}]
            usage = {"prompt_tokens": r["prompt_tokens"], "completion_tokens": r["completion_tokens"]}
            return 200, {"object": "chat.completion", "choices": choices, "usage": usage}
        prompts = body["prompt"]
        if isinstance(prompts, list) and not self.lists:
            return 400, {"detail": "prompt must be a string."}
        prompts = prompts if isinstance(prompts, list) else [prompts]
        logprobs = body.get("logprobs")
        choices, usage = [], {"prompt_tokens": 0, "completion_tokens": 0}
        for index, prompt in enumerate(prompts):
            r = self._prompt(prompt, bool(body.get("echo")), body.get("prompt_logprobs"), int(logprobs or 0), n_new)
            choices.append({**r["choice"], "index": index})
            usage["prompt_tokens"] += r["prompt_tokens"]
            usage["completion_tokens"] += r["completion_tokens"]
        return 200, {"object": "text_completion", "choices": choices, "usage": usage}


class FaultProxy(_Server):
    """Forwards POSTs to ``upstream``; fails about ``rate`` of them (seeded) with 429, 500 or a dropped connection."""

    def __init__(
        self, upstream: str, rate: float = 0.2, seed: int = 0, fail_after: int | None = None, chat_only: bool = False
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.rate = rate
        self.chat_only = chat_only  # answer 404 to everything but /chat/completions (a chat-only API)
        self.received: list[tuple[str, dict]] = []  # (path, JSON body) of every request that came in
        self.fail_after = fail_after  # after this many forwarded requests, every request gets a 500
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.counts = {"forwarded": 0, "429": 0, "500": 0, "disconnect": 0}
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                with proxy.lock:
                    proxy.received.append((self.path, json.loads(data or b"{}")))
                if proxy.chat_only and not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found: this API serves chat completions only"}}', {})
                    return
                with proxy.lock:
                    draw = proxy.random.random()
                    fault = ["429", "500", "disconnect"][int(draw / proxy.rate * 3) % 3] if draw < proxy.rate else None
                    if proxy.fail_after is not None and proxy.counts["forwarded"] >= proxy.fail_after:
                        fault = "500"
                    proxy.counts[fault or "forwarded"] += 1
                if fault == "disconnect":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault:
                    self._send(int(fault), b'{"error": {"message": "injected"}}', {"retry-after": "0"})
                    return
                target = (
                    proxy.upstream + self.path[len("/v1") :]
                    if self.path.startswith("/v1")
                    else proxy.upstream + self.path
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
                request = urllib.request.Request(target, data=data, headers=headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=300) as reply:
                        self._send(reply.status, reply.read(), {})
                except urllib.error.HTTPError as exc:
                    self._send(exc.code, exc.read(), {})

            def _send(self, status: int, body: bytes, extra: dict) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


class FixedReplyServer(_Server):
    """A stand-in server (NOT a model) that answers every POST with the same JSON ``reply`` and status 200:
    what a misconfigured proxy or a broken server sends back."""

    def __init__(self, reply) -> None:
        super().__init__(_json_handler(lambda path, body, headers: (200, reply)))


class ScriptedJudgeServer(_Server):
    """A stand-in OpenAI-compatible chat server (NOT a model): its replies follow a fixed rule, so
    judge verdicts are parseable. A prompt holding the MT-Bench verdict labels gets "[[A]]" or
    "[[B]]" for the assistant with the longer answer; anything else gets ``answer``. Records
    every request body and Authorization header."""

    ANSWER_A = re.compile(r"\[The Start of Assistant A's Answer\]\n(.*?)\n\[The End of Assistant A's Answer\]", re.S)
    ANSWER_B = re.compile(r"\[The Start of Assistant B's Answer\]\n(.*?)\n\[The End of Assistant B's Answer\]", re.S)
    CONV_A = re.compile(r"### Assistant A:\n(.*?)\n\n(?:### User|<\|The End)", re.S)
    CONV_B = re.compile(r"### Assistant B:\n(.*?)\n\n(?:### User|<\|The End)", re.S)

    def __init__(self, answer: str = "A fairly long answer from the stand-in server.") -> None:
        self.answer = answer
        self.received: list[dict] = []
        self.authorization: list[str | None] = []
        self.lock = threading.Lock()
        super().__init__(_json_handler(self.respond))

    def verdict(self, text: str) -> str:
        a = self.ANSWER_A.findall(text) or self.CONV_A.findall(text)
        b = self.ANSWER_B.findall(text) or self.CONV_B.findall(text)
        longer_a = len(a[-1] if a else "") >= len(b[-1] if b else "")
        return "Judged by answer length. [[A]]" if longer_a else "Judged by answer length. [[B]]"

    def respond(self, path: str, body: dict, headers: dict) -> tuple[int, dict]:
        with self.lock:
            self.received.append(body)
            self.authorization.append(headers.get("Authorization") or headers.get("authorization"))
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": "chat completions only"}}
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        reply = self.verdict(text) if "[[A]]" in text and "[[B]]" in text else self.answer
        usage = {"prompt_tokens": len(text.split()), "completion_tokens": len(reply.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        return 200, {"object": "chat.completion", "choices": [choice], "usage": usage}


class CaptureServer(_Server):
    """SUPPLEMENT (in-process stand-in, not a model server): records each /chat/completions body and
    answers with the number of image parts it saw."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []

        def respond(path: str, body: dict, headers: dict):
            self.bodies.append(body)
            parts = [p for m in body.get("messages", []) if isinstance(m.get("content"), list) for p in m["content"]]
            n = sum(p.get("type") == "image_url" for p in parts)
            return 200, {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": f"{n} image"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2},
            }

        super().__init__(_json_handler(respond))


class BatchServer(_Server):
    """OpenAI's Batch API on 127.0.0.1, as OpenAI documents it, answering each line with ``respond(path, body,
    headers)`` (another stand-in's; ``/v1/chat/completions`` is also served online unless ``online=False``):

    - ``POST /v1/files`` (multipart: ``purpose=batch`` and ``file``), ``GET /v1/files/{id}``,
      ``GET /v1/files/{id}/content``;
    - ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window: 24h``, ``metadata``),
      ``GET /v1/batches/{id}``, ``GET /v1/batches`` (a list), ``POST /v1/batches/{id}/cancel``.

    A batch is ``validating`` when created; each ``GET`` moves it on: ``in_progress`` (the input file checked:
    JSON lines with unique ``custom_id``, ``method`` POST, ``url`` equal to the batch's endpoint, else ``failed``
    with ``errors``), then, unless ``hold`` is set, the lines are answered (output file: 2xx responses; error
    file: the others, ``response.status_code`` and body) and it is ``finalizing``, then ``completed``. Output
    lines come in reverse order (OpenAI does not keep the input order). ``fail_once``: lines whose body contains
    one of these strings get a 500 the first time they are answered. Records every upload, batch and poll."""

    def __init__(self, respond, *, online: bool = True, hold: bool = False) -> None:
        self.respond_line = respond
        self.online, self.hold = online, hold
        self.fail_once: set[str] = set()
        self.failed_once: set[str] = set()
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.lines: dict[str, list[dict]] = {}  # batch id -> its input lines
        self.polls: list[str] = []  # batch ids, one per GET /v1/batches/{id}
        self.online_calls: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._send(*server.get(self.path.split("?")[0]))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                self._send(*server.post(self.path, data, self.headers.get("content-type") or "", dict(self.headers)))

            def _send(self, status: int, payload) -> None:
                body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header(
                    "content-type", "application/octet-stream" if isinstance(payload, bytes) else "application/json"
                )
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)

    # ------------------------------------------------------------------ state
    @property
    def created(self) -> list[dict]:
        """Every batch created, in order."""
        with self.lock:
            return sorted(self.batches.values(), key=lambda b: b["_n"])

    def input_of(self, batch: dict) -> bytes:
        return self.files[batch["input_file_id"]]["content"]

    @staticmethod
    def _not_found(what: str) -> tuple[int, dict]:
        return 404, {"error": {"message": f"No such {what}", "type": "invalid_request_error"}}

    @staticmethod
    def _public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    # ------------------------------------------------------------------ endpoints
    def get(self, path: str) -> tuple[int, object]:
        parts = path.strip("/").split("/")  # v1, files|batches, id, [content]
        with self.lock:
            if parts[1:2] == ["files"] and len(parts) >= 3:
                file = self.files.get(parts[2])
                if file is None:
                    return self._not_found("file")
                if parts[3:] == ["content"]:
                    return 200, file["content"]
                return 200, {k: v for k, v in file.items() if k != "content"}
            if parts[1:] == ["batches"]:
                data = [self._public(b) for b in sorted(self.batches.values(), key=lambda b: -b["_n"])]
                return 200, {
                    "object": "list",
                    "data": data,
                    "first_id": data[0]["id"] if data else None,
                    "last_id": data[-1]["id"] if data else None,
                    "has_more": False,
                }
            if parts[1:2] == ["batches"] and len(parts) == 3:
                batch = self.batches.get(parts[2])
                if batch is None:
                    return self._not_found("batch")
                self.polls.append(batch["id"])
                self._advance(batch)
                return 200, self._public(batch)
        return self._not_found("route")

    def post(self, path: str, data: bytes, content_type: str, headers: dict) -> tuple[int, object]:
        if path.endswith("/chat/completions"):
            if not self.online:
                return self._not_found("route")
            body = json.loads(data or b"{}")
            with self.lock:
                self.online_calls.append(body)
            return self.respond_line(path, body, headers)
        with self.lock:
            if path == "/v1/files":
                fields = _multipart(data, content_type)
                if fields.get("purpose", (None, b""))[1] != b"batch" or "file" not in fields:
                    return 400, {"error": {"message": "purpose 'batch' and a file are required"}}
                file_id = f"file-{len(self.files) + 1:04d}"
                name, content = fields["file"]
                self.files[file_id] = {
                    "id": file_id,
                    "object": "file",
                    "bytes": len(content),
                    "created_at": int(time.time()),
                    "filename": name,
                    "purpose": "batch",
                    "content": content,
                }
                return 200, {k: v for k, v in self.files[file_id].items() if k != "content"}
            if path == "/v1/batches":
                body = json.loads(data or b"{}")
                if body.get("input_file_id") not in self.files:
                    return 400, {"error": {"message": f"input_file_id {body.get('input_file_id')!r} does not exist"}}
                if body.get("endpoint") not in (
                    "/v1/chat/completions",
                    "/v1/completions",
                    "/v1/embeddings",
                    "/v1/responses",
                ):
                    return 400, {"error": {"message": f"unsupported endpoint {body.get('endpoint')!r}"}}
                if body.get("completion_window") != "24h":
                    return 400, {"error": {"message": "completion_window must be '24h'"}}
                batch_id = f"batch_{len(self.batches) + 1:04d}"
                self.batches[batch_id] = {
                    "id": batch_id,
                    "object": "batch",
                    "endpoint": body["endpoint"],
                    "errors": None,
                    "input_file_id": body["input_file_id"],
                    "completion_window": "24h",
                    "status": "validating",
                    "output_file_id": None,
                    "error_file_id": None,
                    "created_at": int(time.time()),
                    "in_progress_at": None,
                    "expires_at": int(time.time()) + 86400,
                    "finalizing_at": None,
                    "completed_at": None,
                    "failed_at": None,
                    "expired_at": None,
                    "cancelling_at": None,
                    "cancelled_at": None,
                    "request_counts": {"total": 0, "completed": 0, "failed": 0},
                    "metadata": body.get("metadata"),
                    "_n": len(self.batches),
                }
                return 200, self._public(self.batches[batch_id])
            parts = path.strip("/").split("/")
            if parts[1:2] == ["batches"] and parts[3:] == ["cancel"]:
                batch = self.batches.get(parts[2])
                if batch is None:
                    return self._not_found("batch")
                if batch["status"] in ("validating", "in_progress"):
                    batch.update(status="cancelled", cancelled_at=int(time.time()))
                return 200, self._public(batch)
        return self._not_found("route")

    def release(self) -> None:
        """Let held batches finish."""
        self.hold = False

    # ------------------------------------------------------------------ processing
    def _advance(self, batch: dict) -> None:
        status = batch["status"]
        if status == "validating":
            lines, problem = [], None
            for number, raw in enumerate(self.input_of(batch).decode("utf-8").splitlines(), start=1):
                try:
                    line = json.loads(raw)
                except ValueError:
                    problem = (number, "not JSON")
                    break
                if line.get("method") != "POST" or line.get("url") != batch["endpoint"] or not line.get("custom_id"):
                    problem = (number, "needs custom_id, method POST and the batch's endpoint as url")
                    break
                lines.append(line)
            if problem is None and len({line["custom_id"] for line in lines}) != len(lines):
                problem = (1, "custom_id values must be unique")
            if problem is not None:
                batch.update(
                    status="failed",
                    failed_at=int(time.time()),
                    errors={
                        "object": "list",
                        "data": [{"code": "invalid_request", "message": problem[1], "line": problem[0]}],
                    },
                )
                return
            self.lines[batch["id"]] = lines
            batch.update(status="in_progress", in_progress_at=int(time.time()))
            batch["request_counts"]["total"] = len(lines)
        elif status == "in_progress" and not self.hold:
            output, errors = [], []
            for k, line in enumerate(self.lines[batch["id"]]):
                text = json.dumps(line["body"])
                inject = next(
                    (s for s in self.fail_once if s in text and (line["custom_id"], s) not in self.failed_once), None
                )
                if inject is not None:
                    self.failed_once.add((line["custom_id"], inject))
                    code, reply = 500, {"error": {"message": "injected failure", "type": "server_error"}}
                else:
                    code, reply = self.respond_line(line["url"], line["body"], {})
                record = {
                    "id": f"batch_req_{batch['id']}_{k}",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": code, "request_id": f"req_{k}", "body": reply},
                    "error": None,
                }
                (output if code < 300 else errors).append(record)
            for key, records in (("output_file_id", output), ("error_file_id", errors)):
                if records:
                    file_id = f"file-{len(self.files) + 1:04d}"
                    content = "".join(json.dumps(r) + "\n" for r in reversed(records)).encode()
                    self.files[file_id] = {
                        "id": file_id,
                        "object": "file",
                        "bytes": len(content),
                        "created_at": int(time.time()),
                        "filename": f"{batch['id']}_{key}.jsonl",
                        "purpose": "batch_output",
                        "content": content,
                    }
                    batch[key] = file_id
            batch["request_counts"].update(completed=len(output), failed=len(errors))
            batch.update(status="finalizing", finalizing_at=int(time.time()))
        elif status == "finalizing":
            batch.update(status="completed", completed_at=int(time.time()))


def _multipart(data: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body's fields: name -> (file name or None, bytes)."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + data)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True))
    return out


def start_process_server(
    argv: list[str], port: int, log_file: Path, ready_path: str = "/v1/models", timeout: float = 300
):
    """Start a server process (niced) and wait until it answers on 127.0.0.1:port; returns the Popen."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = open(log_file, "wb")  # noqa: SIM115 - the server process writes it for as long as it lives
    process = subprocess.Popen(["nice", "-n", "19", *argv], stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {log_file.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{ready_path}", timeout=2)
            return process
        except urllib.error.HTTPError:
            return process  # it answers (transformers serve gives 500 on /v1/models)
        except OSError:
            time.sleep(1)
    process.terminate()
    raise RuntimeError(f"server did not answer within {timeout} s: {log_file.read_text()[-2000:]}")


def stop_process(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve_transformers(model_dir: Path, log_dir: Path):
    """Run `transformers serve` on a local model folder (generator for a fixture: yields its base
    URL, stops it afterwards); skips the test when the command is not installed."""
    import pytest

    exe = Path(sys.executable).parent / "transformers"
    if not exe.exists() and not shutil.which("transformers"):
        pytest.skip("the 'transformers' command is not installed")
    port = free_port()
    argv = [
        str(exe if exe.exists() else "transformers"),
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--dtype",
        "float32",
    ]
    process = start_process_server(argv, port, log_dir / "serve.log", ready_path="/health")
    yield f"http://127.0.0.1:{port}/v1"
    stop_process(process)
