"""Test servers on 127.0.0.1 for the OpenAI-compatible backend.

- ``TrueLogprobServer``: an in-process OpenAI-compatible server (labelled as such: it is NOT vLLM)
  that computes true log-probs with transformers, for the ``echo`` / ``prompt_logprobs`` paths
  (no CPU vLLM exists here). ``bug="echo_shift"`` makes its echo log-probs off by one position,
  as a broken server's are, to test the self-check.
- ``FaultProxy``: forwards to a real server and fails a seeded ~20% of requests with 429, 500 or
  a dropped connection.
- ``ScriptedJudgeServer``: an in-process stand-in chat server (NOT a model) whose MT-Bench verdicts
  follow a fixed rule (the longer answer wins), so judge parsing can be tested with parseable replies.
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
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, payload = respond(self.path, body, dict(self.headers))
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


class TrueLogprobServer(_Server):
    """OpenAI-compatible completions/chat computed with transformers (a test double, not vLLM)."""

    def __init__(self, model_dir: Path, *, bug: str | None = None, lists: bool = True, api_key: str | None = None) -> None:
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
        choice: dict = {"index": 0, "text": (prompt if echo else "") + text, "finish_reason": "length"}
        new_tokens = [self.tok.decode(ids + gen_ids[: j + 1])[len(self.tok.decode(ids + gen_ids[:j])) :] for j in range(len(gen))]
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
            choices = [{"index": 0, "message": message, "finish_reason": "length"}]
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

    def __init__(self, upstream: str, rate: float = 0.2, seed: int = 0, fail_after: int | None = None, chat_only: bool = False) -> None:
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
                target = proxy.upstream + self.path[len("/v1") :] if self.path.startswith("/v1") else proxy.upstream + self.path
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


def start_process_server(argv: list[str], port: int, log_file: Path, ready_path: str = "/v1/models", timeout: float = 300):
    """Start a server process (niced) and wait until it answers on 127.0.0.1:port; returns the Popen."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = open(log_file, "wb")
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
    argv = [str(exe if exe.exists() else "transformers"), "serve", str(model_dir), "--host", "127.0.0.1",
            "--port", str(port), "--device", "cpu", "--dtype", "float32"]
    process = start_process_server(argv, port, log_dir / "serve.log", ready_path="/health")
    yield f"http://127.0.0.1:{port}/v1"
    stop_process(process)
