"""Batch-invariant greedy decoding (``HFModel(batch_invariant=True)``): a prompt's tokens depend on
the prompt alone, checked on a model whose default greedy outputs do change with the batch size."""

from __future__ import annotations

import random

import pytest
import torch

from proctor.core.model_requests import GenerateRequest
from proctor.models.hf.invariant import rows_per_step
from proctor.models.hf.model import HFModel

PROMPTS = [
    f"Question {i}: what is the capital of country number {i * 7}? Answer:" + " word" * (i % 9) for i in range(40)
]
NEW_TOKENS = 16


@pytest.fixture(scope="module")
def near_tie_model_dir(smollm2_tokenizer_dir, tmp_path_factory):
    """A random Llama (hidden 128, 2 layers, untied head) whose output rows come in near-equal pairs
    (1e-7 apart), as a trained model's top two logits sometimes are: greedy choices that the last
    bits of a forward pass decide, in float32 as in bfloat16."""
    from transformers import AutoTokenizer

    from tests.support.random_llama import save_random_llama

    def pair_rows(model):
        head = model.lm_head.weight
        head[1::2] = head[0::2] + 1e-7 * torch.randn_like(head[0::2])

    return save_random_llama(
        tmp_path_factory.mktemp("near-tie-llama"),
        AutoTokenizer.from_pretrained(smollm2_tokenizer_dir),
        adjust=pair_rows,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        initializer_range=0.2,
    )


def _kernel_properties(dtype) -> dict[str, bool]:
    """The CPU kernel properties the mode's guarantee rests on (docs/performance.md, "Greedy
    decoding across batch sizes"), checked on this machine at the test model's shapes: measured on
    the Intel machines of this project, not known for every CPU and BLAS build."""
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    rand = lambda *shape: torch.randn(*shape, generator=g).to(getattr(torch, dtype))  # noqa: E731
    weight, rows, others = rand(512, 128), rand(8, 128), rand(8, 128)
    others[5] = rows[0]
    products = rows @ weight.t()
    q, k, v = rand(8, 4, 1, 32), rand(8, 4, 128, 32), rand(8, 4, 128, 32)
    ends = torch.arange(8) * 7 + 3
    narrow = torch.arange(64)[None, :] <= ends[:, None]
    wide = torch.arange(128)[None, :] <= ends[:, None]
    return {
        # a row of an 8-row product does not depend on the other rows or on its position
        "rows_apart": torch.equal((others @ weight.t())[5], products[0]),
        # nor on the number of rows (1 vs 8)
        "row_count": torch.equal((rows[:1] @ weight.t())[0], products[0]),
        # masked columns past a row's end (cache widths 64 vs 128) change none of its bits
        "width": torch.equal(
            F.scaled_dot_product_attention(q, k[:, :, :64], v[:, :, :64], attn_mask=narrow[:, None, None, :]),
            F.scaled_dot_product_attention(q, k, v, attn_mask=wide[:, None, None, :]),
        ),
    }


def _require(dtype, *names):
    properties = _kernel_properties(dtype)
    missing = [name for name in names if not properties[name]]
    if missing:
        pytest.skip(
            f"this CPU's {dtype} kernels lack {missing}: the mode cannot be exact here (see docs/performance.md)"
        )


def _texts(folder, dtype, batch_size, invariant, prompts=PROMPTS):
    model = HFModel(folder, dtype=dtype, batch_size=batch_size, batch_invariant=invariant)
    return [r.text for r in model.generate([GenerateRequest(p, max_tokens=NEW_TOKENS) for p in prompts])]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_default_greedy_outputs_change_with_the_batch_size_on_this_model(near_tie_model_dir, dtype):
    """The premise: without the mode, this model's greedy outputs differ between batch sizes (as they
    did on every CPU measured; a CPU whose kernels never depend on shapes would not show it)."""
    alone = _texts(near_tie_model_dir, dtype, 1, False)
    if all(_texts(near_tie_model_dir, dtype, size, False) == alone for size in (8, 64)):
        pytest.skip(f"on this CPU the default {dtype} decoding gave the same outputs at batch sizes 1, 8 and 64")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_batch_invariant_outputs_are_the_same_at_every_batch_size_and_request_order(near_tie_model_dir, dtype):
    _require(dtype, "rows_apart", "width")
    alone = _texts(near_tie_model_dir, dtype, 1, True)
    for size in (8, 64, "auto"):
        assert _texts(near_tie_model_dir, dtype, size, True) == alone, size
    order = list(range(len(PROMPTS)))
    random.Random(7).shuffle(order)
    shuffled = _texts(near_tie_model_dir, dtype, 8, True, [PROMPTS[i] for i in order])
    assert [shuffled[k] for k in sorted(range(len(order)), key=order.__getitem__)] == alone


def _generate_reference(model, tokenizer, prompt_ids, copies):
    """transformers' own greedy ``generate`` for one prompt, repeated ``copies`` times (no padding),
    with a static cache 256 columns wide (each token at its own column); the first copy's tokens."""
    from transformers import StaticCache

    ids = torch.tensor([prompt_ids] * copies)
    output = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=NEW_TOKENS,
        temperature=None,
        top_p=None,
        top_k=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        past_key_values=StaticCache(config=model.config, max_cache_len=256),
    )
    new = output[0, len(prompt_ids) :].tolist()
    return new[: new.index(tokenizer.eos_token_id)] if tokenizer.eos_token_id in new else new


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_batch_invariant_outputs_equal_transformers_generate(near_tie_model_dir, dtype):
    """Independent expectation: transformers' ``generate`` on each prompt by itself with a static
    cache. In bfloat16 one prompt alone (matrix products here do not depend on the row count); in
    float32, whose products do, the prompt repeated to the mode's fixed row count."""
    _require(dtype, "rows_apart", "width", *(["row_count"] if dtype == "bfloat16" else []))
    backend = HFModel(near_tie_model_dir, dtype=dtype, batch_size=64, batch_invariant=True)
    results = backend.generate([GenerateRequest(p, max_tokens=NEW_TOKENS) for p in PROMPTS])
    copies = 1 if dtype == "bfloat16" else rows_per_step("cpu")
    for prompt, result in zip(PROMPTS, results):
        expected = _generate_reference(backend.model, backend.tokenizer, backend.encode(prompt), copies)
        assert result.text == backend.tokenizer.decode(expected, skip_special_tokens=True), prompt


def test_eager_attention_is_batch_invariant_too(near_tie_model_dir):
    """Models on transformers' eager attention get an additive mask instead of SDPA's boolean one."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _require("bfloat16", "rows_apart", "width")
    tokenizer = AutoTokenizer.from_pretrained(near_tie_model_dir)
    texts = []
    for size in (1, 64):
        model = AutoModelForCausalLM.from_pretrained(
            near_tie_model_dir, dtype=torch.bfloat16, attn_implementation="eager"
        ).eval()
        backend = HFModel.from_loaded(model, tokenizer, batch_size=size, batch_invariant=True)
        texts.append(
            [r.text for r in backend.generate([GenerateRequest(p, max_tokens=NEW_TOKENS) for p in PROMPTS[:20]])]
        )
    assert texts[0] == texts[1]


def test_the_mode_is_part_of_the_fingerprint(tiny_model_dir):
    from proctor.runs.store import fingerprint_hash

    default, invariant = HFModel(tiny_model_dir), HFModel(tiny_model_dir, batch_invariant=True)
    assert "batch_invariant" not in default.fingerprint  # default fingerprints (and stored answers) unchanged
    assert invariant.fingerprint["batch_invariant"]
    assert fingerprint_hash(default.fingerprint) != fingerprint_hash(invariant.fingerprint)


def test_the_mode_is_a_model_option(tiny_model_dir):
    """``--model-arg batch_invariant=true`` reaches the backend (options are checked by name)."""
    from proctor.models.registry import check_model_options, load_model

    check_model_options(f"hf:{tiny_model_dir}", {"batch_invariant": True})
    assert load_model(f"hf:{tiny_model_dir}", batch_invariant=True).batch_invariant


def test_a_sliding_window_model_is_refused_clearly(tiny_model):
    from transformers import MistralConfig, MistralForCausalLM

    from proctor.core.errors import ModelLoadError

    config = MistralConfig(
        vocab_size=len(tiny_model.tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=4,
        max_position_embeddings=128,
    )
    backend = HFModel.from_loaded(MistralForCausalLM(config).eval(), tiny_model.tokenizer, batch_invariant=True)
    with pytest.raises(ModelLoadError, match="sliding-window"):
        backend.generate([GenerateRequest("Once upon a time", max_tokens=3)])
