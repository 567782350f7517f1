"""Batched tokenising (``hf_scoring.encode_many``) gives the ids transformers' own tokenizer call gives.

encode_many reads the Rust tokenizer's ids directly where the wrapper is the stock one; these tests
hold it to ``tokenizer(texts, add_special_tokens=False)`` on awkward text, on a backend left with
truncation or padding by someone else, and on a class that encodes its own way (which must not take
the direct path)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from proctor.models.hf.scoring import _backend_ids, encode_many, encode_pairs  # noqa: E402

AWKWARD = [
    "A man is sitting on a roof. he",
    " starts pulling up roofing on a roof.",
    "<|im_end|> a special token written as text<|im_start|>user",
    "  two leading spaces and a trailing one ",
    "tabs\tand\nnewlines\r\n\n",
    "ünïcödé, 中文, emoji 🙂🙂 and a zero-width\u200bjoiner",
    " ",
    "x" * 3000,
    "The answer is: 42",
    "The answer is: 42",  # a repeat: encoded once, given back twice
]


@pytest.fixture(scope="module")
def tokenizer(smollm2_tokenizer_dir):
    return transformers.AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)


def test_direct_ids_equal_the_wrappers(tokenizer):
    expected = tokenizer(AWKWARD, add_special_tokens=False).input_ids
    assert _backend_ids(tokenizer, list(AWKWARD)) is not None  # the stock fast tokenizer takes the direct path
    assert encode_many(tokenizer, AWKWARD) == expected
    assert encode_many(tokenizer, []) == []


def test_pairs_split_as_lm_eval_does(tokenizer):
    pairs = [("Question: 2+2?\nAnswer:", " 4"), ("<|im_start|>", "user"), ("", " alone")]
    context = tokenizer(pairs[0][0], add_special_tokens=False).input_ids
    whole = tokenizer(pairs[0][0] + pairs[0][1], add_special_tokens=False).input_ids
    alone = tokenizer(" alone", add_special_tokens=False).input_ids
    got = encode_pairs(tokenizer, pairs, add_bos=False, prefix_token_id=0)
    assert got[0] == (context, whole[len(context) :])
    assert got[2] == ([0], alone)


def test_backend_left_truncating_or_padding_gives_the_wrappers_ids(tokenizer):
    """Another caller may leave truncation or padding set on the Rust tokenizer; the wrapper turns
    them off for a plain call, and so must the direct path (or it must not be taken)."""
    backend = tokenizer.backend_tokenizer
    expected = tokenizer(AWKWARD, add_special_tokens=False).input_ids
    backend.enable_truncation(max_length=4)
    backend.enable_padding(length=64)
    try:
        assert encode_many(tokenizer, AWKWARD) == expected
    finally:
        backend.no_truncation()
        backend.no_padding()


def test_a_tokenizer_with_its_own_encoding_keeps_the_wrapper(tokenizer):
    class Shouting(type(tokenizer)):  # encodes its own way: upper-cases the text first
        def _encode_plus(self, text, *args, **kwargs):
            text = [t.upper() for t in text] if isinstance(text, list) else text.upper()
            return super()._encode_plus(text, *args, **kwargs)

    shouting = Shouting.from_pretrained(tokenizer.name_or_path)
    assert _backend_ids(shouting, list(AWKWARD)) is None
    assert encode_many(shouting, AWKWARD) == shouting(AWKWARD, add_special_tokens=False).input_ids
    assert encode_many(shouting, ["abc"]) != encode_many(tokenizer, ["abc"])
