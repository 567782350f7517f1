"""Steering controls: the base class, input controls (prompt side) and output controls (decoding).

A control has a ``kind`` — ``input``, ``structural``, ``state`` or ``output`` — and a ``name`` (its
class name unless given), which is the key of its per-example arguments in ``runtime_overrides``.
Every control keeps its settings in ``params`` so that a configuration has a stable description.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import random
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Mapping, Sequence, cast

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

Messages = list[dict[str, str]]  # chat messages: {"role": ..., "content": ...}
# A control's settings by keyword (its constructor's arguments: texts, numbers, tensors, functions).
ControlParams = dict[str, Any]
# One control's per-example arguments (a value of ``runtime_overrides``: ``strength``, ``text``, ``k``, ...).
RuntimeArguments = Mapping[str, Any]
# transformers' logits processor: (input ids, scores of the next token) -> new scores
LogitsProcessor = Callable[["torch.Tensor | None", "torch.Tensor"], "torch.Tensor"]


def describe(value: object) -> object:
    """A JSON-able, stable description of a setting (callables by qualified name, tensors by digest)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): describe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    if hasattr(value, "detach") and hasattr(value, "shape"):  # a tensor
        data = value.detach().float().cpu().numpy().tobytes()
        return {"tensor": list(value.shape), "sha256": hashlib.sha256(data).hexdigest()[:12]}
    return repr(value)


class Control:
    """Base class of steering controls."""

    kind: ClassVar[str] = ""
    supports_batching: ClassVar[bool] = True

    def __init__(self, name: str | None = None, **params: object) -> None:
        if self.kind not in ("input", "structural", "state", "output"):
            raise TypeError(f"{type(self).__name__}.kind must be input, structural, state or output")
        self.name = name or type(self).__name__
        self.params: ControlParams = params

    def steer(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel | None:
        """Prepare once (train, compute vectors). A structural control returns the model the rest
        of the pipeline runs (a patched copy); controls never change the shared base model."""

    def cleanup(self) -> None:
        """Let go of what ``steer`` prepared."""

    def config(self) -> dict[str, object]:
        return {"control": type(self).__name__, "name": self.name, "kind": self.kind, "params": describe(self.params)}

    def check_runtime(self, kwargs: RuntimeArguments) -> None:
        """Reject per-example arguments this control does not take."""
        allowed = self.runtime_arguments()
        unknown = sorted(set(kwargs) - set(allowed))
        if unknown:
            raise ValueError(
                f"control '{self.name}' takes no runtime argument(s) {unknown}; it takes {sorted(allowed)}"
            )

    def runtime_arguments(self) -> tuple[str, ...]:
        return tuple(self.params)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({json.dumps(describe(self.params), sort_keys=True)[:120]})"


# ---------------------------------------------------------------------------------------- input
class InputControl(Control):
    kind = "input"

    def transform(self, messages: Messages, **runtime: object) -> Messages:
        raise NotImplementedError


def _last_user(messages: Messages) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    raise ValueError("the prompt has no user message to steer")


class SystemPrompt(InputControl):
    """Put a system message in front (replacing any there). Runtime argument: ``text``."""

    def __init__(self, text: str, name: str | None = None) -> None:
        super().__init__(name, text=text)

    def transform(self, messages: Messages, **runtime: object) -> Messages:
        text = cast(str, runtime.get("text", self.params["text"]))
        if not text:
            return messages
        rest = [m for m in messages if m.get("role") != "system"]
        return [{"role": "system", "content": text}, *rest]


class PromptRewrite(InputControl):
    """Rewrite the last user message, with a ``template`` (``{prompt}`` and runtime fields) or a
    function ``fn(prompt, **runtime) -> str``. Runtime arguments go to the template or function."""

    def __init__(
        self, template: str | None = None, fn: Callable[..., str] | None = None, name: str | None = None
    ) -> None:
        if (template is None) == (fn is None):
            raise ValueError("PromptRewrite takes exactly one of template= or fn=")
        if template is not None and "{prompt}" not in template:
            raise ValueError("PromptRewrite template must contain {prompt}")
        super().__init__(name, template=template, fn=fn)

    def runtime_arguments(self) -> tuple[str, ...]:
        return ("*",)

    def check_runtime(self, kwargs: RuntimeArguments) -> None:
        fn = self.params["fn"]
        if fn is not None:
            signature = inspect.signature(fn)
            if not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
                unknown = sorted(set(kwargs) - set(signature.parameters))
                if unknown:
                    raise ValueError(f"control '{self.name}': its function takes no argument(s) {unknown}")

    def transform(self, messages: Messages, **runtime: object) -> Messages:
        index = _last_user(messages)
        prompt = messages[index]["content"]
        if self.params["fn"] is not None:
            content = self.params["fn"](prompt, **runtime)
        else:
            content = self.params["template"].format(prompt=prompt, **runtime)
        out = [dict(m) for m in messages]
        out[index]["content"] = content
        return out


class FewShot(InputControl):
    """Show ``k`` solved examples as earlier chat turns before the prompt.

    Examples are drawn from ``examples`` (dicts with ``question_key`` and ``answer_key``) with a
    generator seeded by ``seed`` and the prompt text, so each prompt always gets the same shots.
    Runtime arguments: ``k``, ``examples``.
    """

    def __init__(
        self,
        examples: Sequence[Mapping[str, object]],
        k: int = 3,
        seed: int = 0,
        question_key: str = "question",
        answer_key: str = "answer",
        name: str | None = None,
    ) -> None:
        if k < 0:
            raise ValueError("FewShot k must be >= 0")
        for index, example in enumerate(examples):
            missing = [key for key in (question_key, answer_key) if key not in example]
            if missing:
                raise ValueError(f"FewShot example {index} lacks {missing}")
        super().__init__(
            name, examples=list(examples), k=k, seed=seed, question_key=question_key, answer_key=answer_key
        )

    def runtime_arguments(self) -> tuple[str, ...]:
        return ("k", "examples")

    def transform(self, messages: Messages, **runtime: object) -> Messages:
        k = int(cast(int, runtime.get("k", self.params["k"])))
        pool = list(cast("Sequence[Mapping[str, object]]", runtime.get("examples", self.params["examples"])))
        if k == 0 or not pool:
            return messages
        index = _last_user(messages)
        digest = hashlib.sha256(f"{self.params['seed']}\0{messages[index]['content']}".encode()).hexdigest()
        shots = random.Random(int(digest[:16], 16)).sample(pool, min(k, len(pool)))
        turns: Messages = []
        for shot in shots:
            turns.append({"role": "user", "content": str(shot[self.params["question_key"]])})
            turns.append({"role": "assistant", "content": str(shot[self.params["answer_key"]])})
        return messages[:index] + turns + messages[index:]


# ---------------------------------------------------------------------------------------- output
class OutputControl(Control):
    kind = "output"

    def logits_processors(
        self, tokenizer: PreTrainedTokenizerBase, rows: list[RuntimeArguments]
    ) -> list[LogitsProcessor]:
        """Logits processors for a batch whose rows have these runtime arguments."""
        raise NotImplementedError


def word_token_ids(tokenizer: PreTrainedTokenizerBase, word: str) -> list[int]:
    """First token of the word, alone and after a space (how it starts a reply or follows a word)."""
    ids = set()
    for variant in (word, " " + word):
        encoded = tokenizer(variant, add_special_tokens=False).input_ids
        if encoded:
            ids.add(encoded[0])
    return sorted(ids)


class TokenBias(OutputControl):
    """Ban tokens or shift their logits while decoding.

    ``bias`` maps words to a logit offset (multiplied by ``strength``); ``banned`` words can never
    be produced. Words act through their first token (see ``word_token_ids``); integers are taken
    as token ids. Runtime arguments: ``strength``, ``banned``, ``bias``.
    """

    def __init__(
        self,
        bias: Mapping[str | int, float] | None = None,
        banned: Sequence[str | int] = (),
        strength: float = 1.0,
        name: str | None = None,
    ) -> None:
        super().__init__(name, bias=dict(bias or {}), banned=list(banned), strength=float(strength))

    def _ids(self, tokenizer: PreTrainedTokenizerBase, word: str | int) -> list[int]:
        return [word] if isinstance(word, int) else word_token_ids(tokenizer, word)

    def logits_processors(
        self, tokenizer: PreTrainedTokenizerBase, rows: list[RuntimeArguments]
    ) -> list[LogitsProcessor]:
        import torch

        rows_bias = []
        for row in rows:
            strength = float(row.get("strength", self.params["strength"]))
            bias: dict[int, float] = {}
            for word, value in row.get("bias", self.params["bias"]).items():
                for token in self._ids(tokenizer, word):
                    bias[token] = bias.get(token, 0.0) + float(value) * strength
            for word in row.get("banned", self.params["banned"]):
                for token in self._ids(tokenizer, word):
                    bias[token] = float("-inf")
            rows_bias.append(bias)

        def process(input_ids: torch.Tensor | None, scores: torch.Tensor) -> torch.Tensor:
            if not any(rows_bias):
                return scores
            scores = scores.clone()
            repeat = scores.shape[0] // len(rows_bias)
            for r, bias in enumerate(rows_bias):
                if not bias:
                    continue
                tokens = torch.tensor(list(bias), device=scores.device)
                values = torch.tensor(list(bias.values()), dtype=scores.dtype, device=scores.device)
                for b in range(r * repeat, (r + 1) * repeat):
                    scores[b, tokens] = scores[b, tokens] + values
            return scores

        return [process]


@contextlib.contextmanager
def nothing() -> Iterator[None]:
    yield None
