"""The judging step of a SEA-HELM task: the judge model (``--seahelm-judge`` or the evaluated model) behind a
:class:`proctor.dialects.seahelm.judges.JudgeRunner`, SEA-HELM v1.2 judge dataloaders' batch files, and the
judge's usage."""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Callable

from proctor.dialects.seahelm.rows import RowList
from proctor.dialects.seahelm.task_options import SeaHelmTaskOptions

if TYPE_CHECKING:
    from proctor.models.base import Model

log = logging.getLogger(__name__)


def batch_api_judge(judge_model: Model, judge_config: dict) -> Model:
    """The judge as SEA-HELM's ``judge.batch_api_calls`` asks: ``true`` sends its calls through the server's
    Batch API when the judge has one (an ``openai:`` model: ``batched()``, which falls back to one request at a
    time on a server without the endpoints); ``false``, or a judge without a Batch API, as before."""
    wanted = judge_config.get("batch_api_calls")
    if isinstance(wanted, list):  # several judges: SEA-HELM's lists hold one value per judge; the first one judges here
        wanted = wanted[0] if wanted else False
    if wanted is not True:  # the dialect refuses anything but true / false when the task loads
        return judge_model
    batched = getattr(judge_model, "batched", None)
    if not callable(batched):
        log.info(
            "batch_api_calls: judge '%s' has no Batch API; its calls go one request at a time",
            getattr(judge_model, "name", judge_model),
        )
        return judge_model
    return batched()


class JudgeSource:
    """The judge of the tasks loaded together (a task resource, ``"judge"``): a model handed in as an
    object (API), or a ``--model``-style name made once, on first use, by the run's model roles (the ``judge``
    role, ``proctor.api.model_roles``) and shared by those tasks. An openai judge's server settings
    (``seahelm_judge_options``) stay here, out of the tasks' specs, so no address or key enters a task hash."""

    def __init__(self, name: str, settings: dict | None = None, model: Model | None = None) -> None:
        self.name, self.settings = name, settings
        self._default = name if model is None else model  # what the run's roles make, or hand back as it is
        self._model: Model | None = None
        self._lock = threading.Lock()

    def model(self) -> Model:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from proctor.api.model_roles import active_roles

                    settings = dict(self.settings or {})
                    # a local judge takes the backend options alone; a served one its server settings too
                    local = {k: v for k, v in settings.items() if k not in ("base_url", "api_key_env")}
                    self._model = active_roles().model("judge", self._default, options=local, server=settings)
        return self._model


class Judging:
    """Mixed into :class:`proctor.dialects.seahelm.task.SeaHelmTask` (uses its ``_plugin_call``, ``config``,
    ``options``, ``resources`` and the ``executor`` the engine handed it)."""

    options: SeaHelmTaskOptions
    config: dict
    _plugin_call: Callable[..., Any]

    def judge_usage(self) -> dict | None:
        """Tokens and requests sent to the judge by this task, over all runs (with its estimated cost), or None."""
        return getattr(self, "_judge_usage", None)

    def _count_judge_usage(self, judge_model: Model, before: dict | None) -> None:
        from proctor.models.base import usage_delta

        delta = usage_delta(judge_model, before)
        if delta is None:
            return
        total = getattr(self, "_judge_usage", None) or {}
        self._judge_usage = {
            k: round(total.get(k, 0) + v, 6) if k == "estimated_cost" else total.get(k, 0) + v for k, v in delta.items()
        }

    def _judge_batch(self, loader, metric, judge, rows, answers) -> None:
        """SEA-HELM v1.2's judge dataloaders: the loader builds the judge conversations (with ``custom_ids``),
        the judge model answers them (retried while no ``<classification>``/verdict parses) and the
        responses are written where the metric reads them, ``get_judge_batch_response_filepath()``."""
        loader.dataset = RowList(dict(r, responses=list(a)) for r, a in zip(rows, answers))
        conversations, custom_ids = self._plugin_call(
            loader.prepare_conversations_for_judgements, "prepare_conversations_for_judgements", metric
        )
        parse = (
            getattr(metric, "extract_classification", None)
            or getattr(metric, "parse", None)
            or (lambda text: text.strip() or None)
        )
        verdicts = judge.judge(conversations, lambda text: self._plugin_call(parse, "extract_classification", text))
        path = self._plugin_call(loader.get_judge_batch_response_filepath, "get_judge_batch_response_filepath")
        with open(path, "w", encoding="utf-8") as handle:
            for custom_id, conversation, (_, text) in zip(custom_ids, conversations, verdicts):
                handle.write(
                    json.dumps(
                        {"custom_ids": custom_id, "conversations": conversation, "responses": text}, ensure_ascii=False
                    )
                    + "\n"
                )

    def _judge(self, model):
        from proctor.dialects.seahelm.judges import JudgeRunner

        name = self.options.judge
        judge_model = model
        if isinstance(name, str) and name:
            source = self.resources.get("judge")
            if source is None or source.name != name:  # a task built without its load's resources
                source = self.__dict__.setdefault("_own_judge", JudgeSource(name))
            judge_model = source.model()
        judge_model = batch_api_judge(judge_model, self.config.get("judge") or {})
        generation = (self.config.get("judge") or {}).get("judge_generation_kwargs") or {}
        if isinstance(generation, list):
            generation = generation[0] if generation else {}
        generation = {**generation, **self.options.judge_generation}
        runner = JudgeRunner(
            self.executor.for_model(judge_model), generation
        )  # the run store, under the judge's fingerprint
        self._judge_runner = runner
        return runner
