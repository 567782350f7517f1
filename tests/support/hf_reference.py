"""Log-probs from transformers called directly, without proctor: text on the tiny Llama, image-conditioned on a VLM."""

from __future__ import annotations

import pytest

# torch, transformers and Pillow are imported where used: importing this module needs none of them.


def direct_loglikelihood(
    model, tokenizer, context: str, continuation: str, move_whitespace: bool = True
) -> tuple[float, bool]:
    """Independent reference: one unbatched forward over the full sequence, logits everywhere
    (lm-eval's rule: the context's trailing whitespace moves into the continuation, unless not asked)."""
    import torch

    n_spaces = len(context) - len(context.rstrip())
    if n_spaces and move_whitespace:
        context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
    if context:
        whole = tokenizer(context + continuation, add_special_tokens=False).input_ids
        ctx = tokenizer(context, add_special_tokens=False).input_ids
        cont = whole[len(ctx) :]
    else:
        ctx = [tokenizer.bos_token_id]
        cont = tokenizer(continuation, add_special_tokens=False).input_ids
    ids = torch.tensor([ctx + cont])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    logprobs = torch.log_softmax(logits, -1)
    total, greedy = 0.0, True
    for k, token in enumerate(cont):
        position = len(ctx) + k - 1
        total += logprobs[position, token].item()
        greedy &= int(logits[position].argmax()) == token
    return total, greedy


@pytest.fixture(scope="module")
def reference(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    return model, tokenizer


def reference_logprob(direct, messages_or_text, image_bytes: bytes, continuation: str) -> list[float]:
    """transformers directly: processor chat template (or the plain text), pixels, one forward, log-softmax."""
    import io

    import torch
    from PIL import Image

    processor, model = direct
    if isinstance(messages_or_text, list):
        context = processor.apply_chat_template(messages_or_text, tokenize=False, add_generation_prompt=True)
    else:
        context = messages_or_text
    image = Image.open(io.BytesIO(image_bytes)).convert("RGB")
    # lm-eval's rule: the context's trailing whitespace moves into the continuation
    stripped = context.rstrip()
    continuation = context[len(stripped) :] + continuation
    full = processor(text=[stripped + continuation], images=[image], return_tensors="pt", add_special_tokens=False)
    n_context = processor(text=[stripped], images=[image], return_tensors="pt", add_special_tokens=False)[
        "input_ids"
    ].shape[1]
    with torch.no_grad():
        logits = model(**full).logits[0]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    ids = full["input_ids"][0]
    return [float(logprobs[p - 1, ids[p]]) for p in range(n_context, len(ids))]
