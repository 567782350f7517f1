"""LLM judges with any proctor model: pairwise (MT-Bench) and criteria judging.

Judge requests are batched, go through the run store (cached, resumable) and an unparseable or
missing verdict is asked again a bounded number of times (new seed each time), then counted as an error.
"""

from __future__ import annotations

import logging
import re
import string
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from proctor.core.model_requests import GenerateRequest
from proctor.data.readers import Row
from proctor.dialects.seahelm.metrics import SeaHelmMetric
from proctor.dialects.seahelm.prompts import render_base, strip_thinking
from proctor.kinds.capabilities import Executor

if TYPE_CHECKING:
    from proctor.dialects.seahelm.dataloaders import AbstractDataloader
    from proctor.dialects.seahelm.task_config import TaskConfig

Message = dict[str, str]  # one chat message: {"role": ..., "content": ...}

log = logging.getLogger(__name__)

MAX_RETRIES = 3


class _Formatter(string.Formatter):
    def get_value(self, key, args, kwargs):  # unknown fields stay visible instead of raising
        return kwargs.get(key, "{" + str(key) + "}") if isinstance(key, str) else super().get_value(key, args, kwargs)


def fill(template: str, values: Mapping[str, object]) -> str:
    return _Formatter().format(template, **values)


class JudgeRunner:
    """Asks a proctor model for verdicts; ``stats`` counts requests, retries and errors."""

    def __init__(self, executor: Executor, generation: dict | None = None, max_retries: int = MAX_RETRIES) -> None:
        self.executor = executor  # the judge model, on the run's store
        self.model = executor.model
        generation = dict(generation or {})
        self.max_tokens = int(generation.get("max_tokens", 512))
        self.temperature = float(generation.get("temperature", 0.0))
        self.max_retries = max_retries
        self.stats = {"requests": 0, "retried": 0, "errors": 0}
        self._memo: dict[GenerateRequest, str] = {}

    def _render(self, messages: Sequence[Message]) -> str:
        if getattr(self.model, "has_chat_template", False):
            return self.model.apply_chat_template(list(messages))
        return render_base(messages)

    def _generate(self, requests: list[GenerateRequest]) -> list[str]:
        todo = [r for r in dict.fromkeys(requests) if r not in self._memo]
        if todo:
            for request, result in zip(todo, self.executor.run("generate", todo)):
                self._memo[request] = result.text
        self.stats["requests"] += len(requests)
        return [self._memo[r] for r in requests]

    def judge(
        self, conversations: Sequence[Sequence[Message]], parse: Callable[[str], str | None]
    ) -> list[tuple[str | None, str]]:
        """(verdict or None, judge text) per conversation."""
        prompts = [self._render(c) for c in conversations]
        out: list[tuple[str | None, str]] = [(None, "")] * len(prompts)
        pending = list(range(len(prompts)))
        for attempt in range(self.max_retries + 1):
            if not pending:
                break
            if attempt:
                self.stats["retried"] += len(pending)
            requests = [
                GenerateRequest(prompts[i], max_tokens=self.max_tokens, temperature=self.temperature, seed=attempt)
                for i in pending
            ]
            texts = self._generate(requests)
            still = []
            for i, text in zip(pending, texts):
                text = strip_thinking(text)
                verdict = parse(text)
                out[i] = (verdict, text)
                if verdict is None:
                    still.append(i)
            pending = still
        self.stats["errors"] += len(pending)
        if pending:
            log.warning(
                "judge: %d of %d verdicts unparseable after %d retries (counted as errors)",
                len(pending),
                len(prompts),
                self.max_retries,
            )
        return out


def _listish(value: object) -> list[object]:
    """A list-valued row field (pandas gives NaN where a row lacks it)."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, float):
        return list(value.tolist())
    return []


def _meta(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _messages(system: str | None, user: str) -> list[Message]:
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


class PairwiseLLMJudgeMetric(SeaHelmMetric):
    """MT-Bench pairwise judging against a baseline model's answers, both orders per turn."""

    uses_judge = True
    LABELS = {"A_wins": "[[A]]", "B_wins": "[[B]]", "Tie": "[[C]]"}

    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig, **kwargs: Any) -> None:
        super().__init__(dataloader, task_config, **kwargs)
        cfg = task_config.config
        self.labels = dict(cfg.get("judgement_labels") or self.LABELS)
        self.ties_allowed = bool(cfg.get("ties_allowed", True))
        self.baseline_model = cfg.get("baseline_model")
        self.with_reference = set(cfg.get("categories_with_reference") or ["math", "reasoning", "coding"])
        self.judge_config = cfg.get("judge") or {}

    def extract_response(
        self,
        response: Iterable[object],
        flags: int | None = None,
        return_original_response_on_failure: bool = True,
    ) -> list[str]:  # every turn's answer, as given: no regex
        return [("" if r is None else str(r)) for r in list(response)]

    def parse(self, text: str) -> str | None:
        found = [name for name, label in self.labels.items() if label in text]
        return found[0] if len(found) == 1 else None

    def _baseline(self, row: Row) -> list[str]:
        baselines = row.get("baselines") or {}
        if self.baseline_model in baselines:
            return list(baselines[self.baseline_model])
        if len(baselines) == 1:
            return list(next(iter(baselines.values())))
        return list(row.get("baseline") or [])

    def extract_classification(self, judge_response: object) -> str | None:
        return self.parse(judge_response) if isinstance(judge_response, str) else None

    def calculate_metrics(self):
        df = self.inference_df
        prompts = self.judge_config.get("judge_prompts") or {}
        conversations, keys = [], []
        for index, row in df.iterrows():
            row = row.to_dict()
            answers = row[self.postprocessed_response_column]
            baseline = self._baseline(row)
            questions = [str(p.get("text", "")) for p in _listish(row.get("prompts"))]
            category = _meta(row.get("metadata")).get("category", "")
            refs = list(_listish(row.get("references")))
            kind = (
                "with-reference"
                if category in self.with_reference and refs and "with-reference" in prompts
                else "without-reference"
            )
            turn_prompts = prompts.get(kind) or prompts.get("without-reference") or []
            for turn in range(1, len(questions) + 1):
                spec = turn_prompts[min(turn, len(turn_prompts)) - 1]
                for order in ("baseline-after", "baseline-before"):
                    a, b = (answers, baseline) if order == "baseline-after" else (baseline, answers)
                    values = {**{k: v for k, v in self.labels.items()}}
                    for i, q in enumerate(questions, start=1):
                        values[f"question_{i}"] = q
                        values[f"answer_a_{i}"] = a[i - 1] if i - 1 < len(a) else ""
                        values[f"answer_b_{i}"] = b[i - 1] if i - 1 < len(b) else ""
                        values[f"ref_answer_{i}"] = refs[i - 1] if i - 1 < len(refs) else ""
                    conversations.append(
                        _messages(fill(spec.get("system_prompt", ""), values), fill(spec["prompt_template"], values))
                    )
                    keys.append((index, turn, order, category))
        verdicts = self.judge_model.judge(conversations, self.parse)
        per: dict[tuple, dict] = {}
        for (index, turn, order, category), (verdict, text) in zip(keys, verdicts):
            outcome = "ERROR" if verdict is None else {"A_wins": "W", "B_wins": "L", "Tie": "T"}[verdict]
            if order == "baseline-before" and outcome in "WL":
                outcome = "L" if outcome == "W" else "W"
            per.setdefault((index, turn, category), {})[order] = (outcome, text)
        scores_by_row: dict[int, list[float]] = {}
        by_category: dict[str, list[float]] = {}
        judgements = {}
        for (index, turn, category), both in per.items():
            first, second = both["baseline-after"][0], both["baseline-before"][0]
            final = self.final_verdict(first, second)
            score = {"W": 1.0, "T": 0.5}.get(final, 0.0)
            scores_by_row.setdefault(index, []).append(score)
            by_category.setdefault(category, []).append(score)
            judgements.setdefault(index, []).append(
                {
                    "turn": turn,
                    "verdicts": [first, second],
                    "final": final,
                    "judgements": [both["baseline-after"][1], both["baseline-before"][1]],
                }
            )
        df["judgements"] = [judgements.get(i, []) for i in df.index]
        self.update_individual_scores(
            [float(np.mean(scores_by_row[i])) if i in scores_by_row else 0.0 for i in df.index]
        )
        win_rates = {c: 100 * float(np.mean(v)) for c, v in by_category.items()}
        errors = sum(1 for j in judgements.values() for t in j for v in t["verdicts"] if v == "ERROR")
        return {
            "weighted_win_rate": float(np.mean(list(win_rates.values()))) if win_rates else 0.0,
            "category_win_rates": win_rates,
            "judge_errors": errors,
        }, df

    def final_verdict(self, first: str, second: str) -> str:
        if self.ties_allowed:
            return "T" if first == "T" or first != second else first
        return first if first == second else "ERROR"


_CLASSIFICATION = re.compile(r"<classification>\s*([A-Za-z_]+)\s*</classification>", re.IGNORECASE)
_REFLECTION = re.compile(r"<reflection>(.*?)</reflection>", re.IGNORECASE | re.DOTALL)


class CriteriaJudgeMetric(SeaHelmMetric):
    """One judge call per criterion; ``<classification>NAME</classification>`` mapped through
    ``judge.classifications`` to a score; row score = mean over its criteria."""

    uses_judge = True
    DEFAULT = {
        "CLASS_UNMET": 0.0,
        "CLASS_SLIGHTLY_MET": 0.25,
        "CLASS_MODERATELY_MET": 0.5,
        "CLASS_MAJORLY_MET": 0.75,
        "CLASS_EXACTLY_MET": 1.0,
    }

    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig, **kwargs: Any) -> None:
        super().__init__(dataloader, task_config, **kwargs)
        self.judge_config = task_config.config.get("judge") or {}
        self.classifications = {
            str(k).upper(): float(v) for k, v in (self.judge_config.get("classifications") or self.DEFAULT).items()
        }

    def extract_response(
        self,
        response: Iterable[object],
        flags: int | None = None,
        return_original_response_on_failure: bool = True,
    ) -> list[str]:  # every turn's answer, as given: no regex
        return [("" if r is None else str(r)) for r in list(response)]

    def parse(self, text: str) -> str | None:
        found = _CLASSIFICATION.findall(text)
        if not found:
            return None
        name = found[-1].upper()
        return name if name in self.classifications else None

    def extract_classification(self, judge_response: object) -> str | None:
        return self.parse(judge_response) if isinstance(judge_response, str) else None

    def _from_judge_file(self):
        """SEA-HELM v1.2: the judge dataloader built the conversations; the judge's answers are in
        ``get_judge_batch_response_filepath()`` as ``{"custom_ids": "<id>_criteria<i>", "responses": ...}``."""
        import json

        judged: dict[str, list[tuple[int, str]]] = {}
        with open(self.dataloader.get_judge_batch_response_filepath(), encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    record = json.loads(line)
                    row_id, criterion = str(record["custom_ids"]).rsplit("_", 1)
                    judged.setdefault(row_id, []).append(
                        (int(criterion.removeprefix("criteria")), record.get("responses") or "")
                    )
        df = self.inference_df
        scores, details = [], []
        for _, row in df.iterrows():
            items = sorted(judged.get(str(row["id"]), []), key=lambda x: x[0])
            verdicts = [self.parse(text) for _, text in items]
            row_scores = [self.classifications.get(v, 0.0) if v else 0.0 for v in verdicts]
            scores.append(sum(row_scores) / len(row_scores) if row_scores else 0.0)
            details.append(
                [
                    {
                        "criterion": c,
                        "classification": v or "ERROR",
                        "reflection": (m.group(1).strip() if (m := _REFLECTION.search(t)) else None),
                    }
                    for (c, t), v in zip(items, verdicts)
                ]
            )
        df["judgements"] = details
        df["final_scores"] = scores
        self.update_individual_scores([{"average_criteria_score": x} for x in scores])
        categories: dict[str, list[float]] = {}
        for meta, score in zip(df["metadata"] if "metadata" in df else [{}] * len(df), scores):
            categories.setdefault(str(_meta(meta).get("category", "")), []).append(score)
        return {
            "categories": {k: float(np.mean(v)) for k, v in categories.items()},
            "average_criteria_score": 100 * float(np.mean(scores)) if scores else 0.0,
        }

    def calculate_metrics(self):
        if hasattr(self.dataloader, "get_judge_prompt_formatter"):
            return self._from_judge_file()
        df = self.inference_df
        prompts = self.judge_config.get("judge_prompts") or {}
        system, template = (
            (
                prompts.get("system_prompt"),
                prompts.get("prompt_template") or prompts.get("user_prompt") or "{criterion}",
            )
            if isinstance(prompts, dict)
            else (None, str(prompts))
        )
        conversations, keys = [], []
        for index, row in df.iterrows():
            row = row.to_dict()
            answers = row[self.postprocessed_response_column]
            questions = [str(p.get("text", "")) for p in _listish(row.get("prompts"))]
            refs = list(_listish(row.get("references")))
            for c, criterion in enumerate(_listish(row.get("criteria"))):
                turn = int(criterion.get("turn", len(answers)) or len(answers))
                values = {
                    "criterion": criterion.get("criterion", ""),
                    "question": questions[turn - 1] if turn - 1 < len(questions) else "",
                    "response": answers[turn - 1] if turn - 1 < len(answers) else "",
                    "reference": (refs[turn - 1] if turn - 1 < len(refs) else "")
                    if criterion.get("include_reference")
                    else "",
                    "conversation": "\n\n".join(
                        f"User: {q}\n\nAssistant: {a}" for q, a in zip(questions[:turn], answers[:turn])
                    ),
                }
                conversations.append(_messages(fill(system, values) if system else None, fill(template, values)))
                keys.append((index, c))
        verdicts = self.judge_model.judge(conversations, self.parse)
        per_row: dict[int, list[float]] = {}
        details: dict[int, list] = {}
        for (index, _), (verdict, text) in zip(keys, verdicts):
            score = self.classifications.get(verdict, 0.0) if verdict else 0.0
            per_row.setdefault(index, []).append(score)
            reflection = _REFLECTION.search(text)
            details.setdefault(index, []).append(
                {
                    "classification": verdict or "ERROR",
                    "reflection": reflection.group(1).strip() if reflection else None,
                }
            )
        df["judgements"] = [details.get(i, []) for i in df.index]
        scores = [float(np.mean(per_row[i])) if per_row.get(i) else 0.0 for i in df.index]
        self.update_individual_scores(scores)
        categories: dict[str, list[float]] = {}
        for i, s in zip(df.index, scores):
            categories.setdefault(
                str(_meta(df.at[i, "metadata"]).get("category", "")) if "metadata" in df else "", []
            ).append(s)
        return {
            "average_criteria_score": 100 * float(np.mean(scores)) if scores else 0.0,
            "category_scores": {k: 100 * float(np.mean(v)) for k, v in categories.items()},
            "judge_errors": sum(1 for d in details.values() for x in d if x["classification"] == "ERROR"),
        }, df


class SeaHelmJudge:
    """Stands in for SEA-HELM's judge classes (``src/judges/*``: ``CriteriaJudge``, ``PairwiseJudge``,
    ``SeaHelmJudge``): in proctor the judge is any proctor model (``--seahelm-judge``), driven by the metric
    or the judge dataloader, so the class named in ``judge_class`` holds nothing but its arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


CriteriaJudge = PairwiseJudge = SeaHelmJudge
