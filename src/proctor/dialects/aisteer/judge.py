"""``LLMJudgeMetric``: a language model rates each response (AISteer360's judge-metric base class).

The prompt is ``prompt_template`` filled with ``{response}``, ``{lower_bound}``, ``{upper_bound}``
(and ``{prompt}`` when prompts are given), followed by an instruction to answer with a JSON block
``{"score": x}``; the score is read from the reply and clamped to ``scale``. With
``structured_output=False`` a ``parser(text) -> float`` reads the reply instead. Greedy judging
(``temperature`` 0, the default) that cannot be parsed is an error naming the reply; with sampling,
a reply that cannot be parsed is drawn again (``max_retries`` times, then NaN with a warning), and
``num_return_sequences`` > 1 averages that many draws per response.

The judge is a proctor model (a ``--model`` string, made on first use by the run's model roles, which
``--model-role judge=`` overrides, or a loaded ``Model``) or a transformers model with ``tokenizer=``; its
requests go through ``batch_retry_generate``.
``store`` (a ``proctor.runs.store.Lookup``, set by ``proctor run`` / ``run_use_cases`` and by a
each ``Benchmark`` trial, while they evaluate) sends a proctor judge's requests through that
run store, under the judge's own fingerprint.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import warnings
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from proctor.dialects.aisteer.metrics import Metric, MetricResult
from proctor.dialects.aisteer.verdicts import (
    VerdictTally,
    check_rubric,
    check_scale,
    judge_model_name,
    parse_json,
    rubric_digest,
    score_value,
    shown,
)

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from proctor.api.model_roles import ModelRoles
    from proctor.models.steering.generation import GenKwargs
    from proctor.runs.store import Lookup

_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def format_instructions(low: float, high: float) -> str:
    return (
        "Answer with a markdown code block holding a JSON object, starting with ```json and ending with ```:\n\n"
        '```json\n{"score": <a number from ' + f"{low} to {high}" + ", inclusive, rating the response>}\n```"
    )


def read_verdict(text: str) -> float:
    """The ``score`` of the JSON object in ``text`` (fenced or bare), as the judge gave it: a finite number
    (``verdicts.score_value``; a key given twice, NaN, an infinity or a boolean is a ``ValueError``)."""
    match = _FENCED.search(text)
    body = match.group(1).strip() if match else text.strip()
    try:
        value = parse_json(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"no JSON object in the judge's reply ({exc.msg})") from None
    if not isinstance(value, dict) or "score" not in value:
        raise ValueError(f"the judge's reply has no 'score' object: {value!r}")
    return score_value(value["score"])


def read_score(text: str, scale: tuple[float, float]) -> float:
    """``read_verdict``'s score clamped to ``scale``, as AISteer360 clamps it."""
    return max(scale[0], min(scale[1], read_verdict(text)))


def build_structured_parser(scale: tuple[float, float]) -> tuple[str, Callable[[str, object], float]]:
    """``(format instructions, parse_fn(text, scale))`` for a JSON ``score`` in ``scale`` (AISteer360's helper)."""

    def parse_fn(text: str, _scale: object = None) -> float:
        return read_score(text, scale)

    return format_instructions(*scale), parse_fn


class LLMJudgeMetric(Metric):
    """A judge model scores every response; ``mean_score``, per-response ``scores``, ``raw_scores``."""

    def __init__(
        self,
        model_or_id: object,
        prompt_template: str,
        tokenizer: PreTrainedTokenizerBase | None = None,
        device: str | None = None,
        scale: tuple[float, float] = (1, 5),
        batch_size: int = 8,
        max_retries: int = 5,
        gen_kwargs: GenKwargs | None = None,
        structured_output: bool = True,
        parser: Callable[[str], float] | None = None,
    ) -> None:
        super().__init__()
        if structured_output and parser is not None:
            raise ValueError("give either structured_output=True (the JSON score reader) or a parser, not both")
        if not structured_output and parser is None:
            raise ValueError("structured_output=False needs a parser: (text) -> float")
        kwargs = dict(gen_kwargs or {})
        kwargs.pop("pad_token_id", None)  # proctor pads itself
        kwargs.setdefault("temperature", 0.0)
        kwargs.setdefault("max_new_tokens", 30)
        self.num_return_sequences = int(kwargs.pop("num_return_sequences", 1))
        if kwargs["temperature"] == 0.0 and self.num_return_sequences > 1:
            raise ValueError("num_return_sequences > 1 needs temperature > 0 (greedy draws are identical)")
        self.gen_kwargs = kwargs
        self.model_or_id, self.tokenizer, self.device = model_or_id, tokenizer, device
        # refused here, before any model loads: a reversed scale clamps every verdict to one bound, a rubric
        # without {response} never shows the judge the answer (verdicts.py)
        self.scale = check_scale(self.name, scale)
        check_rubric(self.name, prompt_template)
        self.base_prompt_template = prompt_template.strip()
        self.batch_size, self.max_retries = batch_size, max_retries
        self.format_instructions = format_instructions(*self.scale) if structured_output else ""
        self._parser = parser
        self._model: tuple[ModelRoles, object] | None = None  # (the model roles it came from, the judge)
        # the run store's Lookup while a run folder / Benchmark evaluates (see the module doc)
        self.store: Lookup | None = None
        self.judge_tally = VerdictTally()  # what its verdicts held besides scores, since its task began (verdicts.py)

    def parse(self, text: str) -> float:
        """A verdict's score: the custom parser's (a finite number, ``verdicts.score_value``), else the JSON score
        clamped to the scale."""
        return score_value(self._parser(text)) if self._parser is not None else read_score(text, self.scale)

    def judge_settings(self) -> dict[str, object]:
        """What the judge ran with (results.json's ``settings.judges``): its model, generation settings, scale and
        the sha256 of its rubric (the template with the format instructions)."""
        generation: dict[str, object] = {k: _plain(v) for k, v in sorted(self.gen_kwargs.items())}
        generation["num_return_sequences"] = self.num_return_sequences
        return {
            "metric": self.name,
            "model": judge_model_name(self.model_or_id),
            "generation": generation,
            "max_retries": self.max_retries,
            "scale": list(self.scale),
            "rubric": rubric_digest(self.base_prompt_template + "\n\n" + self.format_instructions),
            "parser": "json" if self._parser is None else getattr(self._parser, "__name__", "custom"),
        }

    def _judge(self) -> object:
        """The judge: the run's ``judge`` role (``--model-role judge=``) or, by default, ``model_or_id``, made by
        the run's model roles once per run (``proctor.api.model_roles``)."""
        from proctor.api.model_roles import active_roles

        roles = active_roles()
        if self._model is None or self._model[0] is not roles:
            options = {"device": self.device} if self.device else {}
            self._model = (roles, roles.model("judge", self.model_or_id, options=options))
        return self._model[1]

    def render(self, responses: Sequence[str], prompts: Sequence[str] | None = None) -> list[str]:
        if prompts is not None and len(prompts) != len(responses):
            raise ValueError("`responses` and `prompts` must be the same length")
        out = []
        for i, response in enumerate(responses):
            fields: dict[str, object] = {
                "response": response,
                "lower_bound": self.scale[0],
                "upper_bound": self.scale[1],
            }
            if prompts is not None:
                fields["prompt"] = prompts[i]
            text = self.base_prompt_template.format(**fields)
            out.append(text + ("\n\n" + self.format_instructions if self.format_instructions else ""))
        return out

    def compute(self, responses: Sequence[str], prompts: Sequence[str] | None = None, **kwargs: object) -> MetricResult:
        from proctor.dialects.aisteer.generation import batch_retry_generate

        rendered = self.render(responses, prompts)
        sampling = self.gen_kwargs["temperature"] > 0
        raw_scores: list[list[float]] = [[] for _ in rendered]
        for draw in range(self.num_return_sequences):
            gen_kwargs = dict(self.gen_kwargs, do_sample=sampling)
            # draw d uses seeds seed + d * (max_retries + 1) + round: its retries never repeat another draw's
            gen_kwargs["seed"] = int(self.gen_kwargs.get("seed", 0)) + draw * (self.max_retries + 1)
            parsed, raw, outputs = batch_retry_generate(
                [{"prompt": p} for p in rendered],
                self._target(),
                self.tokenizer,
                gen_kwargs=gen_kwargs,
                parse_fn=self._safe_parse,
                max_retries=self.max_retries if sampling else 0,
                return_outputs=True,
                batch_size=self.batch_size,
            )
            for i, (score, text, output) in enumerate(zip(parsed, raw, outputs)):
                why = "" if score is not None else f" ({self._why(text)}{self._cut(output)})"
                if score is None and not sampling:
                    raise ValueError(
                        f"{self.name}: cannot read a score from the judge's greedy reply {text!r} (response {i}){why}"
                    )
                self.judge_tally.add("judge_errors", score is None, f"{self.name}, response {i}: {shown(text)}{why}")
                if score is None:
                    warnings.warn(
                        f"{self.name}: no score after {self.max_retries} retries (response {i}); NaN",
                        UserWarning,
                        stacklevel=2,
                    )
                    score = math.nan
                elif self._parser is None:  # the JSON reader clamps as upstream does: a verdict off the scale counted
                    given = read_verdict(text)
                    self.judge_tally.add(
                        "judge_clamped", given != score, f"{self.name}: {given:g} read as {score:g} on {self.scale}"
                    )
                raw_scores[i].append(score)
        self.judge_tally.constant(self.name, [str(r) for r in responses], [v for draws in raw_scores for v in draws])
        scores = [sum(s) / len(s) for s in raw_scores]
        return {"mean_score": sum(scores) / len(scores) if scores else 0.0, "scores": scores, "raw_scores": raw_scores}

    def _target(self) -> object:
        """The judge, on the run store when one is set and the judge is a proctor model."""
        from proctor.models.base import Model

        judge = self._judge()
        if self.store is None or not isinstance(judge, Model):
            return judge
        from proctor.runs.executor import ModelExecutor
        from proctor.runs.store import Lookup

        return ModelExecutor(judge, Lookup(self.store.run_store, self.store.cache))

    def _why(self, text: str) -> str:
        """Why a reply gave no score (the parser's error)."""
        try:
            self.parse(text)
        except (ValueError, TypeError) as exc:
            return str(exc)
        return "no score"

    def _cut(self, output: object) -> str:
        """A reply that stopped at the token limit: say so, and name the setting that gives the judge more."""
        if not isinstance(output, dict) or output.get("finish_reason") != "length":
            return ""
        limit = self.gen_kwargs.get("max_new_tokens")
        more = 4 * int(limit) if isinstance(limit, int) else 256
        return (
            f"; the reply stopped at max_new_tokens {limit} (finish_reason 'length') before its verdict was complete: "
            f"give the judge more, e.g. gen_kwargs={{'max_new_tokens': {more}}}"
        )

    def _safe_parse(self, text: str) -> float | None:
        try:
            return self.parse(text)
        except (ValueError, TypeError):
            return None


def _plain(value: object) -> object:
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


@contextlib.contextmanager
def judges_on(use_case: object, lookup: Lookup | None) -> Iterator[None]:
    """While ``use_case`` evaluates, its ``LLMJudgeMetric``s send a proctor judge's requests through
    ``lookup``'s run store (``None``: no store, nothing changes)."""
    judges = (
        [m for m in getattr(use_case, "evaluation_metrics", ()) if isinstance(m, LLMJudgeMetric)]
        if lookup is not None
        else []
    )
    for judge in judges:
        judge.store = lookup
    try:
        yield
    finally:
        for judge in judges:
            judge.store = None
