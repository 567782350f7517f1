"""Build each sample's prompt, choices and targets from a task's templates.

All rendering happens before any model work, so a row missing a field stops the run early.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, TypedDict

from proctor.core.errors import TaskDefinitionError
from proctor.core.images import ImageInput
from proctor.core.task_spec import TaskSpec
from proctor.core.templates import Expression, Template, compile_expression, compile_template
from proctor.data.images import read_images
from proctor.data.sources import Sample
from proctor.prompts.fewshot import choose_shots
from proctor.prompts.targets import gold_indices, references


class PromptRenderer(Protocol):
    """What a prompt needs of a model to become text (``models/base.py`` implements it)."""

    def image_prompt(self, text: str, n_images: int) -> str: ...

    def apply_chat_template(self, messages: Sequence[dict[str, Any]]) -> str: ...


@dataclass(frozen=True)
class Prompt:
    """Plain text, or chat messages that the model's chat template turns into text.

    ``images`` belong to the last user message: in chat messages they become ``{"type": "image"}``
    content parts ahead of its text (the form vision-language chat templates and OpenAI-style
    servers take); a plain-text prompt gets the model's own image placeholders in front.
    """

    text: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None
    images: tuple[ImageInput, ...] = ()

    def render(self, model: PromptRenderer) -> str:
        if self.messages is None:
            text = self.text or ""
            return model.image_prompt(text, len(self.images)) if self.images else text
        return model.apply_chat_template(self.chat_messages())

    def chat_messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": role, "content": content} for role, content in self.messages or ()]
        if self.images:
            last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=len(messages) - 1)
            parts = [{"type": "image"} for _ in self.images]
            messages[last] = {
                **messages[last],
                "content": parts + [{"type": "text", "text": messages[last]["content"]}],
            }
        return messages

    @property
    def plain_text(self) -> str:
        """The prompt's own text: the plain text, or the messages' contents joined by newlines ('' for none);
        what the audit reads, before any chat template."""
        if self.messages is None:
            return self.text or ""
        return "\n".join(content for _, content in self.messages)

    def as_json(self) -> Any:
        if self.messages is None:
            return self.text
        return self.chat_messages()


_PLAIN_NAME = re.compile(r"^\s*\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\s*$")


@dataclass(frozen=True)
class PreparedSample:
    sample: Sample
    prompt: Prompt
    choices: tuple[str, ...] = ()
    gold: tuple[int, ...] = ()
    references: tuple[str, ...] = ()
    text: str | None = None  # perplexity
    shots: tuple[str, ...] = field(default=())  # ids of the few-shot examples used
    # the row's own question where few-shot examples precede it in the prompt: what the audit compares to find a
    # row asked twice (each row's prompt differs by its examples)
    question: str | None = None


def _not_text(value: object) -> bool:
    """A choice value that str() would turn into a wrong text: None, NaN, a container."""
    return value is None or isinstance(value, (dict, list, tuple, set)) or (isinstance(value, float) and value != value)


class _Where(TypedDict):
    """The sample an error names (``TaskDefinitionError``'s and ``Template.render``'s keywords)."""

    file: str | None
    row: int | None


def _no_empty(choices: tuple[str, ...], where: _Where, listed: bool) -> tuple[str, ...]:
    """An empty (or blank) choice is scored as the delimiter alone, which a model nearly always prefers: refuse it."""
    for i, choice in enumerate(choices):
        if not choice.strip():
            raise TaskDefinitionError(
                f"choice {i} is empty ({choice!r}): it would be scored as the delimiter alone and nearly "
                "always win; fix the row or drop it with data.filter",
                field=f"choices[{i}]" if listed else "choices",
                **where,
            )
    return choices


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
        roots: Sequence[Path] = (),
        strict_rows: bool = False,
    ) -> None:
        self.spec = spec
        self._strict = strict_rows  # the native format's row rules: blank prompts (``check_prompts``), one choice
        self._blank: Sample | None = None  # the first sample whose prompt rendered blank, and one whose did not
        self._written: Sample | None = None
        self._roots = tuple(roots)  # where image paths may lead besides the data's and task file's folders
        self.origin = origin
        self.use_chat = use_chat
        lines = lines or {}
        self._lines = lines

        def template(source: str, name: str) -> Template:
            return compile_template(source, origin=origin, field=name, line=lines.get(name))

        def expression(source: str, name: str) -> Expression:
            return compile_expression(source, origin=origin, field=name, line=lines.get(name))

        self._prompt = None if spec.prompt is None else template(spec.prompt, "prompt")
        self._text = None if spec.text is None else template(spec.text, "text")
        self._target = None if spec.target is None else expression(spec.target, "target")
        self._choices: list[Template] | Expression | None
        if isinstance(spec.choices, list):
            self._choices = [template(c, f"choices[{i}]") for i, c in enumerate(spec.choices)]
        else:
            self._choices = None if spec.choices is None else expression(spec.choices, "choices")
        fewshot_template = spec.fewshot.template if spec.fewshot else None
        self._fewshot_template = None if fewshot_template is None else template(fewshot_template, "fewshot.template")
        self._system = template(spec.chat.system, "chat.system") if spec.chat and spec.chat.system else None
        self._images: list[Expression] | None = None
        if spec.images is not None:
            sources = spec.images if isinstance(spec.images, list) else [spec.images]
            self._images = [
                expression(src, "images" if len(sources) == 1 else f"images[{i}]") for i, src in enumerate(sources)
            ]
        self._task_dir = Path(origin).parent if origin else None
        self.pool = list(fewshot_pool)
        self._shot_cache: dict[int, tuple[str, str, str | None]] = {}

    # -------------------------------------------------------------- pieces
    def _where(self, sample: Sample) -> _Where:
        return {"file": sample.file, "row": sample.row}

    def _given(self, sample: Sample, name: str) -> Any:
        """A text the task's handler gave the sample (a task run by a handler has no templates)."""
        value = getattr(sample.given, name, None)
        if value is None:
            handler = self.spec.handler.name if self.spec.handler else "?"
            raise TaskDefinitionError(
                f"the task's handler ({handler}) gave sample '{sample.id}' no {name}", field=name, **self._where(sample)
            )
        return value

    def _question(self, sample: Sample) -> str:
        if self._prompt is None:
            return str(self._given(sample, "prompt"))
        return self._prompt.render(sample.fields, **self._where(sample))

    def _target_value(self, sample: Sample) -> object:
        if self._target is None:
            return self._given(sample, "target")
        return self._target.evaluate(sample.fields, file=sample.file, row_number=sample.row)

    def _choices_of(self, sample: Sample) -> tuple[str, ...]:
        where = self._where(sample)
        if isinstance(self._choices, list):
            for i, template in enumerate(self._choices):  # "{{ b }}" over a null field would render the text "None"
                name = template.plain_name
                if name is not None and name in sample.fields and _not_text(sample.fields[name]):
                    value = sample.fields[name]
                    raise TaskDefinitionError(
                        f"'choices' item {i} ({{{{ {name} }}}}) is {value!r:.60} "
                        f"({type(value).__name__}), not a text",
                        field=f"choices[{i}]",
                        **where,
                    )
            return _no_empty(tuple(c.render(sample.fields, **where) for c in self._choices), where, listed=True)
        if self._choices is None:
            value = list(self._given(sample, "choices"))
        else:
            value = self._choices.evaluate(sample.fields, file=sample.file, row_number=sample.row)
        if not isinstance(value, (list, tuple)) or not value:
            raise TaskDefinitionError(
                f"'choices' must give a non-empty list, got {type(value).__name__}: {value!r:.80}",
                field="choices",
                **where,
            )
        for i, choice in enumerate(value):
            if _not_text(choice):
                # str() would score the text "None" (or "nan", "[...]") as a choice, maybe the gold one
                raise TaskDefinitionError(
                    f"'choices' item {i} is {choice!r:.60} ({type(choice).__name__}), not a text",
                    field="choices",
                    **where,
                )
        if self._strict and len(value) == 1:  # the model's pick, always: every metric would score it right
            raise TaskDefinitionError(
                f"'choices' gives one choice ({value[0]!r:.40}): a multiple choice row needs two or more",
                field="choices",
                **where,
            )
        return _no_empty(tuple(str(c) for c in value), where, listed=False)

    def _gold_of(self, sample: Sample, choices: tuple[str, ...]) -> tuple[int, ...]:
        value = self._target_value(sample)
        values = value if isinstance(value, (list, tuple)) else [value]
        unscored = self.spec.unscored_target
        if unscored is not None and len(values) == 1 and str(values[0]).strip() == str(unscored).strip():
            return ()  # no ground truth: the sample is scored for its distribution only
        return gold_indices(value, choices, self._target is not None, self._target_error(sample))

    def _references_of(self, sample: Sample) -> tuple[str, ...]:
        scored = self.spec.no_reference == "scored"
        return references(self._target_value(sample), self._target is not None, self._target_error(sample), scored)

    def _target_error(self, sample: Sample) -> Callable[[str], TaskDefinitionError]:
        return lambda message: TaskDefinitionError(message, field="target", **self._where(sample))

    def _images_of(self, sample: Sample) -> tuple[ImageInput, ...]:
        """The sample's images, each read and decoded once here (a bad one names the row and field)."""
        if self._images is None:
            return ()
        bases = [Path(sample.file).parent] if sample.file else []
        bases += [self._task_dir] if self._task_dir else []
        out: list[ImageInput] = []
        for expr in self._images:
            value = expr.evaluate(sample.fields, file=sample.file, row_number=sample.row)
            match = _PLAIN_NAME.match(expr.source)  # name the row's own column where the expression is a lookup
            out += read_images(
                value,
                bases=bases,
                roots=self._roots,
                file=sample.file,
                row=sample.row,
                field=match.group(1) if match else expr.field,
            )
        return tuple(out)

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
            question = self._question(example)
            full = (
                self._fewshot_template.render(example.fields, **self._where(example))
                if self._fewshot_template
                else None
            )
            # a few-shot template writes the example whole: a pool of another shape (a dev split with an 'answer'
            # column and no choices) needs no answer of the task's own fields, unless chat turns show one
            answer = self._answer_text(example) if full is None or self.use_chat else ""
            self._shot_cache[index] = (question, answer, full)
        return self._shot_cache[index]

    # -------------------------------------------------------------- whole sample
    def prepare(self, sample: Sample) -> PreparedSample:
        spec = self.spec
        if spec.kind == "perplexity":
            text = (
                str(self._given(sample, "text"))
                if self._text is None
                else self._text.render(sample.fields, **self._where(sample))
            )
            if self._text is not None and not text.strip():  # no token to score: it would add nothing, or NaN
                raise TaskDefinitionError(
                    f"the template 'text' renders empty ({text!r:.20}) for this row: a perplexity task needs "
                    "text to score; drop such rows with data.filter",
                    field="text",
                    **self._where(sample),
                )
            return PreparedSample(sample, Prompt(text=""), text=text)
        question = self._question(sample)
        if self._prompt is not None and self._strict:
            self._note_prompt(sample, question)
        shot_ids: list[int] = []
        if spec.fewshot and spec.fewshot.count:
            own_data = spec.fewshot.source is None
            shot_ids = choose_shots(self.pool, sample, spec.fewshot.count, spec.fewshot.seed, own_data=own_data)
            if len(shot_ids) < spec.fewshot.count:  # never quietly fewer shots than asked for
                raise TaskDefinitionError(
                    f"asks for {spec.fewshot.count} few-shot examples, but the pool has only {len(shot_ids)} "
                    + (f"(other than the sample itself; {len(self.pool)} rows in all)" if own_data else "rows"),
                    file=self.origin,
                    line=self._lines.get("fewshot"),
                    field="fewshot.count",
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
            prompt = Prompt(messages=tuple(messages), images=self._images_of(sample))
        else:
            separator = spec.fewshot.separator if spec.fewshot else "\n\n"
            parts = [self._plain_shot(s) for s in shots] + [question]
            if self._system is not None and spec.chat is not None and not spec.chat.enabled:
                # a system prompt for plain text (`--system-prompt` without the chat template) starts the prompt
                parts.insert(0, self._system.render(sample.fields, **self._where(sample)))
            prompt = Prompt(text=separator.join(parts), images=self._images_of(sample))
        shot_sample_ids = tuple(self.pool[i].id for i in shot_ids)
        own = question if shots else None
        if spec.kind == "multiple_choice":
            choices = self._choices_of(sample)
            gold = self._gold_of(sample, choices)
            return PreparedSample(sample, prompt, choices=choices, gold=gold, shots=shot_sample_ids, question=own)
        references = self._references_of(sample)
        return PreparedSample(sample, prompt, references=references, shots=shot_sample_ids, question=own)

    def _note_prompt(self, sample: Sample, question: str) -> None:
        if question.strip():
            self._written = self._written or sample
            return
        if self.spec.kind == "generate":  # the model would answer no question: every row the same text
            raise TaskDefinitionError(
                f"the template 'prompt' renders empty ({question!r:.20}) for this row: the model would be asked "
                "nothing; drop such rows with data.filter",
                field="prompt",
                **self._where(sample),
            )
        self._blank = self._blank or sample

    def check_prompts(self) -> None:
        """Multiple choice: a prompt blank on some rows only is a row's mistake (a missing question), not a
        BLiMP-style task, whose prompts are all empty (its choices scored on their own)."""
        if self._blank is not None and self._written is not None:
            written = self._written
            raise TaskDefinitionError(
                "the template 'prompt' renders empty for this row, but not for others (row "
                f"{written.row} of {Path(written.file).name if written.file else 'the data'}): its choices would be "
                "scored without a question; fix the row or drop it with data.filter",
                field="prompt",
                **self._where(self._blank),
            )

    def _plain_shot(self, shot: tuple[str, str, str | None]) -> str:
        question, answer, full = shot
        return full if full is not None else f"{question}{self.spec.target_delimiter}{answer}"
