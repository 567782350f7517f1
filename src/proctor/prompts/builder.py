"""Build each sample's prompt, choices and targets from a task's templates.

All rendering happens before any model work, so a row missing a field stops the run early.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from proctor.data.sources import Sample
from proctor.errors import TaskDefinitionError
from proctor.prompts.fewshot import choose_shots
from proctor.prompts.templates import compile_expression, compile_template
from proctor.spec.task import TaskSpec


@dataclass(frozen=True)
class Prompt:
    """Plain text, or chat messages that the model's chat template turns into text."""

    text: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None

    def render(self, model) -> str:
        if self.messages is None:
            return self.text or ""
        return model.apply_chat_template([{"role": role, "content": content} for role, content in self.messages])

    def as_json(self) -> Any:
        if self.messages is None:
            return self.text
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class PreparedSample:
    sample: Sample
    prompt: Prompt
    choices: tuple[str, ...] = ()
    gold: tuple[int, ...] = ()
    references: tuple[str, ...] = ()
    text: str | None = None  # perplexity
    shots: tuple[str, ...] = field(default=())  # ids of the few-shot examples used


class PromptBuilder:
    """Templates compiled once per task; ``prepare(sample)`` renders one sample."""

    def __init__(
        self,
        spec: TaskSpec,
        *,
        origin: str | None,
        lines: dict[str, int] | None = None,
        fewshot_pool: Sequence[Sample] = (),
        use_chat: bool = False,
    ) -> None:
        self.spec = spec
        self.origin = origin
        self.use_chat = use_chat
        lines = lines or {}
        self._lines = lines

        def template(source: str | None, name: str):
            return None if source is None else compile_template(source, origin=origin, field=name, line=lines.get(name))

        def expression(source: str | None, name: str):
            return None if source is None else compile_expression(source, origin=origin, field=name, line=lines.get(name))

        self._prompt = template(spec.prompt, "prompt")
        self._text = template(spec.text, "text")
        self._target = expression(spec.target, "target")
        if isinstance(spec.choices, list):
            self._choices = [template(c, f"choices[{i}]") for i, c in enumerate(spec.choices)]
        else:
            self._choices = expression(spec.choices, "choices")
        self._fewshot_template = template(spec.fewshot.template, "fewshot.template") if spec.fewshot else None
        self._system = template(spec.chat.system, "chat.system") if spec.chat and spec.chat.system else None
        self.pool = list(fewshot_pool)
        self._shot_cache: dict[int, tuple[str, str, str | None]] = {}

    # -------------------------------------------------------------- pieces
    def _where(self, sample: Sample) -> dict:
        return {"file": sample.file, "row": sample.row}

    def _choices_of(self, sample: Sample) -> tuple[str, ...]:
        where = self._where(sample)
        if isinstance(self._choices, list):
            return tuple(c.render(sample.fields, **where) for c in self._choices)
        value = self._choices.evaluate(sample.fields, file=sample.file, row_number=sample.row)
        if not isinstance(value, (list, tuple)) or not value:
            raise TaskDefinitionError(
                f"'choices' must give a non-empty list, got {type(value).__name__}: {value!r:.80}", field="choices", **where
            )
        for i, choice in enumerate(value):
            if choice is None or isinstance(choice, (dict, list, tuple, set)) or (isinstance(choice, float) and choice != choice):
                # str() would score the text "None" (or "nan", "[...]") as a choice, maybe the gold one
                raise TaskDefinitionError(
                    f"'choices' item {i} is {choice!r:.60} ({type(choice).__name__}), not a text", field="choices", **where
                )
        return tuple(str(c) for c in value)

    def _gold_of(self, sample: Sample, choices: tuple[str, ...]) -> tuple[int, ...]:
        value = self._target.evaluate(sample.fields, file=sample.file, row_number=sample.row)
        values = value if isinstance(value, (list, tuple)) else [value]
        unscored = self.spec.unscored_target
        if unscored is not None and len(values) == 1 and str(values[0]).strip() == str(unscored).strip():
            return ()  # no ground truth: the sample is scored for its distribution only
        gold = []
        for item in values:
            if isinstance(item, str) and item in choices:
                index = choices.index(item)
            elif isinstance(item, bool) or item is None or (isinstance(item, float) and not float(item).is_integer()):
                raise TaskDefinitionError(
                    f"'target' gave {item!r} ({type(item).__name__}), which is not a choice index", field="target", **self._where(sample)
                )
            elif isinstance(item, (int, float)) or (isinstance(item, str) and item.strip().lstrip("-").isdigit()):
                index = int(item)
            else:
                raise TaskDefinitionError(
                    f"'target' gave {item!r}, which is neither a choice index nor one of the choices {list(choices)!r:.200}",
                    field="target",
                    **self._where(sample),
                )
            if not 0 <= index < len(choices):
                raise TaskDefinitionError(
                    f"'target' index {index} is out of range for {len(choices)} choices", field="target", **self._where(sample)
                )
            gold.append(index)
        if not gold:
            raise TaskDefinitionError("'target' is empty", field="target", **self._where(sample))
        return tuple(gold)

    def _references_of(self, sample: Sample) -> tuple[str, ...]:
        value = self._target.evaluate(sample.fields, file=sample.file, row_number=sample.row)
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(v is None for v in values):  # str(None) would make "None" a reference answer
            raise TaskDefinitionError(f"'target' gave a null reference: {value!r:.80}", field="target", **self._where(sample))
        return tuple(str(v) for v in values)

    def _answer_text(self, sample: Sample) -> str:
        if self.spec.kind == "multiple_choice":
            choices = self._choices_of(sample)
            return choices[self._gold_of(sample, choices)[0]]
        references = self._references_of(sample)
        return references[0] if references else ""

    def _shot(self, index: int) -> tuple[str, str, str | None]:
        """(question, answer, full text from fewshot.template) of a pool example, rendered once."""
        if index not in self._shot_cache:
            example = self.pool[index]
            question = self._prompt.render(example.fields, **self._where(example))
            answer = self._answer_text(example)
            full = self._fewshot_template.render(example.fields, **self._where(example)) if self._fewshot_template else None
            self._shot_cache[index] = (question, answer, full)
        return self._shot_cache[index]

    # -------------------------------------------------------------- whole sample
    def prepare(self, sample: Sample) -> PreparedSample:
        spec = self.spec
        if spec.kind == "perplexity":
            text = self._text.render(sample.fields, **self._where(sample))
            return PreparedSample(sample, Prompt(text=""), text=text)
        question = self._prompt.render(sample.fields, **self._where(sample))
        shot_ids: list[int] = []
        if spec.fewshot and spec.fewshot.count:
            shot_ids = choose_shots(self.pool, sample, spec.fewshot.count, spec.fewshot.seed)
            if len(shot_ids) < spec.fewshot.count:  # never quietly fewer shots than asked for
                raise TaskDefinitionError(
                    f"asks for {spec.fewshot.count} few-shot examples, but the pool has only {len(shot_ids)} "
                    f"(other than the sample itself; {len(self.pool)} rows in all)",
                    file=self.origin, line=self._lines.get("fewshot"), field="fewshot.count",
                )
        shots = [self._shot(i) for i in shot_ids]
        if self.use_chat:
            messages: list[tuple[str, str]] = []
            if self._system is not None:
                messages.append(("system", self._system.render(sample.fields, **self._where(sample))))
            fewshot_as_turns = spec.chat.fewshot_as_turns if spec.chat else True
            if fewshot_as_turns:
                for q, a, _ in shots:
                    messages += [("user", q), ("assistant", a)]
                messages.append(("user", question))
            else:
                separator = spec.fewshot.separator if spec.fewshot else "\n\n"
                messages.append(("user", separator.join([self._plain_shot(s) for s in shots] + [question])))
            prompt = Prompt(messages=tuple(messages))
        else:
            separator = spec.fewshot.separator if spec.fewshot else "\n\n"
            prompt = Prompt(text=separator.join([self._plain_shot(s) for s in shots] + [question]))
        shot_sample_ids = tuple(self.pool[i].id for i in shot_ids)
        if spec.kind == "multiple_choice":
            choices = self._choices_of(sample)
            return PreparedSample(sample, prompt, choices=choices, gold=self._gold_of(sample, choices), shots=shot_sample_ids)
        return PreparedSample(sample, prompt, references=self._references_of(sample), shots=shot_sample_ids)

    def _plain_shot(self, shot: tuple[str, str, str | None]) -> str:
        question, answer, full = shot
        return full if full is not None else f"{question}{self.spec.target_delimiter}{answer}"
