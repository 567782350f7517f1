"""What a reply's own text holds, read without its references: characters no answer writes (controls, a
byte-order mark, zero-width and bidirectional controls in a Latin text), a think marker, the prompt echoed back,
a refusal written as text. The outcome tally (runs/outcome_tally.py) counts each."""

from __future__ import annotations

import json
import re

_STRAY = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\u2060]")  # C0 controls, DEL, BOM, word joiner
# zero-width space and joiners: word breaks in Khmer, Burmese and Thai, joiners in Indic scripts and emoji; and the
# bidirectional marks and overrides, which Hebrew and Arabic text uses: stray only in a text of Latin (or other
# alphabetic) letters, where no script uses them (a right-to-left override before '7' reorders what is shown)
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u200e\u200f\u202a-\u202e\u2066-\u2069]")
THINK = re.compile(r"</?think(?:ing)?>", re.IGNORECASE)
_CHAT_PREFIX = "<|proctor:chat|>"  # models/openai/messages.CHAT_PREFIX: a chat prompt as text
ECHO_MIN = 8  # characters an answer must share with its prompt's start to be an echo, not a short coincidence
# a refusal written as text (no server flag): an apology with a can't, or a can't-help opening (English only)
_REFUSAL = re.compile(
    r"^\W*(?:(?:i'?m|i am) sorry|sorry|i apologi[sz]e)\b[^.!?\n]{0,60}"
    r"\b(?:can'?t|cannot|can not|unable|won'?t|not able)\b"
    r"|^\W*(?:i (?:can'?t|cannot|won'?t)|i'?m (?:unable|not able) to|i am (?:unable|not able) to) "
    r"(?:help|assist|answer|provide|comply|fulfil|do that)\b"
    r"|\bas an ai(?: language model)?\b",
    re.IGNORECASE,
)


def is_refusal(text: str) -> bool:
    return _REFUSAL.search(text.replace("\u2019", "'")) is not None


def is_stray(text: str) -> bool:
    if _STRAY.search(text):
        return True
    return _ZERO_WIDTH.search(text) is not None and all(ord(c) < 0x0590 or _ZERO_WIDTH.match(c) for c in text)


def _prompt_text(prompt: str) -> str:
    """A chat prompt's last message (what a chat reply could echo); a plain prompt as it is."""
    if not prompt.startswith(_CHAT_PREFIX):
        return prompt
    try:
        messages = json.loads(prompt[len(_CHAT_PREFIX) :])
        content = messages[-1].get("content") if messages else None
    except (ValueError, AttributeError, TypeError):
        return prompt
    return content if isinstance(content, str) else ""


def is_echo(answer: str, prompt: str) -> bool:
    """The answer begins with its prompt (or is the prompt's first line): a server that echoes what it was sent."""
    a, p = answer.strip(), _prompt_text(prompt).strip()
    if len(a) < ECHO_MIN or len(p) < ECHO_MIN:
        return False
    # a prefix counts only when it is the prompt's whole first line(s): a summary may copy an article's lead
    # sentence, and that is the model's answer, not an echo
    first_lines = p.startswith(a) and p[len(a) : len(a) + 1] in ("", "\n")
    return a.startswith(p) or (first_lines and len(a) >= min(len(p), 2 * ECHO_MIN))
