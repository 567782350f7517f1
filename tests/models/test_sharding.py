"""Models larger than one device (``--model-arg device_map=...``): layers placed by accelerate,
the packed scoring and greedy decoding give the unsharded model's numbers. On the CPU the layers are
split between the CPU and a disk offload folder (weights read back as each layer runs)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, RollingLoglikelihoodRequest
from proctor.models.hf.model import HFModel
from tests.conftest import EXAMPLES

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")


def _split(layers: int, offloaded: set[int]) -> dict:
    """Embeddings and head on the CPU; the ``offloaded`` layers on disk, the rest on the CPU."""
    placed = {"model.embed_tokens": "cpu", "model.norm": "cpu", "model.rotary_emb": "cpu", "lm_head": "cpu"}
    placed.update({f"model.layers.{i}": "disk" if i in offloaded else "cpu" for i in range(layers)})
    return placed


REQUESTS = [
    LoglikelihoodRequest(f"Question {i}: what follows {i}?\nAnswer:", f" {i + 1}{' and more' * k}")
    for i in range(12)
    for k in range(3)
]
PROMPTS = [GenerateRequest(f"Count with me: {i}, {i + 1},", max_tokens=8, stop=("\n",)) for i in range(6)]


def _numbers(model) -> tuple:
    return (
        [r.token_logprobs for r in model.loglikelihood(REQUESTS)],
        [
            r.token_logprobs
            for r in model.rolling_loglikelihood([RollingLoglikelihoodRequest("one two three four " * 20, window=32)])
        ],
        [r.text for r in model.generate(PROMPTS)],
    )


@pytest.mark.parametrize("decode", ["dynamic", "static"])
def test_a_model_split_between_cpu_and_disk_gives_the_same_numbers(tiny_model_dir, tmp_path, decode):
    whole = HFModel(tiny_model_dir, decode=decode)
    for offloaded in ({1}, {0, 1}):
        sharded = HFModel(
            tiny_model_dir,
            decode=decode,
            device_map=_split(2, offloaded),
            offload_folder=str(tmp_path / f"off{len(offloaded)}"),
        )
        assert sharded.device == "cpu" and set(sharded.model.hf_device_map.values()) == {"cpu", "disk"}
        assert _numbers(sharded) == _numbers(whole)  # bit for bit


def test_auto_placement_on_this_machine_is_the_unsharded_model(tiny_model_dir):
    assert _numbers(HFModel(tiny_model_dir, device_map="auto", max_memory={"cpu": "4GiB"})) == _numbers(
        HFModel(tiny_model_dir)
    )


@pytest.mark.slow
def test_smollm2_split_across_cpu_and_disk_scores_as_one(tmp_path):
    from proctor.models.default import default_model_path

    whole = HFModel(default_model_path())
    sharded = HFModel(
        default_model_path(), device_map=_split(30, set(range(15, 30))), offload_folder=str(tmp_path / "offload")
    )
    assert [r.token_logprobs for r in sharded.loglikelihood(REQUESTS)] == [
        r.token_logprobs for r in whole.loglikelihood(REQUESTS)
    ]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"device_map": 42}, "device_map=42 is neither one of auto, balanced"),
        ({"device_map": {"model.layers.0": True}}, "is neither one of auto"),
        ({"max_memory": {"cpu": "1GiB"}}, "max_memory needs --model-arg device_map"),
        ({"device_map": "auto", "max_memory": "lots"}, "max_memory='lots' must be a JSON object"),
    ],
)
def test_a_malformed_placement_is_refused_before_loading(tiny_model_dir, options, message):
    from proctor.core.errors import ModelLoadError
    from proctor.models.registry import check_model_options

    with pytest.raises(ModelLoadError, match=message):
        check_model_options(str(tiny_model_dir), options)


def test_the_command_runs_a_sharded_model(tiny_model_dir, tmp_path):
    runs = {}
    for name, extra in (
        ("whole", []),
        (
            "sharded",
            [
                "--model-arg",
                "device_map=" + json.dumps(_split(2, {1})),
                "--model-arg",
                f"offload_folder={tmp_path / 'offload'}",
            ],
        ),
    ):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "proctor.cli",
                "run",
                str(EXAMPLES / "quickstart"),
                "--model",
                str(tiny_model_dir),
                "-o",
                str(tmp_path / name),
                "-q",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr
        runs[name] = [json.loads(line) for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
    assert len(runs["whole"]) >= 50
    assert [(s.get("logprobs"), s.get("generation")) for s in runs["sharded"]] == [
        (s.get("logprobs"), s.get("generation")) for s in runs["whole"]
    ]
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            str(EXAMPLES / "quickstart"),
            "--model",
            str(tiny_model_dir),
            "--model-arg",
            "device_map=everywhere",
            "-o",
            str(tmp_path / "bad"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert bad.returncode == 2 and "device_map='everywhere' is neither" in bad.stderr and "Traceback" not in bad.stderr
