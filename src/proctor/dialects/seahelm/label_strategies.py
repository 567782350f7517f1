"""SEA-HELM's two ways of reading a label's probability for a task whose metric uses log-probs, mixed into
``proctor.dialects.seahelm.task.SeaHelmTask``: the log-prob strategy (the gold label scored after the
model's answer tag) and, for a chat-only model, the labels as lettered options read back from generation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from proctor.dialects.seahelm import logprobs as LP
from proctor.dialects.seahelm import prompts as P
from proctor.dialects.seahelm.image_dataloader import render_with_images

if TYPE_CHECKING:
    from proctor.core.task_spec import TaskSpec
    from proctor.kinds.capabilities import Executor
    from proctor.models.base import Model


class LabelStrategies:
    """The log-prob and lettered label strategies; uses the task's ``executor``, ``model``, ``spec`` and
    ``_generate`` (set by ``SeaHelmTask``)."""

    executor: Executor
    model: Model
    spec: TaskSpec
    _images: list[tuple]  # per row, the images it shows (image_dataloader.row_images)
    _lettered_records: list[dict]
    mc_format: str | None

    def _generate(self, requests: list, progress: Callable[[int], None] | None) -> list:  # SeaHelmTask's
        raise NotImplementedError

    def _logprobs(self, model, rows, rendered, raw, finish, template, images=None) -> tuple[dict[str, list], list[str]]:
        """SEA-HELM's LogprobsInferenceStrategy (see :mod:`proctor.dialects.seahelm.logprobs`): ({"cumulative_logprob":
        per row, None where skipped}, the responses as SEA-HELM stores them: text + separator + label when scored)."""
        tag = template.get("answer_tag") or ""
        separator = LP.answer_tag_separator(template)
        steps = [LP.intermediate(r[0] if r else "", f, tag) for r, f in zip(raw, finish)]
        labels = [r.get("label") for r in rows]
        scored, requests = LP.label_requests(rendered, steps, labels, separator, images)
        results = self.executor.run("loglikelihood", requests) if requests else []
        cumulative: list = [None] * len(rows)
        for i, result in zip(scored, results):
            cumulative[i] = result.logprob
        responses = [s.response + (separator + str(label) if s.scored else "") for s, label in zip(steps, labels)]
        return {"cumulative_logprob": cumulative}, responses

    def _lettered(self, kind, samples, rows, examples, template, is_base, run) -> dict[str, list]:
        """The labels as lettered options after the turn-1 prompt, the letter read back: the gold
        label's cumulative probability becomes 1 if chosen, else 0 (a chat-only model gives no log-probs)."""
        from proctor.prompts.builder import PreparedSample, Prompt

        labels = list(dict.fromkeys(str(r.get("label")) for r in rows))
        kind.render = lambda prompt: render_with_images(
            self.model, [{"role": r, "content": c} for r, c in prompt.messages], prompt.images, is_base, P.render
        )
        images = getattr(self, "_images", None) or [()] * len(rows)
        prepared = []
        for k, (sample, row) in enumerate(zip(samples, rows)):
            messages = P.conversation(template, row, 1, examples, [])
            gold = str(row.get("label"))
            prompt = Prompt(messages=tuple((m["role"], m["content"]) for m in messages), images=images[k])
            prepared.append(
                PreparedSample(sample.sample, prompt, tuple(labels), (labels.index(gold),) if gold in labels else ())
            )
        requests = [kind.requests(self.spec, p, "")[0] for p in prepared]
        results = self._generate(requests, lambda n: None)
        records = [kind.outcome(self.spec, p, [r])[1] for p, r in zip(prepared, results)]
        if run == 0:
            self._lettered_records = records
        self.mc_format = "generate"
        return {
            "cumulative_logprob": [0.0 if r["correct"] else None for r in records],
            "predicted_label": [labels[r["prediction"]] if r["prediction"] is not None else None for r in records],
            "mc_format": ["generate"] * len(records),
        }
