"""``text.control-token``: a model's control token written as text in what a task's rows give the model: GLM's
'[MASK]' at the end of every GLM-130B input (GLM-130B appends its own mask token, so the data's is text even to
GLM), '<|endoftext|>' between a scraped document's parts, '</s>' closing every reference, a chat turn's
'<|im_start|>' copied from a formatted dump. Before a model loads, no tokenizer says what is special: a causal
model reads the characters ('[MASK]' as five tokens of text, and the choices are scored after it), and a model
whose token it is reads a control token where the data meant text. Either way the prompt is not the benchmark's.

What the rows give is read, not what a chat template adds: the audit sees prompts before any template wraps them.
A chat turn the task's own text writes by hand (the same in every prompt) is a choice of format for a chat model
(``chat.written-by-hand`` names it under a chat template too, and ``text.special-tokens`` once the model loads), so
chat markers count only in the rows' own part. Spellings no text means otherwise ('<|endoftext|>', '[gMASK]')
count where a tenth of the rows read hold them; those that can be text ('<s>' is HTML's strike-through, '[MASK]'
a blank to fill in a question) where nearly every row does ('<unk>' is left out: WikiText's and the Penn
Treebank's texts write it for a rare word, and are scored so by design), and '[MASK]' only where the prompt ends
with it (the answer is scored after it; a blank inside the question is a blank a reader fills). The first rows
only."""

from __future__ import annotations

import os
import re
from typing import Iterator

from proctor.audit.subject import AuditSubject
from proctor.core.audit import AuditRule, Hit

PROBE_ROWS = 1000
FIRST_ROWS = 200  # rows read before giving up: a token of the data's shows in these
SOME = 0.1  # of the rows read, for a spelling no text means otherwise
NEARLY_ALL = 0.9  # for a spelling that can be text
MIN_ROWS = 2

# spelling -> whose token it is, for the message
_CHAT = {
    "<|im_start|>": "ChatML's turn start (Qwen, ...)",
    "<|im_end|>": "ChatML's turn end",
    "<|start_header_id|>": "Llama 3's role header",
    "<|end_header_id|>": "Llama 3's role header",
    "<|eot_id|>": "Llama 3's end of turn",
    "[INST]": "Llama 2's and Mistral's instruction turn",
    "[/INST]": "Llama 2's and Mistral's instruction turn",
    "<<SYS>>": "Llama 2's system turn",
    "<start_of_turn>": "Gemma's turn start",
    "<end_of_turn>": "Gemma's turn end",
    "<|user|>": "a chat format's user turn (Phi, Zephyr, ChatGLM)",
    "<|assistant|>": "a chat format's assistant turn",
    "<|system|>": "a chat format's system turn",
    "<|end|>": "Phi's end of turn",
}
_DISTINCT = {
    "<|endoftext|>": "GPT-2's, Qwen's and Phi's end of text",
    "<|begin_of_text|>": "Llama 3's start of text",
    "<|end_of_text|>": "Llama 3's end of text",
    "[gMASK]": "GLM's generation mask",
    "[sMASK]": "GLM's sentence mask",
    "<|startofpiece|>": "GLM's start of piece",
    "<|endofpiece|>": "GLM's end of piece",
    "<extra_id_0>": "T5's sentinel",
}
_AMBIGUOUS = {
    "<s>": "Llama's and Mistral's start of sequence",
    "</s>": "Llama's, Mistral's and T5's end of sequence",
    "<pad>": "a tokenizer's padding",
    "<mask>": "RoBERTa's mask",
    "[CLS]": "BERT's classification token",
    "[SEP]": "BERT's separator",
    "[PAD]": "BERT's padding",
}
# spellings a hand-written chat format opens or closes a prompt with ('<s>[INST] ...'): the task's own text may
# write them as it writes the chat markers
_FORMAT_ENDS = frozenset({"<s>", "</s>", "<|begin_of_text|>"})
_MASK_END = "[MASK]"  # GLM's and BERT's mask, counted where the prompt ends with it
_ALL = {**_CHAT, **_DISTINCT, **_AMBIGUOUS, _MASK_END: "GLM's and BERT's blank-infilling mask"}
_SEARCH = re.compile("|".join(re.escape(t) for t in sorted(_ALL, key=len, reverse=True)))


def _tokens(text: str, chat: bool) -> set[str]:
    """The control-token spellings in ``text`` ('[MASK]' only at its end; chat markers only where ``chat``)."""
    found = set(_SEARCH.findall(text)) if "<" in text or "[" in text else set()
    if _MASK_END in found and not text.rstrip().endswith(_MASK_END):
        found.discard(_MASK_END)
    return found if chat else found - _CHAT.keys() - _FORMAT_ENDS


_PLACES = {"prompt": "prompts", "choices": "choices", "target": "references", "text": "scored texts"}


def _shared_ends(texts: list[str]) -> tuple[int, int]:
    """The lengths of the text all ``texts`` start with and end with, to the character (a chat turn written by
    hand shares the row's line: 'What is it?<|im_end|>')."""
    start = len(os.path.commonprefix([min(texts), max(texts)]))
    tails = [t[::-1] for t in texts]
    end = len(os.path.commonprefix([min(tails), max(tails)]))
    return start, end


def control_token(subject: AuditSubject) -> Iterator[Hit]:
    probe = min(len(subject.samples), PROBE_ROWS)
    if probe < MIN_ROWS:
        return
    texts, samples = subject.prompt_texts, subject.samples
    start, end = _shared_ends(texts[:probe])
    shared = _tokens(texts[0][:start] + "\n" + texts[0][len(texts[0]) - end :], chat=False)  # the task's own text
    counts: dict[tuple[str, str], list[int]] = {}
    for i in range(probe):
        if i == FIRST_ROWS and not counts and not shared:
            return
        sample = samples[i]
        prompt = texts[i]
        own = prompt[start : max(start, len(prompt) - end)]
        where = [("prompt", _tokens(own, chat=True) | _tokens(prompt, chat=False))]
        if sample.text:  # a perplexity row's scored text
            where.append(("text", _tokens(sample.text, chat=True)))
        if sample.choices:
            where.append(("choices", set().union(*(_tokens(c, chat=True) for c in sample.choices))))
        if sample.references:
            where.append(("target", set().union(*(_tokens(r, chat=True) for r in sample.references))))
        for field, tokens in where:
            for token in tokens:
                counts.setdefault((field, token), []).append(i)
    found = []
    for (field, token), rows in counts.items():
        share = NEARLY_ALL if token in _AMBIGUOUS or token == _MASK_END else SOME
        if len(rows) >= max(MIN_ROWS, share * probe) or (len(rows) == probe and probe >= MIN_ROWS):
            found.append((len(rows), field, token, rows[0]))
    if not found:
        return
    count, field, token, first = max(found)
    mask = token in (_MASK_END, "[gMASK]", "[sMASK]")
    place = " at the end of each prompt" if token == _MASK_END else ""
    glm = " (GLM-130B appends its own mask token, so this one is text even to GLM)" if mask else ""
    yield subject.at_row(
        samples[first].sample,
        f"the {_PLACES[field]} hold {token!r} ({_ALL[token]}) written as text{place} in {count} of the {probe} "
        "rows read: a model whose token it is not reads those characters as text (and is scored after them), and "
        f"one whose token it is reads a control token where the benchmark has text{glm}; drop it from the data",
        field,
    )


RULES = (
    AuditRule(
        "text.control-token",
        "warning",
        "A model's control token written as text in most rows' prompts, choices or references ('[MASK]' ending every "
        "GLM-130B input, '<|endoftext|>', '</s>', a chat turn's '<|im_start|>' in the data): a model reads characters, "
        "or a control token, where the benchmark has neither.",
        control_token,
    ),
)
