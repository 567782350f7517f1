"""Each task's ``settings`` in results.json: what it ran with that changes its numbers (few-shot, chat, system
prompt, limit, generation, backend, dtype, model arguments, formulation, epochs), read from the task's spec as
the run's overrides left it, the model's fingerprint and the run's configuration. ``compare`` and the viewer
name every setting that differs between two runs (runs/task_settings.py)."""

from __future__ import annotations

import hashlib
import re
from typing import Mapping

from proctor.core.redact import mask_url_credentials
from proctor.engine.prepare import PreparedTask
from proctor.engine.run_config import RunConfig
from proctor.kinds.capabilities import PredictsSamples, ReportsJudgeSettings
from proctor.runs.task_result import TaskResult, TaskSettings
from proctor.runs.task_settings import inert_options

# --model-arg names that hold a credential: left out (a key changes no number, and results.json is shared)
_SECRET = re.compile(r"key|token|secret|password|passwd|auth|credential", re.IGNORECASE)


def chat_template_digest(template: object) -> str | None:
    """The first 16 hex digits of the template's sha256: two runs on the same template show the same digest."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:16] if isinstance(template, str) else None


def _plain(value: object) -> str | int | float | bool | None:
    if isinstance(value, str):
        return mask_url_credentials(value)  # http://user:password@host: the password left out
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)


def model_args(options: Mapping[str, object], backend: object = None) -> dict[str, str | int | float | bool | None]:
    """--model-arg values that can change a request or an answer, as plain JSON values: credentials and the
    options ``backend`` declares inert (``ModelBackend.inert_options``: address, prices, pace) left out."""
    inert = inert_options(backend)
    out: dict[str, str | int | float | bool | None] = {}
    for name, value in sorted(options.items()):
        if _SECRET.search(str(name)) or name in inert:
            continue
        if name == "dtype" or (name == "device" and value in ("auto", "cpu")):
            continue  # the dtype as resolved is its own setting; the command line's default device is the API's
        out[str(name)] = _plain(value)
    return out


def model_info(options: Mapping[str, object], backend: object = None) -> dict[str, str | int | float | bool | None]:
    """The --model-arg values ``backend`` declares inert: recorded beside the settings, as information only."""
    inert = inert_options(backend)
    return {str(n): _plain(v) for n, v in sorted(options.items()) if n in inert and not _SECRET.search(str(n))}


def _template_default(prepared: PreparedTask, info: Mapping[str, object]) -> str | None:
    """The system message the model's chat template wrote into prompts that held none (models/info.py): it
    reached the model, so it is the task's system prompt."""
    default = info.get("chat_default_system")
    first = next((s.prompt.messages for s in prepared.samples if s.prompt.messages), None)
    if not isinstance(default, str) or first is None or any(role == "system" for role, _ in first):
        return None
    return default


def task_settings(
    prepared: PreparedTask,
    result: TaskResult,
    fingerprint: Mapping[str, object],
    info: Mapping[str, object],
    config: RunConfig,
    server_chat: bool = False,
) -> TaskSettings:
    """The settings of a task that has run (``result`` gives how it was formulated and lm-eval's few-shot count).
    ``server_chat``: the server applies its own chat template to generation prompts (a chat endpoint), so a task
    that generates ran through a chat template whatever proctor's own chat setting."""
    spec = prepared.task.spec
    overrides = config.prepare.overrides
    own_code = isinstance(prepared.handler, PredictsSamples)  # it builds its own prompts and requests
    if result.n_shot is not None:
        fewshot: int | None = result.n_shot
    elif spec.fewshot is not None:
        fewshot = spec.fewshot.count
    else:
        fewshot = overrides.num_fewshot if own_code else 0
    source = None
    if spec.fewshot is not None and spec.fewshot.count:
        given = spec.fewshot.source
        source = "task data" if given is None else (given.path or given.hub or "task data")
        if given is not None and given.split:
            source += f" (split {given.split})"
    system = spec.chat.system if spec.chat is not None and spec.chat.system is not None else overrides.system_prompt
    if spec.kind == "perplexity":  # its texts are scored as written (engine/override_policy skips the flag)
        system = None
    if system is None and prepared.use_chat and not own_code:
        system = _template_default(prepared, info)
    generates = spec.kind == "generate" or result.mc_format == "generate"
    generation: dict[str, object] | None = None
    if generates:
        generation = (dict(overrides.gen_kwargs) or None) if own_code else spec.generation.model_dump(mode="json")
        if not own_code and spec.kind == "multiple_choice":  # lettered replies: what their requests were sent with
            from proctor.kinds.mc_generate import lettered_generation

            generation = lettered_generation(prepared.lettered_max_tokens).model_dump(mode="json")
    limit = _limit_in_force(config.limit.value, spec.limit, bool(config.limit.per_part))
    backend, dtype = fingerprint.get("backend"), fingerprint.get("dtype")
    handler: object = prepared.handler  # a use case's judges say what they ran with (ReportsJudgeSettings)
    return TaskSettings(
        fewshot=fewshot,
        fewshot_source=source,
        fewshot_seed=spec.fewshot.seed if source is not None and spec.fewshot is not None else None,
        chat=prepared.use_chat or (server_chat and generates),
        chat_template=chat_template_digest(info.get("chat_template")) if prepared.use_chat else None,
        system_prompt=system,
        limit=limit,
        limit_per_part=bool(config.limit.per_part) and limit is not None,
        sample_ids=list(config.limit.sample_ids) or None,
        generation=generation,
        backend=str(backend) if backend is not None else None,
        dtype=str(dtype) if dtype is not None else None,
        model_args=model_args(config.model.options, backend),
        model_info=model_info(config.model.options, backend) or None,
        mc_format=result.mc_format,
        mc_shuffle=prepared.mc_shuffle_seed if result.mc_format == "generate" else None,
        epochs=prepared.epochs,
        epoch_reducer=prepared.epoch_reducer if prepared.epochs > 1 else None,
        think_end_token=prepared.think_end_token if generates else None,
        think_budget=prepared.think_budget if generates else None,
        judges=handler.judge_settings() if isinstance(handler, ReportsJudgeSettings) else None,
    )


def _limit_in_force(given: int | float | None, own: int | None, per_part: bool) -> int | float | None:
    """The limit the task's rows were taken by: ``--limit N`` and the task file's own ``limit`` both apply, so the
    smaller count is the one in force (a file's ``limit: 3`` under ``--limit 6`` takes 3 rows, and says 3); a
    fraction, or a limit per part, is recorded as given (the file's own cap is in its spec, in the content hash)."""
    if given is None:
        return own
    if own is None or per_part or isinstance(given, float):
        return given
    return min(given, own)
