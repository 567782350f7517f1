"""The OpenAI-compatible backend against a real ``transformers serve`` on 127.0.0.1 with the
embedded SmolLM2-135M-Instruct: greedy generations equal the Hugging Face backend's; the server
gives no log-probs, so multiple-choice tasks run through the generation formulation; injected
faults change nothing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

for module in ("httpx", "fastapi", "uvicorn"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs '{module}' (pip install 'proctor[openai,serve]')", allow_module_level=True)

from proctor.api import evaluate  # noqa: E402
from proctor.models.openai.compat import OpenAIModel  # noqa: E402
from tests.conftest import EXAMPLES  # noqa: E402
from tests.support.openai_fakes import FaultProxy, serve_transformers  # noqa: E402

pytestmark = pytest.mark.slow
QUICKSTART = EXAMPLES / "quickstart"


@pytest.fixture(scope="module")
def model_dir() -> Path:
    from proctor.models.default import default_model_path

    try:
        return Path(default_model_path())
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the embedded default model is not available: {exc}")


@pytest.fixture(scope="module")
def serve(model_dir, tmp_path_factory):
    yield from serve_transformers(model_dir, tmp_path_factory.mktemp("serve"))


def backend(url: str, model_dir: Path, **kw) -> OpenAIModel:
    return OpenAIModel(str(model_dir), url, name="smollm2-serve", backoff=0.05, concurrency=2, **kw)


def generations(run_dir: Path, task: str) -> list[str]:
    rows = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return [r["generation"] for r in rows if r["task"] == task]


def test_quickstart_generation_equals_hf_backend(serve, model_dir, tmp_path):
    from proctor.models.hf.model import HFModel

    task = ["quickstart_short_answers"]
    api = evaluate([QUICKSTART], backend(serve, model_dir), output_dir=tmp_path / "api", select=task, export=False)
    hf = evaluate([QUICKSTART], HFModel(model_dir, batch_size=4), output_dir=tmp_path / "hf", select=task, export=False)
    assert generations(api.run_dir, task[0]) == generations(hf.run_dir, task[0])
    assert api.tasks[task[0]]["metrics"] == hf.tasks[task[0]]["metrics"]
    assert api.tasks[task[0]]["usage"]["completion_tokens"] > 0


def test_no_logprobs_so_multiple_choice_runs_by_generation(serve, model_dir, tmp_path):
    for endpoint in ("completions", "chat"):
        model = backend(serve, model_dir, endpoint=endpoint)
        assert not model.supports_loglikelihood  # transformers serve ignores echo/logprobs: detected, not trusted
        result = evaluate(
            [QUICKSTART], model, output_dir=tmp_path / endpoint, limit=5, select=["quickstart_science_mc"], export=False
        )
        mc = result.tasks["quickstart_science_mc"]
        assert mc["mc_format"] == "generate" and mc["n_samples"] == 5


def test_injected_faults_change_nothing(serve, model_dir, tmp_path):
    select = ["quickstart_short_answers"]
    clean = evaluate(
        [QUICKSTART], backend(serve, model_dir), output_dir=tmp_path / "clean", limit=8, select=select, export=False
    )
    with FaultProxy(serve, rate=0.2, seed=2) as proxy:
        faulty = evaluate(
            [QUICKSTART],
            backend(proxy.url, model_dir),
            output_dir=tmp_path / "faulty",
            limit=8,
            select=select,
            export=False,
        )
    assert proxy.counts["forwarded"] >= 8 and sum(proxy.counts[k] for k in ("429", "500", "disconnect")) > 0
    assert generations(faulty.run_dir, select[0]) == generations(clean.run_dir, select[0])
    assert faulty.tasks[select[0]]["metrics"] == clean.tasks[select[0]]["metrics"]
