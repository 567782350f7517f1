"""The handler that runs one SEA-HELM task in one language inside proctor's engine.

Samples come from the task's dataloader; ``predict_samples`` builds SEA-HELM conversations (few-shot
turns, multi-turn carry-forward), generates through the run store, strips thinking, runs the metric
class (and its judge), repeats for each seeded run and bootstraps per question across runs.

Here: loading (the task's classes, its rows and samples) and generation. Mixed in: ready-made
conversations (``conversations.py``), the judge step (``judge_step.py``), the metric step
(``metric_step.py``) and SEA-HELM's log-prob and lettered label strategies (``label_strategies.py``); the
checks of the rows read are ``row_checks.py``; the corpus metrics over the runs are ``run_summary.py``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from proctor.core.model_requests import GenerateRequest
from proctor.data.sources import GivenTexts, Sample
from proctor.dialects.seahelm import prompts as P
from proctor.dialects.seahelm.conversations import ReadyConversations, _row_id
from proctor.dialects.seahelm.dataloaders import AbstractDataloader
from proctor.dialects.seahelm.image_dataloader import check_model, render_with_images, row_images
from proctor.dialects.seahelm.judge_step import Judging
from proctor.dialects.seahelm.label_strategies import LabelStrategies
from proctor.dialects.seahelm.metric_step import MetricStep, shown_fields
from proctor.dialects.seahelm.row_checks import check_labels, check_prompts
from proctor.dialects.seahelm.rows import RowList, as_rows
from proctor.dialects.seahelm.run_summary import summarise
from proctor.dialects.seahelm.task_config import TaskConfig
from proctor.dialects.seahelm.task_options import SeaHelmTaskOptions
from proctor.kinds.capabilities import Executor
from proctor.kinds.custom import GenerationTask
from proctor.scoring.metrics import register_metric

if TYPE_CHECKING:
    from proctor.kinds.mc_generate import MultipleChoiceGenerateKind
    from proctor.models.base import Model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SeaHelmOutcome:
    score: float | None


@register_metric("seahelm_row_score", ["generate"])
def _row_score(outcome: object) -> float | None:
    """The row's individual score from the SEA-HELM metric class (first run)."""
    return getattr(outcome, "score", None)


class SeaHelmTask(ReadyConversations, Judging, MetricStep, LabelStrategies, GenerationTask):
    kind = "generate"

    def __init__(self, spec, options=None) -> None:
        super().__init__(spec, options)
        from proctor.dialects.seahelm.named_classes import resolve_class

        o: SeaHelmTaskOptions = self.options
        self.task_id: str = o.task_id
        self.lang: str = o.lang
        self.row_limit: int | None = None  # the limit load_samples was given
        self.config: dict = o.config
        root, config_file = Path(o.root), Path(o.config_file)
        trust = o.trust_task_code
        c = self.config
        self.loader_cls = resolve_class(
            c.get("dataloader_file"),
            c.get("dataloader_class"),
            root=root,
            config_file=config_file,
            trust=trust,
            what="dataloader",
            default="SeaHelmLocalDataloader",
        )
        self.metric_cls = resolve_class(
            c.get("metric_file"),
            c.get("metric_class"),
            root=root,
            config_file=config_file,
            trust=trust,
            what="metric",
            default="SeaHelmMetric",
        )
        self.judge_cls = None
        if c.get("judge_file") or c.get("judge_class"):
            self.judge_cls = resolve_class(
                c.get("judge_file"),
                c.get("judge_class"),
                root=root,
                config_file=config_file,
                trust=trust,
                what="judge",
                default="",
            )
        self.task_config = TaskConfig(self.task_id, self.lang, c)
        from proctor.dialects.seahelm.qa import QuestionAnsweringMetric, require_segmenter

        if isinstance(self.metric_cls, type) and issubclass(self.metric_cls, QuestionAnsweringMetric):
            require_segmenter(self.lang)  # a missing Thai/Chinese tokeniser fails here, before generation
        self.executor: Any = None  # handed over by the engine with each predict_samples
        self._corpus: dict = {}
        self.dataloader: AbstractDataloader | None = None
        self._choice_formulation: Callable[[], MultipleChoiceGenerateKind | None] | None = None
        self.mc_format: str | None = None  # "generate" when the label scores came from the lettered formulation
        self._lettered_records: list[dict] = []

    # ---------------------------------------------------------------- engine hooks
    def use_choice_formulation(self, resolve: Callable[[], MultipleChoiceGenerateKind | None]) -> None:
        """Called by the runner: ``resolve()`` gives the lettered generation formulation, or None."""
        self._choice_formulation = resolve

    def _make_loader(self, is_base: bool) -> AbstractDataloader:
        import inspect

        kwargs: dict[str, bool | str | int] = {"is_base_model": is_base, "model_name": self.options.model_name or ""}
        try:  # SEA-HELM's hub loaders default to 16 worker processes for datasets.map: run in-process
            if "num_workers" in inspect.signature(self.loader_cls).parameters:
                kwargs["num_workers"] = 1
        except (TypeError, ValueError):
            pass
        return self._plugin_call(self.loader_cls, "__init__", self.task_config, 5 if is_base else 0, **kwargs)

    def _plugin_call(self, target: Callable[..., object], hook: str, *args: Any, **kwargs: Any):
        """Call a (possibly task-folder) class or hook; its failure becomes a clear error naming the file."""
        from proctor.core.errors import ProctorError

        owner = target if isinstance(target, type) else getattr(target, "__self__", None)
        owner = owner if isinstance(owner, type) else type(owner)
        if getattr(owner, "__proctor_source__", None) is None:
            return target(*args, **kwargs)  # proctor's own classes: their errors are proctor's
        from proctor.dialects.seahelm.offline_datasets import offline_copies
        from proctor.dialects.seahelm.task_code_env import working_directory

        try:
            # SEA-HELM runs from its repository root; hub ids read this task's local copies
            with working_directory(self.options.root), offline_copies(self.resources.get("offline_copies")):
                return target(*args, **kwargs)
        except ProctorError:
            raise
        except Exception as exc:
            from proctor.core.user_errors import user_code_error

            source = getattr(owner, "__proctor_source__", None)
            raise user_code_error(
                exc, f"{owner.__name__}.{hook} (task {self.task_id}/{self.lang})", file=source
            ) from None

    def _load_rows(self, loader: AbstractDataloader, limit: int | None) -> None:
        # task-folder loaders get no limit (SEA-HELM's select(range(limit)) fails past the end); rows are cut after
        user_code = getattr(type(loader), "__proctor_source__", None) is not None
        generated = not self.config["languages"][self.lang].get(
            "filepath"
        )  # ONERULER: rows made by the loader, limit honoured
        self._plugin_call(loader.load_dataset, "load_dataset", limit=None if user_code and not generated else limit)

    def _check_data_paths(self, variables: Mapping[str, str] | None) -> None:
        """The data files stay in the SEA-HELM tree, the folders given on the command line, or a mapped copy
        (``data/paths.py``), before any is read."""
        from proctor.data.paths import check_inside, data_roots

        roots = (
            *data_roots(Path(self.options.root), variables),
            *(Path(p) for p in (self.resources.get("offline_copies") or {}).values()),
        )
        settings = self.config["languages"][self.lang]
        for key in ("filepath", "example_filepath"):
            if settings.get(key):
                check_inside(
                    Path(settings[key]),
                    roots,
                    written=str(settings[key]),
                    file=self.options.config_file,
                    field=f"{self.task_id}.languages.{self.lang}.{key}",
                )

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]:
        self._check_data_paths(variables)
        self.dataloader = loader = self._make_loader(bool(self.options.is_base_model))
        self.row_limit = limit  # the audit's seahelm.examples-outnumber-rows compares the rows read with the examples
        self._load_rows(loader, limit)
        rows = as_rows(loader.dataset)
        if limit is not None:
            rows = rows[:limit]
        loader.dataset = rows = RowList(rows)
        self._images = row_images(rows, self.options.data)  # image tasks: read and checked before a model loads
        check_labels(rows, self.options.data)
        check_prompts(rows, self.options.data)
        template = self.config["languages"][self.lang]["prompt_template"]
        samples = []
        ready = self._ready_conversations(loader, rows, 1)
        for i, row in enumerate(rows):
            try:
                shown = (
                    ready[i][-1]["content"]
                    if ready and ready[i]
                    else P.conversation(template, row, 1, [], [])[-1]["content"]
                )
            except (KeyError, IndexError, ValueError) as exc:
                from proctor.core.errors import TaskDefinitionError

                raise TaskDefinitionError(
                    f"prompt_template does not fit row {i + 1}: {type(exc).__name__}: {exc}",
                    file=self.options.config_file,
                    field=f"{self.task_id}.languages.{self.lang}.prompt_template",
                ) from None
            label = row.get("label")
            given = GivenTexts(
                prompt=shown,
                target=label if isinstance(label, str) else json.dumps(label, ensure_ascii=False, default=str),
            )
            samples.append(
                Sample(
                    f"{self.task_id}/{self.lang}/{_row_id(row, i)}",
                    {},
                    str(self.options.data or self.options.config_file),
                    i + 1,
                    i,
                    given=given,
                )
            )
        return samples

    def audit_fields(self, samples):
        """The rows' fields for the audit's rules over paired fields (``audit_rules.field_view``)."""
        from proctor.dialects.seahelm.audit_rules import field_view

        return field_view(self, samples)

    def audit_example_answers(self) -> object:
        """The labels of the examples a base model is shown, for ``fewshot.constant-label``."""
        from proctor.dialects.seahelm.row_rules import example_answers

        return example_answers(self)

    def corpus_metrics(self) -> dict:
        return self._corpus

    def _is_base(self, model: Model) -> bool:
        given = self.options.is_base_model
        return bool(given) if given is not None else not getattr(model, "has_chat_template", False)

    def _generate(self, requests: list, progress: Callable[[int], None] | None) -> list:
        return self.executor.run("generate", requests, progress)

    def predict_samples(self, samples, prompts, executor: Executor):
        self.executor = executor
        self.model = model = executor.model
        is_base = self._is_base(model)
        loader = self.dataloader
        if loader is None or loader.is_base_model != is_base:
            rows = loader.dataset if loader is not None else None
            loader = self._make_loader(is_base)
            loader.dataset = rows
            if rows is None:
                self._load_rows(loader, len(samples))
        self.dataloader = loader
        if loader.fewshot_num_examples and loader.specific_task_config.get("example_filepath"):
            self._plugin_call(loader.load_example_dataset, "load_example_dataset", limit=loader.fewshot_num_examples)
        examples = as_rows(loader.example_dataset)[: loader.fewshot_num_examples] if loader.fewshot_num_examples else []
        rows = as_rows(loader.dataset)
        lang_cfg = self.config["languages"][self.lang]
        template = lang_cfg["prompt_template"]
        max_tokens = int(lang_cfg.get("max_tokens") or 256)
        reasoning = self.options.reasoning
        if reasoning:
            max_tokens += int(reasoning.get("max_think_tokens", 20000))
        # use_logprobs: any metric class (SEA-HELM's own or a task folder's) gets the label log-probs
        uses_logprobs = getattr(self.metric_cls, "uses_logprobs", False) or bool(self.config.get("use_logprobs"))
        # SEA-HELM's log-prob strategy stops at the answer tag only (found in the text, see logprobs.intermediate)
        stop = () if uses_logprobs else (P.BASE_STOP,) if is_base else ()
        temperature = float(self.config.get("temperature") or 0.0)
        n_runs = max(1, self.options.n_runs)
        if self.config.get("max_n_runs"):
            n_runs = min(n_runs, int(self.config["max_n_runs"]))
        turns = max(1, loader.get_num_turns())
        images = getattr(self, "_images", None) or row_images(rows, self.options.data)
        check_model(model, images, f"{self.task_id}/{self.lang}")
        runs: list[dict] = []
        for run in range(n_runs):
            answers: list[list[str]] = [[] for _ in rows]
            raw: list[list[str]] = [[] for _ in rows]
            rendered: list[str] = []
            sent: list = [None] * len(rows)  # ready-made conversations as sent (turn 1), kept for the metric
            finish: list[str] = ["stop"] * len(rows)  # turn-1 finish reasons (the log-prob strategy skips "length")
            for turn in range(1, turns + 1):
                ready = self._ready_conversations(loader, rows, turn)
                if ready is not None:  # the dataloader's own chat conversations, sent as they are
                    active = [i for i, c in enumerate(ready) if c]
                    texts = [P.render(model, ready[i], is_base) for i in active]
                    if turn == 1:
                        sent = list(ready)
                else:
                    active = [i for i, r in enumerate(rows) if len(r.get("prompts") or [{}]) >= turn]
                    texts = [
                        render_with_images(
                            model,
                            P.conversation(template, rows[i], turn, examples, answers[i]),
                            images[i],
                            is_base,
                            P.render,
                        )
                        for i in active
                    ]
                if turn == 1:
                    rendered = texts
                requests = [
                    GenerateRequest(
                        t, max_tokens=max_tokens, stop=stop, temperature=temperature, seed=run, images=images[i]
                    )
                    for i, t in zip(active, texts)
                ]
                results = self._generate(requests, executor.progress if run == 0 and turn == 1 else (lambda n: None))
                for i, result in zip(active, results):
                    if turn == 1:
                        finish[i] = result.finish_reason
                    raw[i].append(result.text)
                    answers[i].append(
                        P.strip_thinking(result.text, reasoning.get("end_think_token", P.END_THINK))
                        if reasoning
                        else result.text
                    )
            extra: dict[str, list] = {}
            if uses_logprobs:
                lettered = self._choice_formulation() if self._choice_formulation else None
                if lettered is not None:
                    extra = self._lettered(lettered, samples, rows, examples, template, is_base, run)
                else:
                    extra, responses = self._logprobs(model, rows, rendered, raw, finish, template, images)
                    answers = [[r] for r in responses]
            runs.append(self._score(rows, answers, raw, extra, rendered, model, sent))
        self._corpus = summarise(runs, rows, self.config.get("metric"), getattr(self, "_judge_runner", None))
        first = runs[0]
        out = []
        for i, _ in enumerate(samples):
            details = {
                "completion": first["answers"][i][-1] if first["answers"][i] else "",
                "responses": first["answers"][i],
                "extracted": first["cleaned"][i],
                "references": [first["labels"][i]],
                "individual_scores": first["scores"][i],
                **shown_fields(first, i),
            }
            if first.get("judgements") is not None:
                details["judgements"] = first["judgements"][i]
            if self._lettered_records:
                details["label_choice"] = self._lettered_records[i]
            if images[i]:
                details["images"] = [image.record() for image in images[i]]
            if n_runs > 1:
                details["run_scores"] = [r["scores"][i] for r in runs]
            score = first["scores"][i]
            out.append((SeaHelmOutcome(score if isinstance(score, (int, float)) else None), details))
        return out
