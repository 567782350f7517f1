"""GLM's tokenizer interface (``tokenize``, ``detokenize``, ``tokenizer.decode``, ``get_command``) over
the evaluated model's own tokenizer, and ``get_tokenizer()`` for the task being run.

GLM's special tokens have no counterpart in a causal model: ``eos`` / ``eop`` are the model's end
token; ``[MASK]``, ``[gMASK]`` and ``sop`` get negative ids that never occur in real text (proctor's
dataset stand-ins do not insert them: a causal model reads the context and continues it).
"""

from __future__ import annotations

import contextvars
from typing import Any

from proctor.core.errors import ProctorError

COMMANDS = {"[MASK]": -2, "[gMASK]": -3, "[sMASK]": -4, "sop": -5}

_CURRENT: contextvars.ContextVar["GLMTokenizer | None"] = contextvars.ContextVar("glm_tokenizer", default=None)


class GLMTokenizer:
    def __init__(self, model: Any) -> None:
        from proctor.kinds.token_scores import require_local

        require_local(model, "a GLM-130B task class")
        self.hf = model.tokenizer
        self.eos_id = self.hf.eos_token_id
        self.tokenizer = self  # GLM's code calls tokenizer.tokenizer.decode(ids)

    def tokenize(self, text: str) -> list[int]:
        return list(self.hf(text, add_special_tokens=False).input_ids)

    def detokenize(self, ids) -> str:
        return self.decode(ids)

    def decode(self, ids) -> str:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, int):
            ids = [ids]
        return self.hf.decode([int(i) for i in ids if int(i) >= 0], skip_special_tokens=True)

    def get_command(self, name: str) -> int:
        if name in ("eos", "eop", "ENC", "pad"):
            return int(self.eos_id)
        if name in COMMANDS:
            return COMMANDS[name]
        raise KeyError(f"GLM command token '{name}' has no counterpart in the evaluated model's tokenizer")

    @property
    def num_tokens(self) -> int:
        return len(self.hf)


def get_tokenizer() -> GLMTokenizer:
    tokenizer = _CURRENT.get()
    if tokenizer is None:
        raise ProctorError(
            "GLM's get_tokenizer() is available only while proctor runs a GLM-130B task (the model's tokenizer)"
        )
    return tokenizer


def use_tokenizer(tokenizer: GLMTokenizer | None):
    """Set the current tokenizer; returns the token for ``reset_tokenizer``."""
    return _CURRENT.set(tokenizer)


def reset_tokenizer(token) -> None:
    _CURRENT.reset(token)
