"""A judge as a function: chat messages in, the model's reply out (SEA-HELM pairwise / criteria judges).

Works with any backend that has a chat template: a local Hugging Face model renders it itself; an
OpenAI-compatible server applies its own. ``judge_load_options`` says how a judge named by a ``--model``-style
string loads, with its own server settings for ``openai:<name>``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from proctor.core.errors import ProctorError
from proctor.core.model_requests import GenerateRequest
from proctor.models.base import Model

Judge = Callable[[Sequence[dict[str, Any]]], str]  # chat messages -> the reply


def judge_function(model: Model, *, max_tokens: int = 512, temperature: float = 0.0, seed: int = 0) -> Judge:
    if not model.has_chat_template:
        raise ProctorError(f"model '{model.name}' has no chat template and cannot act as a judge")

    def judge(messages: Sequence[dict[str, Any]]) -> str:
        prompt = model.apply_chat_template(list(messages))
        return model.generate([GenerateRequest(prompt, max_tokens, (), temperature, 1.0, seed)])[0].text

    return judge


def judge_load_options(
    spec: str, *, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY", **options: Any
) -> dict[str, object]:
    """The backend options a judge named ``spec`` loads with: ``openai:<name>`` needs its server's address and
    reads its key from ``api_key_env``, as the evaluated model does; a local judge takes ``options`` alone."""
    from proctor.core.registry import backend_of

    backend = backend_of(spec)
    if backend is not None and backend.server:
        if not base_url:
            raise ProctorError(
                f"judge '{spec}' needs its server's address: give --judge-base-url (or --base-url, used for both)"
            )
        return {"base_url": base_url, "api_key_env": api_key_env, "name": spec, **options}
    return dict(options)
