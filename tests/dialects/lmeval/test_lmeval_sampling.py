"""Whether an lm-eval task samples, as lm-eval 0.4.13 decides it (``normalize_gen_kwargs``, which its hf and vllm
models call): ``temperature: 0.7`` with no ``do_sample`` samples there, and was read as greedy here; and
``--gen-kwargs do_sample=true`` merges into the task's own settings as lm-eval's ``--gen_kwargs`` does."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

pytest.importorskip("lm_eval")

from lm_eval.models.utils import normalize_gen_kwargs  # noqa: E402

from proctor.dialects.lmeval.instance_requests import proctor_request  # noqa: E402
from tests.support.cli_runs import REPO, jsonl, run_proctor, write  # noqa: E402

GRID = [
    {},
    {"temperature": 0.7},
    {"temperature": 0.0},
    {"temperature": 0.7, "do_sample": False},
    {"temperature": 0.7, "do_sample": True},
    {"do_sample": True},
    {"do_sample": True, "temperature": 0.0},
    {"do_sample": False},
    {"temperature": 1, "top_p": 0.9},
]


@pytest.mark.fast
@pytest.mark.parametrize("kwargs", GRID, ids=[json.dumps(k, sort_keys=True) for k in GRID])
def test_a_request_samples_exactly_when_lm_eval_does(kwargs):
    """lm-eval's own normalisation on the same generation_kwargs: the temperature it hands a sampling model (0
    when it decodes greedily) is the request's temperature here."""
    theirs = normalize_gen_kwargs(dict(kwargs, until=["\n"]))
    expected = float(theirs.get("temperature", 0.0)) if theirs["do_sample"] else 0.0  # its hf model: 0.0 unset
    instance = SimpleNamespace(request_type="generate_until", arguments=("Q: 1+1?\nA:", dict(kwargs, until=["\n"])))
    request = proctor_request(instance, None)
    assert request.temperature == expected, (kwargs, theirs)
    assert request.top_p == (float(kwargs.get("top_p", 1.0)) if expected > 0 else 1.0)


TASK = """\
task: warm
dataset_path: json
dataset_kwargs:
  data_files:
    test: test.jsonl
output_type: generate_until
test_split: test
doc_to_text: "Q: {{question}}\\nA:"
doc_to_target: "{{answer}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 4
SETTINGS
metric_list:
  - metric: exact_match
"""

# A --plugin backend that answers each generation with the temperature it was asked for ("0.0" when greedy)
PLUGIN = """\
import sys
sys.path.insert(0, {repo!r})
from proctor.core.model_requests import GenerateResult
from tests.support.fakes import FakeModel


class TemperatureModel(FakeModel):
    def generate(self, requests, progress=None):
        if progress:
            progress(len(requests))
        return [GenerateResult(str(float(r.temperature)), "stop", 1, 1) for r in requests]


def register(registry):
    registry.add_model_backend("temperature", lambda rest, **options: TemperatureModel(rest))
"""


def _exact_match(tmp_path, name, settings, *flags):
    folder = tmp_path / name
    write(folder / "warm.yaml", TASK.replace("SETTINGS", settings))
    jsonl(folder / "test.jsonl", [{"question": f"q{i}", "answer": "0.7"} for i in range(4)])
    write(folder / "temperature.py", PLUGIN.format(repo=str(REPO)))
    done = run_proctor(
        "run", "warm.yaml", "--plugin", "temperature.py", "--model", "temperature:t", "-o", "out", *flags, cwd=folder
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((folder / "out" / "results.json").read_text())
    return results["tasks"]["warm"]["metrics"]["exact_match,none"]["value"], done.stdout + done.stderr


def test_temperature_without_do_sample_is_sampled_at_it_as_lm_eval_samples(tmp_path):
    """Through the command: the model is asked for temperature 0.7 (exact match 1.0 against '0.7'), where it was
    asked for greedy answers (0.0 on every row); `--gen-kwargs do_sample=true` keeps the task's 0.7 (it was
    refused), and on a task at temperature 0 decodes greedily as lm-eval does, with the audit saying so."""
    value, said = _exact_match(tmp_path, "unset", "  temperature: 0.7")
    assert value == 1.0
    assert "[generation.sampling]" in said and "do_sample is unset, which lm-eval reads as true" in said
    value, _ = _exact_match(tmp_path, "switch", "  temperature: 0.7\n  do_sample: false")
    assert value == 0.0
    flag = ("--gen-kwargs", "do_sample=true")
    value, _ = _exact_match(tmp_path, "flag", "  temperature: 0.7\n  do_sample: false", *flag)
    assert value == 1.0
    value, said = _exact_match(tmp_path, "cold", "  temperature: 0.0", *flag)
    assert value == 0.0
    assert "do_sample is true with temperature 0.0: lm-eval decodes greedily" in said
