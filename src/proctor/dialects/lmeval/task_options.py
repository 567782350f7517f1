"""The options of one lm-eval task, as its handler (``handler.py``) receives them in its spec."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from proctor.dialects.lmeval.stderr import DEFAULT_BOOTSTRAP_ITERS
from proctor.dialects.lmeval.task_config import GenerationKwargs


class LmEvalRunOptions(BaseModel):
    """What proctor's run-time overrides ask of the task, as ``lm_eval.simple_evaluate`` takes them
    (``run_options.py``); part of the spec, so of its content hash and the resume check."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_fewshot: int | None = None
    apply_chat_template: bool = False
    fewshot_as_multiturn: bool = False
    system_instruction: str | None = None
    generation_kwargs: GenerationKwargs = {}  # --gen-kwargs in lm-eval's names, merged into a generate task's own
    seed: int | None = None  # --seed: lm-eval's few-shot seed (default 1234) and the sampling seed of each request


class LmEvalTaskOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str  # lm-eval's task name
    token: str  # name@digest of its resolved config: what the run records and resumes by
    output_type: str
    config_digest: str
    data_map: dict[str, str] = {}  # hub dataset id[:config[:split]] -> local copy (--lmeval-data)
    bootstrap_iters: int = DEFAULT_BOOTSTRAP_ITERS  # resamples for corpus metrics' standard errors
    run_options: LmEvalRunOptions = LmEvalRunOptions()
