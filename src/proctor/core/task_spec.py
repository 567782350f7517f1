"""The native task specification: one frozen, validated object per task.

Every dialect adapter produces these objects; nothing downstream knows where a task came from.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import (
    BaseModel,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from proctor.core.data_spec import DataSpec, FewShotSpec
from proctor.core.frozen_spec import FrozenSpec

TaskKind = Literal["multiple_choice", "generate", "perplexity"]


class ChatSpec(FrozenSpec):
    """Render prompts through the model's chat template."""

    enabled: bool = True
    system: str | None = None
    fewshot_as_turns: bool = True


# More new tokens than any model's window holds (the longest are about ten million tokens): refused before a
# model loads; a smaller number beyond the loaded model's own window is refused once it is known (engine/runner.py)
MAX_NEW_TOKENS = 100_000_000


class GenerationSpec(FrozenSpec):
    max_tokens: int = Field(default=64, ge=1)
    stop: list[str] = Field(default_factory=list)
    temperature: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int = 0
    num_beams: int = Field(default=1, ge=1)  # > 1: deterministic beam search
    length_penalty: float = Field(default=1.0, allow_inf_nan=False)  # beam scores divided by length ** length_penalty
    no_repeat_ngram_size: int = Field(default=0, ge=0)
    min_tokens: int = Field(default=0, ge=0)  # end-of-sequence is banned before this many new tokens

    @field_validator("stop", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("max_tokens")
    @classmethod
    def _fits_a_window(cls, value: int) -> int:
        if value > MAX_NEW_TOKENS:  # the model would generate for hours before its window stopped nothing
            raise ValueError(
                f"max_tokens {value} is more new tokens than any model's window holds (at most {MAX_NEW_TOKENS})"
            )
        return value

    @field_validator("stop")
    @classmethod
    def _no_empty_stop(cls, value: list[str]) -> list[str]:
        if "" in value:  # found at once in any text: every generation would be cut to nothing
            raise ValueError(f"an empty stop string would end every generation before its first character: {value!r}")
        return value


class ExtractionSpec(FrozenSpec):
    """How an answer is pulled from generated text; no match counts toward ``null_count``."""

    regex: str | None = None
    group: int = Field(default=1, ge=0)  # 0: the whole match
    answer_tag: str | None = None  # text after the last occurrence of the tag, up to end of line
    strip: bool = True
    ignore_case: bool = False
    fallback: Literal["none", "full"] = "full"  # no match: None (unparseable) or the whole text

    @field_validator("answer_tag")
    @classmethod
    def _tag_not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value:  # it would be ignored: the whole text taken as the answer
            raise ValueError("an empty answer_tag marks nothing; leave 'answer_tag' out to take the whole text")
        return value

    @model_validator(mode="after")
    def _check_regex(self) -> "ExtractionSpec":
        if self.regex is not None:
            import re

            try:
                compiled = re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.regex!r}: {exc}") from None
            if compiled.groups < self.group:
                raise ValueError(f"regex {self.regex!r} has no group {self.group}")
        return self


class PerplexitySpec(FrozenSpec):
    window: int = Field(default=1024, ge=2)  # tokens per forward pass
    stride: int | None = Field(default=None, ge=1)  # new tokens scored per window; default window

    @model_validator(mode="after")
    def _stride_fits(self) -> "PerplexitySpec":
        if self.stride is not None and self.stride > self.window:
            raise ValueError(f"stride ({self.stride}) must not exceed window ({self.window})")
        return self


class SilencedRule(FrozenSpec):
    """An audit rule the task file turns off for this task, and why (the reason is recorded with the finding)."""

    rule: str = Field(min_length=1)
    reason: str = Field(min_length=1)

    @field_validator("reason")
    @classmethod
    def _a_reason(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a silenced audit rule needs a reason: it is recorded in results.json")
        return value


class AuditSpec(FrozenSpec):
    """The task's say in the audit stage (``proctor.audit``): rules it silences, each with a reason."""

    silence: list[SilencedRule] = Field(default_factory=list)

    def reason_for(self, rule: str) -> str | None:
        return next((s.reason for s in self.silence if s.rule == rule), None)


class MetricSpec(FrozenSpec):
    name: str
    kwargs: dict[str, Any] = Field(default_factory=dict)


class ExportSpec(FrozenSpec):
    """An extra file written into the run folder by a registered exporter (``proctor.runs.task_exports``)."""

    format: str
    options: dict[str, Any] = Field(default_factory=dict)


class RollupSpec(FrozenSpec):
    """Where a task sits in a score hierarchy (SEA-HELM: overall -> language -> competency ->
    aggregation group -> task): ``metric`` is rolled up through ``levels`` (outermost first); tasks of
    one ``group`` are averaged first (macro: equal weight; micro: weighted by samples)."""

    metric: str
    levels: dict[str, str] = Field(default_factory=dict)
    group: str | None = None
    group_type: Literal["macro", "micro"] = "macro"


class HandlerSpec(FrozenSpec):
    """The handler a dialect's task runs through: its registered name (``Registry.add_task_handler``)
    and its options, a typed model the dialect declares with it (a spec with a handler is made by its
    dialect, never read back from JSON). The handler reads its own data and gives each sample's texts
    (``data.sources.GivenTexts``), so the task has no templates."""

    name: str = Field(min_length=1)
    options: SerializeAsAny[BaseModel]

    @field_validator("options", mode="before")
    @classmethod
    def _typed_options(cls, value: object) -> object:
        # a plain mapping would validate as an empty BaseModel: the options would be lost without a word
        if not isinstance(value, BaseModel):
            raise ValueError(
                "a handler's options are the typed model its dialect declares with the handler, "
                f"not {type(value).__name__}"
            )
        return value


class TaskSpec(FrozenSpec):
    """One task. Templates are Jinja2 strings rendered with the sample's fields; a task run by a
    dialect's ``handler`` has none (the handler gives each sample's texts)."""

    name: str = Field(min_length=1)
    kind: TaskKind
    version: str = "0"
    changes: dict[str, str] = Field(default_factory=dict)
    description: str = ""
    group: list[str] = Field(default_factory=list)
    # groups (of ``group``) whose score is their tasks' size-weighted mean (lm-eval's weight_by_size)
    size_weighted_groups: list[str] = Field(default_factory=list)
    data: list[DataSpec]
    limit: int | None = Field(default=None, ge=1)
    prompt: str | None = None
    choices: Union[str, list[str], None] = None  # a template giving a list, or one template per choice
    target: str | None = None
    target_delimiter: str = " "
    # images shown with the prompt: an expression giving a row's image (a path, bytes, base64) or a list of
    # them, or one expression per image; they go with the sample's own question (vision-language models)
    images: Union[str, list[str], None] = None
    fewshot: FewShotSpec | None = None
    chat: ChatSpec | None = None
    generation: GenerationSpec = GenerationSpec()
    extraction: ExtractionSpec | None = None
    choice_temperature: float = Field(default=1.0, gt=0.0, allow_inf_nan=False)  # softmax temperature for distributions
    # multiple_choice: "tokens" divides each choice's log-prob by its token count before the softmax,
    # "sqrt_tokens" by the square root of that count (probsem's CogSci2023 branch)
    choice_normalization: Literal["none", "tokens", "sqrt_tokens"] = "none"
    # multiple_choice: lm-eval's rule moves the prompt's trailing whitespace into the choice; false scores
    # exactly the choice's own tokens after the prompt as given (probsem's rule)
    move_whitespace: bool = True
    # multiple_choice: a target value meaning "no ground truth": the sample gets a distribution, no score
    unscored_target: Union[int, str, None] = None
    max_length: int | None = Field(default=None, ge=2)  # context limit in tokens; prompts lose tokens on the left
    task_class: str | None = None  # custom task class: "pkg.mod.Class" or "file.py:Class" (see proctor.kinds.custom)
    task_options: dict[str, Any] = Field(default_factory=dict)  # handed to the custom task class
    handler: HandlerSpec | None = None  # a dialect's registered handler and its typed options
    exports: list[ExportSpec] = Field(default_factory=list)
    text: str | None = None  # perplexity: the text to score
    perplexity: PerplexitySpec = PerplexitySpec()
    metrics: list[MetricSpec] = Field(default_factory=list)
    breakdown: list[str] = Field(default_factory=list)  # fields to report metrics by (e.g. _file)
    rollup: RollupSpec | None = None  # place in a score hierarchy (see proctor.scoring.rollup)
    # a row field whose equal values make one cluster (e.g. the passage several questions share): every mean
    # metric then also reports its cluster-robust standard error; left out of dumps (and hashes) when unset
    cluster: str | None = None
    # generate: a row whose target gives no reference (an empty list): refused (nothing to compare an answer with),
    # or a sample every metric scores as it scores no reference (GLM-130B's rule: 0, counted); left out of dumps
    # (and hashes) when left at "refuse"
    no_reference: Literal["refuse", "scored"] = "refuse"
    # rules of the audit stage the task silences; changes no number, so it is left out of dumps (and content hashes)
    audit: AuditSpec | None = Field(default=None, exclude=True)

    @model_serializer(mode="wrap")
    def _without_unset_cluster(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a task without ``cluster`` (or ``no_reference``) dumps (and so hashes) exactly as before the field existed
        dumped: dict[str, Any] = handler(self)
        if dumped.get("cluster", "") is None:
            del dumped["cluster"]
        if dumped.get("no_reference") == "refuse":
            del dumped["no_reference"]
        return dumped

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        if any(ord(c) < 32 or ord(c) == 127 for c in value) or not value.strip():
            raise ValueError(f"a task name is printable text (no newlines, tabs or control characters), got {value!r}")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: object) -> object:
        return str(value) if isinstance(value, (int, float)) else value

    @field_validator("group", "breakdown", mode="before")
    @classmethod
    def _str_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("data", mode="before")
    @classmethod
    def _data_list(cls, value: object) -> object:
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"path": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("changes", mode="before")
    @classmethod
    def _changes_text(cls, value: object) -> object:
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
        return value

    @field_validator("metrics", mode="before")
    @classmethod
    def _metric_specs(cls, value: object) -> object:
        if not isinstance(value, list):
            return value
        out: list[object] = []
        for item in value:
            if isinstance(item, str):
                out.append({"name": item})
            elif isinstance(item, dict) and "name" not in item and len(item) == 1:
                ((name, kwargs),) = item.items()
                out.append({"name": name, "kwargs": kwargs or {}})
            else:
                out.append(item)
        return out

    @property
    def handled_by(self) -> str | None:
        """The task file's class or the dialect's handler the task runs through (it makes its own requests)."""
        return self.task_class or (self.handler.name if self.handler is not None else None)

    def with_handler_options(self, **changes: object) -> "TaskSpec":
        """This spec with some of its handler's options changed, checked by the handler's options model."""
        if self.handler is None:
            raise ValueError(f"task '{self.name}' runs through no handler")
        options = self.handler.options
        changed = type(options).model_validate({**options.model_dump(), **changes})
        return self.model_copy(update={"handler": self.handler.model_copy(update={"options": changed})})

    @model_validator(mode="after")
    def _fields_for_kind(self) -> "TaskSpec":
        if self.handler is not None:
            if self.task_class is not None:
                raise ValueError("a task runs through a 'handler' or a 'task_class', not both")
            return self  # the handler gives each sample's texts
        needed = {
            "multiple_choice": ("prompt", "choices", "target"),
            "generate": ("prompt", "target"),
            "perplexity": ("text",),
        }[self.kind]
        for name in needed:
            if getattr(self, name) is None:
                raise ValueError(f"a '{self.kind}' task needs the field '{name}'")
        if self.kind == "perplexity" and self.images is not None:
            raise ValueError("a 'perplexity' task takes no 'images'")
        if self.kind == "perplexity" and self.fewshot is not None:
            raise ValueError("a 'perplexity' task takes no 'fewshot'")
        return self
