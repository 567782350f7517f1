"""Greedy decoding over a static key/value cache (``models/hf/static.py``; the CUDA default, on the
CPU with ``--model-arg decode=static``): the growing cache's outputs, with one step shape."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from proctor.core.model_requests import GenerateRequest
from proctor.models.hf.model import HFModel
from tests.conftest import EXAMPLES

torch = pytest.importorskip("torch")

PROMPTS = [
    "Answer these questions:\n\nQ: who wrote the song hey jude?\nA:",
    "Answer these questions:\n\nQ: where is the eiffel tower?\nA:",
    "Answer these questions:\n\nQ: when did the first man walk on the moon and who was he exactly?\nA:",
    "Once upon a time",
    "The answer is",
    "Paris is the capital of",
    "Question: 2+2?\nAnswer:",
    "A",
    "Hello world and more words and more words and even more words",
]


def _requests(stop=("\n",), max_tokens=10):
    return [
        GenerateRequest(p + " and" * (i // len(PROMPTS)), max_tokens=max_tokens, stop=stop)
        for i, p in enumerate(PROMPTS * 3)
    ]


def _steps_seen(model):
    shapes = []
    handle = model.model.get_decoder().register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append((tuple(kw["input_ids"].shape), tuple(kw["attention_mask"].shape))),
        with_kwargs=True,
    )
    return shapes, handle


@pytest.mark.parametrize("batch_size", [1, 4, 27])
def test_static_outputs_equal_the_growing_cache(tiny_model_dir, batch_size):
    dynamic = HFModel(tiny_model_dir, batch_size=batch_size)
    static = HFModel(tiny_model_dir, batch_size=batch_size, decode="static")
    assert (dynamic.decoding, static.decoding) == ("dynamic", "static")
    for stop in (("\n",), (" the", "!"), ()):
        requests = _requests(stop)
        expected = [(r.text, r.finish_reason, r.completion_tokens) for r in dynamic.generate(requests)]
        shapes, handle = _steps_seen(static)
        try:
            got = [(r.text, r.finish_reason, r.completion_tokens) for r in static.generate(requests)]
        finally:
            handle.remove()
        assert got == expected
        steps = {shape for shape in shapes if len(shape[1]) == 4}  # decoding steps (prefills take a 2-D mask)
        assert len(steps) == 1  # every step: the same rows, the same cache width
        ((rows, _), (mask_rows, _, _, width)) = steps.pop()
        assert rows == mask_rows == min(batch_size, len(requests)) and width % 64 == 0


def test_a_finished_sequence_frees_its_slot_for_a_waiting_prompt(tiny_model_dir):
    model = HFModel(tiny_model_dir, batch_size=3, decode="static")
    free = model.generate([GenerateRequest(p, max_tokens=10) for p in PROMPTS])
    stop = tuple(r.text[: max(1, len(r.text) // 3)] for r in free[:3] if r.text)
    requests = [GenerateRequest(p, max_tokens=10, stop=stop) for p in PROMPTS]
    alone = [HFModel(tiny_model_dir, batch_size=1).generate([r])[0].text for r in requests]
    shapes, handle = _steps_seen(model)
    try:
        got = [r.text for r in model.generate(requests)]
    finally:
        handle.remove()
    assert got == alone
    steps = [shape for shape in shapes if len(shape[1]) == 4]
    assert len(steps) < 3 * 10  # fewer steps than three batches of three run to their longest


def test_static_decoding_on_smollm2_equals_the_growing_cache():
    from proctor.models.registry import load_model

    requests = [GenerateRequest(p, max_tokens=16, stop=("\n",)) for p in PROMPTS]
    dynamic = [r.text for r in load_model("smollm2", batch_size=4).generate(requests)]
    static = [r.text for r in load_model("smollm2", batch_size=4, decode="static").generate(requests)]
    assert static == dynamic


def test_the_mode_is_in_the_fingerprint_and_refused_where_it_cannot_run(tiny_model, tiny_model_dir):
    from transformers import MistralConfig, MistralForCausalLM

    from proctor.core.errors import ModelLoadError

    assert "decode" not in HFModel(tiny_model_dir).fingerprint
    assert HFModel(tiny_model_dir, decode="static").fingerprint["decode"] == "static,columns=64"
    torch.manual_seed(0)
    sliding = MistralForCausalLM(
        MistralConfig(
            vocab_size=len(tiny_model.tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            sliding_window=4,
            max_position_embeddings=128,
        )
    ).eval()
    with pytest.raises(ModelLoadError, match="decode=static needs plain full-attention cache layers"):
        HFModel.from_loaded(sliding, tiny_model.tokenizer, decode="static")
    assert HFModel.from_loaded(sliding, tiny_model.tokenizer).decoding == "dynamic"


def test_the_command_decodes_over_a_static_cache(tiny_model_dir, tmp_path):
    outputs = {}
    for name, extra in (("default", []), ("static", ["--model-arg", "decode=static"])):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "proctor.cli",
                "run",
                str(EXAMPLES / "quickstart"),
                "--model",
                str(tiny_model_dir),
                "-t",
                "*short*",
                "-o",
                str(tmp_path / name),
                "-q",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        outputs[name] = [json.loads(line) for line in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
    assert len(outputs["static"]) == len(outputs["default"]) >= 10
    assert [s["generation"] for s in outputs["static"]] == [s["generation"] for s in outputs["default"]]
    assert [s["metrics"] for s in outputs["static"]] == [s["metrics"] for s in outputs["default"]]
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
            "decode=fast",
            "-o",
            str(tmp_path / "bad"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        bad.returncode == 2
        and "decode='fast' is not one of static, dynamic" in bad.stderr
        and "Traceback" not in bad.stderr
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA GPU")
def test_cuda_graph_steps_equal_eager_steps(tiny_model_dir):
    from proctor.models.hf.static import static_greedy_decode

    model = HFModel(tiny_model_dir, device="cuda", batch_size=8)
    ids = [model.encode(r.prompt) for r in _requests()]
    runs = {
        graphs: static_greedy_decode(
            model.model, model.tokenizer, ids, 10, ("\n",), model._eos_ids(), "cuda", batch_size=8, graphs=graphs
        )
        for graphs in (False, True)
    }
    assert [(d.tokens, d.reason) for d in runs[True]] == [(d.tokens, d.reason) for d in runs[False]]


def test_the_stop_filter_stops_where_decoding_every_tail_would(tiny_model_dir, monkeypatch):
    """``Decoder._may_end_stop`` skips decoding a row's tail for tokens that cannot end a stop string;
    every kind of stop string (spanning tokens, ending in a space, a character split over tokens)
    stops exactly where checking at every token does."""
    from proctor.models.hf.decode import Decoder

    model = HFModel(tiny_model_dir, batch_size=4)
    free = [r.text for r in model.generate([GenerateRequest(p, max_tokens=12) for p in PROMPTS])]
    stops = (
        [(t[2:7],) for t in free if len(t) > 8]
        + [(t[3:6] + " ",) for t in free if len(t) > 8]
        + [("é", "\u00a0"), (".\n", "?")]
    )
    requests = [GenerateRequest(p, max_tokens=12, stop=stop) for p in PROMPTS for stop in stops]
    filtered = [(r.text, r.finish_reason) for r in model.generate(requests)]
    monkeypatch.setattr(Decoder, "_may_end_stop", lambda self, token: True)
    assert [(r.text, r.finish_reason) for r in model.generate(requests)] == filtered
    assert sum(reason == "stop" for _, reason in filtered) >= len(PROMPTS)
