"""The handler that runs one lm-eval task inside proctor's engine.

``load_samples`` builds lm-eval's own task object (dataset through ``data_map``; few-shot seed 1234
and ``num_fewshot`` defaulting to 0, as ``lm_eval.simple_evaluate`` does) and its request instances;
``predict_samples`` sends those requests through proctor's run store and model, then lets lm-eval's
filters and ``process_results`` score them; ``corpus_metrics`` applies the task's aggregations, with
lm-eval's standard errors (``stderr``).

Here: building lm-eval's task and its samples, scoring and aggregating. Turning its request instances into
proctor's requests and answering them is ``instance_requests.py``; what a sample's record holds is
``sample_records.py``; the checks of each document's choices and target before any model runs, and the
document named where lm-eval fails building the requests, are ``document_checks.py``.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.task_spec import TaskSpec
from proctor.data.sources import GivenTexts, Sample
from proctor.dialects.lmeval import chat, data_map, library
from proctor.dialects.lmeval.document_checks import (
    check_choices,
    check_request_texts,
    check_target_in_range,
    diagnose_documents,
)
from proctor.dialects.lmeval.hook_errors import task_error
from proctor.dialects.lmeval.instance_requests import THINKING, answer_instances
from proctor.dialects.lmeval.run_options import fewshot_count
from proctor.dialects.lmeval.sample_records import gold_indices, jsonable, shown_fields
from proctor.dialects.lmeval.stderr import task_stderr
from proctor.dialects.lmeval.task_options import LmEvalTaskOptions
from proctor.dialects.lmeval.task_splits import split_keys, splits_read
from proctor.kinds.capabilities import Executor
from proctor.kinds.custom import CustomTask, GenerationTask, MultipleChoiceTask

if TYPE_CHECKING:
    import datasets
    from lm_eval.api.task import ConfigurableTask

    from proctor.dialects.lmeval.catalogue import Leaf

FEWSHOT_SEED = 1234  # lm_eval.simple_evaluate's fewshot_random_seed


@dataclass(frozen=True)
class LmEvalOutcome:
    values: dict[str, object]  # "metric,filter" -> lm-eval's per-sample value


def _gives_dataset(hook: Callable[..., object], leaf: Leaf) -> Callable[[datasets.Dataset], datasets.Dataset]:
    """``process_docs`` as lm-eval calls it, refusing a result that is not a ``datasets.Dataset`` (lm-eval
    reads its ``features`` and ``map`` next: an AttributeError from its internals)."""
    import functools

    @functools.wraps(hook)
    def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
        import datasets

        result = hook(dataset)
        if not isinstance(result, datasets.Dataset):
            name = getattr(hook, "__qualname__", getattr(hook, "__name__", "?"))
            raise TaskDefinitionError(
                f"task '{leaf.name}': the process_docs hook {name} returned {type(result).__name__}; "
                "lm-eval needs a datasets.Dataset (e.g. dataset.map(...) or dataset.filter(...))",
                file=leaf.source,
                field="process_docs",
            )
        return result

    return process_docs


class _LmEvalRunner:
    """Shared by the three handler classes (one per proctor kind)."""

    spec: TaskSpec  # the task's spec (set by the kinds.custom base the handler classes also derive from)

    def _setup(self, options: LmEvalTaskOptions) -> None:
        self.task: ConfigurableTask | None = None  # built by load_samples
        self.docs: list[tuple[int, object]] = []  # (doc_id, lm-eval's document)
        self._corpus: dict[str, dict] = {}
        self._recorded: dict[str, str] = {}  # chat text -> lm-eval's recorded messages
        self._task_name = options.task
        self.mapping = dict(options.data_map)
        self.bootstrap_iters = options.bootstrap_iters
        self.run_options = options.run_options  # num_fewshot, chat template, system instruction
        self._scored = True  # --predict-only: filters applied, process_results and aggregations not called
        self._handed: list[data_map.Splits] = []  # the mapped local copies lm-eval was given (read lazily)

    @property
    def leaf(self) -> Leaf:
        """The resolved lm-eval task the dialect loaded, handed over in the task's resources."""
        leaf = getattr(self, "resources", {}).get("leaf")
        if leaf is None:
            raise TaskDefinitionError(
                f"lm-eval task '{self._task_name}' was not loaded by the lm-eval dialect", field="handler"
            )
        return leaf

    def skip_scoring(self) -> None:
        """``kinds/capabilities.SkipsScoring`` (``--predict-only``): the answers and lm-eval's filtered answers are
        recorded, and neither ``process_results`` nor an aggregation runs (lm-eval's own ``--predict_only`` scores
        with its ``bypass`` metric, whose values mean nothing)."""
        self._scored = False

    def use_choice_formulation(self, resolve: Callable[[], object]) -> None:
        self._formulation = resolve  # lm-eval tasks always score log-likelihoods (checked per request kind)

    # ------------------------------------------------------------ data and prompts
    def _templates(self) -> contextlib.AbstractContextManager[None]:
        """lm-eval's templates compiled once, in a sandbox; a refused one names this task's file and key."""
        return library.compiled_templates(self.leaf.config, self.leaf.source)

    def _roots(self, variables: Mapping[str, str] | None) -> tuple[Path, ...]:
        """Where the task's own local dataset files may lie: its folder, the mapped copies, lm-eval's catalogue."""
        from proctor.data.paths import data_roots

        folder = Path(self.leaf.source).parent if self.leaf.source else None
        return (*data_roots(folder, variables), *(Path(p) for p in self.mapping.values()), library.catalogue_root())

    def _build(self, variables: Mapping[str, str] | None = None) -> ConfigurableTask:
        leaf = self.leaf
        config = dict(leaf.config)
        config["num_fewshot"] = fewshot_count(config.get("num_fewshot"), self.run_options.num_fewshot)
        if self.run_options.generation_kwargs:  # only a generate_until task gets them (run_options.apply)
            # lm-eval's --gen_kwargs: set_config("generation_kwargs", ..., update=True)
            own = config.get("generation_kwargs") or {}
            config["generation_kwargs"] = {**own, **self.run_options.generation_kwargs}
        if callable(config.get("process_docs")):
            config["process_docs"] = _gives_dataset(config["process_docs"], leaf)
        needed = splits_read(config)
        with (
            library.consent(True),
            self._templates(),
            data_map.serving(
                self.mapping, needed, leaf.name, leaf.source, self._roots(variables), split_keys(config)
            ) as handed,
        ):
            try:
                task = library.build_task(config)
            except (TaskDefinitionError, ProctorError):
                raise
            except Exception as exc:
                raise self._error(exc, "builds") from None
        self._handed = handed
        shots = task.get_config("num_fewshot") or 0
        self._shots = int(shots)
        for splits in handed:
            if shots > 0 and splits.missing and not list(task.fewshot_docs() or []):
                missing = ", ".join(sorted(splits.missing))
                raise TaskDefinitionError(
                    f"task '{leaf.name}' draws {shots} few-shot examples from split '{missing}' of '{splits.dataset}' "
                    f"config '{splits.config}', which has no local copy (--lmeval-data "
                    f"{splits.dataset}:{splits.config or ''}:{missing}=PATH)",
                    file=leaf.source,
                    field="fewshot_split",
                )
        seed = self.run_options.seed
        task.set_fewshot_seed(seed=FEWSHOT_SEED if seed is None else seed)  # lm-eval's --seed sets this one too
        return task

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]:
        self.task = task = self._build(variables)
        run = self.run_options
        chat_options = {}
        if run.apply_chat_template:  # messages recorded now, rendered with the model's template in predict_samples
            chat_options = dict(
                apply_chat_template=True, fewshot_as_multiturn=run.fewshot_as_multiturn, chat_template=chat.recorder
            )
        try:
            with self._templates():
                task.build_all_requests(limit=limit, system_instruction=run.system_instruction, **chat_options)
        except TaskDefinitionError:
            raise
        except Exception as exc:
            # a document's own fault, named by document and field
            diagnose_documents(task, limit, self.leaf.name, self.leaf.source, self._templates)
            raise self._error(exc, "builds the requests of") from None
        self.docs = list(task.doc_iterator(limit=limit))
        with self._templates():
            try:
                return self._samples(task)
            except (TaskDefinitionError, ProctorError):
                raise
            except Exception as exc:
                raise self._error(exc, "reads the documents of") from None

    def _error(self, exc: BaseException, stage: str) -> TaskDefinitionError:
        """An exception while lm-eval ``stage`` this task, at the hook (file, line, key) or document that caused it."""
        leaf = self.leaf
        return task_error(exc, stage, leaf.name, leaf.config, leaf.source, library.catalogue_root())

    def _samples(self, task: ConfigurableTask) -> list[Sample]:
        by_doc: dict[int, list] = defaultdict(list)
        for instance in task.instances:
            by_doc[instance.doc_id].append(instance)
        self.by_doc = {k: sorted(v, key=lambda i: i.idx) for k, v in by_doc.items()}
        samples = []
        for position, (doc_id, doc) in enumerate(self.docs):
            if task.config.doc_to_choice is not None and task.OUTPUT_TYPE == "multiple_choice":
                check_choices(task, doc_id, doc, self.leaf.name, self.leaf.source)
            instances = self.by_doc[doc_id]
            check_request_texts(task, doc_id, instances, self.leaf.name, self.leaf.source)
            first = instances[0].arguments
            prompt = first[0] if isinstance(first, tuple) else first
            choices = [
                str(i.arguments[1])
                for i in instances
                if isinstance(i.arguments, tuple) and len(i.arguments) > 1 and isinstance(i.arguments[1], str)
            ]
            listed = None
            if task.OUTPUT_TYPE == "multiple_choice" and task.config.doc_to_choice is not None:
                # the row as lm-eval scores it: acc_mutual_info's unconditional requests ("", each choice), which
                # follow the choices, are no choices (nor is an index among them in range)
                listed = [str(c) for c in task.doc_to_choice(doc)]
                choices = choices[: len(listed)]
            target = task.doc_to_target(doc)
            check_target_in_range(target, choices, doc_id, self.leaf.name, self.leaf.source)
            gold: int | list[int] = target if isinstance(target, int) and 0 <= target < max(len(choices), 1) else 0
            if listed is not None:
                # the gold is process_results' (a choice's text found among them, a list, multiple_input's context
                # index), not 0 for whatever is no index
                found = gold_indices(task, doc, listed)
                if found:
                    gold = found[0] if len(found) == 1 else found
            if self.spec.kind == "multiple_choice":
                given = GivenTexts(prompt=str(prompt), target=gold, choices=tuple(choices or [""]))
            elif self.spec.kind == "generate":
                if task.config.doc_to_choice is not None and isinstance(target, int) and not isinstance(target, bool):
                    options = list(task.doc_to_choice(doc))  # process_results: the reference is the choice it indexes
                    target = options[target] if 0 <= target < len(options) else target
                given = GivenTexts(
                    prompt=str(prompt), target=jsonable(target) if not isinstance(target, (int, float)) else str(target)
                )
            else:
                given = GivenTexts(text=str(prompt))
            fields = {"_lmeval_arguments": jsonable([i.arguments for i in instances])}
            samples.append(
                Sample(
                    id=str(doc_id),
                    fields=fields,
                    file=str(self.leaf.source) if self.leaf.source else None,
                    row=doc_id,
                    index=position,
                    given=given,
                )
            )
        return samples

    # ------------------------------------------------------------ model calls and scoring
    def predict_samples(self, samples, prompts, executor: Executor):
        self.model = executor.model
        task = self.task
        assert task is not None  # load_samples built it in phase one
        self._recorded.update(
            {text: marker for marker, text in chat.render_all(executor.model, task.instances).items()}
        )
        for instance in task.instances:
            instance.resps = []
        answer_instances(task.instances, len(self.docs), executor, self.leaf, self.run_options.seed or 0)
        with self._templates():
            try:
                return self._score(task)
            except (TaskDefinitionError, ProctorError):
                raise
            except Exception as exc:  # filters, process_results, metric hooks
                raise self._error(exc, "scores") from None

    def _score(self, task: ConfigurableTask) -> list:
        task.apply_filters()
        keys = list(task.instances[0].filtered_resps)
        raw: dict[tuple[str, str], list] = defaultdict(list)
        pairs = []
        for doc_id, doc in self.docs:
            instances = self.by_doc[doc_id]
            values: dict[str, object] = {}
            filtered: dict[str, object] = {}
            for key in keys:
                metrics = task.process_results(doc, [i.filtered_resps[key] for i in instances]) if self._scored else {}
                for metric, value in metrics.items():
                    raw[(metric, key)].append(value)
                    values[f"{metric},{key}"] = value
                filtered[key] = jsonable([i.filtered_resps[key] for i in instances])
            first = instances[0].arguments
            details = {
                **self._chat_prompt(first[0] if isinstance(first, tuple) else first),
                "doc_id": doc_id,
                "target": jsonable(task.doc_to_target(doc)),
                "doc_target": jsonable(task.doc_to_target(doc)),  # lm-eval's own target (its samples file's)
                **shown_fields(task, doc, instances, filtered.get(keys[0]) if keys else None),
                "arguments": jsonable([i.arguments for i in instances]),
                "resps": jsonable([i.resps for i in instances]),
                "filtered_resps": filtered,
                "lmeval_metrics": jsonable(values),
            }
            thoughts = [t for i in instances for t in i.__dict__.get(THINKING, [])]
            if thoughts:  # --think-end-token: the thinking kept beside the answer lm-eval scored
                details["thinking"] = thoughts[0] if len(thoughts) == 1 else thoughts
            pairs.append((LmEvalOutcome(values), details))
        self._corpus = self._aggregate(raw)
        return pairs

    def _aggregate(self, raw: dict[tuple[str, str], list]) -> dict[str, dict]:
        from lm_eval.api import metrics as M

        assert self.task is not None  # scored after predict_samples
        aggregations = self.task.aggregation()
        out: dict[str, dict[str, object]] = {}
        for (metric, key), items in raw.items():
            function = aggregations.get(metric, M.mean)
            try:
                value = function(items)
                stderr = task_stderr(function, metric, items, self.bootstrap_iters)  # closed form or bootstrap
            except OverflowError:  # lm-eval's perplexity: math.exp of a mean log-prob of hundreds of nats
                out[f"{metric},{key}"] = {"value": math.inf, "stderr": None}  # infinite: the engine warns
                continue
            out[f"{metric},{key}"] = {"value": jsonable(value), "stderr": jsonable(stderr)}
        return out

    def _chat_prompt(self, context: str) -> dict:
        """Under the chat template: lm-eval's messages and the text they became (samples.jsonl)."""
        recorded = chat.recorded(self._recorded.get(context, ""))
        if recorded is None:
            return {}
        return {"prompt": recorded["messages"], "rendered_prompt": context}

    def audit_example_answers(self) -> object:
        """The answers of the few-shot examples lm-eval shows, for ``fewshot.constant-label``."""
        from proctor.dialects.lmeval.audit_rules import example_answers

        return example_answers(self)

    def local_files(self) -> dict:
        """``kinds/capabilities.ReadsLocalFiles``: per split lm-eval read from a mapped copy, its paths and sha256."""
        return {split: read for splits in self._handed for split, read in splits.read.items()}

    def audit_split(self) -> object:
        """The split lm-eval evaluates and the files it reads, for the audit's ``data.split`` (``split_files.py``)."""
        from proctor.dialects.lmeval.split_files import evaluated_split

        source = str(self.leaf.source) if self.leaf.source else None
        return evaluated_split(self.leaf.config, source, self._handed)

    audit_choices_lead = False  # whether the samples last shown to the audit have contexts for choices

    def audit_samples(self, samples: Sequence[Any]) -> Sequence[Any]:
        """The samples as the audit reads them: recorded chat messages as their contents, a task whose choices are
        contexts as asked (``audit_view.py``)."""
        from proctor.dialects.lmeval.audit_view import chat_contents, contexts_as_choices

        viewed = contexts_as_choices(getattr(self, "task", None), self.docs, samples)
        self.audit_choices_lead = viewed is not samples
        return chat_contents(viewed) or viewed

    def result_extras(self) -> dict:
        """``kinds/capabilities.ResultExtras``: the few-shot count lm-eval's task used (its YAML, or --num-fewshot)
        and the bootstrap resamples its standard errors were allowed (lm-eval's ``bootstrap_iters``)."""
        shots = getattr(self, "_shots", None)
        return {**({"n_shot": shots} if shots is not None else {}), "bootstrap_iters": self.bootstrap_iters}

    def corpus_metrics(self) -> dict:
        return dict(self._corpus)


class LmEvalChoiceTask(_LmEvalRunner, MultipleChoiceTask):
    """lm-eval ``multiple_choice`` and ``loglikelihood`` tasks."""

    def __init__(self, spec, options=None) -> None:
        MultipleChoiceTask.__init__(self, spec, options)
        self._setup(self.options)


class LmEvalGenerateTask(_LmEvalRunner, GenerationTask):
    """lm-eval ``generate_until`` tasks."""

    def __init__(self, spec, options=None) -> None:
        GenerationTask.__init__(self, spec, options)
        self._setup(self.options)


class LmEvalRollingTask(_LmEvalRunner, CustomTask):
    """lm-eval ``loglikelihood_rolling`` tasks (perplexities)."""

    kind = "perplexity"

    def __init__(self, spec, options=None) -> None:
        CustomTask.__init__(self, spec, options)
        self._setup(self.options)
