"""``Benchmark``: a use case on the base model and on steering pipelines, over trials and sweeps.

- The base model is loaded once; every pipeline wraps that same model, and structural controls
  run a patched copy that shares its unchanged tensors (the base model itself never changes).
- Each configuration has a stable id: a digest of its controls' settings (``baseline`` without any).
- With ``save_dir``, ``checkpoint.json`` is rewritten atomically after every finished trial; a
  benchmark started again on the same folder skips what the checkpoint holds. The checkpoint
  records what the benchmark was (use case, data, generation settings, model) and refuses to
  resume a different one.
- With ``save_dir``, the use case is handed an executor (``session.py``) with
  ``save_dir/store.sqlite`` as its run store instead of the bare proctor model, and each pipeline
  gets it too (``SteeringPipeline(executor=...)``): every request a trial sends to a proctor model
  or to a steered copy of it is committed chunk by chunk, and a trial cut off by a kill reads its
  finished requests back when the benchmark runs again.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from proctor.core.errors import ProctorError
from proctor.runs.results import write_json_atomic
from proctor.dialects.aisteer import analysis
from proctor.dialects.aisteer.base import UseCase
from proctor.models.steering.controls import Control, describe
from proctor.models.steering.pipeline import SteeringPipeline
from proctor.dialects.aisteer.judge import judges_on
from proctor.models.steering.specs import ControlSpec, expand

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.json"
_FORMAT = 1


@dataclass
class Configuration:
    pipeline: str
    config_id: str
    params: dict
    controls: list[Control] = field(repr=False)


def config_id(controls: Sequence[Control]) -> str:
    if not controls:
        return "baseline"
    payload = json.dumps([c.config() for c in controls], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


class Benchmark:
    """Compare ``steering_pipelines`` (``{name: [Control | ControlSpec, ...]}``; ``[]`` is the base
    model) on ``use_case``. ``base_model_name_or_path``: a ``--model`` spec (``smollm2``, a folder,
    ``hf:<id>``), a loaded proctor ``Model``, or a ``(transformers model, tokenizer)`` pair."""

    def __init__(
        self,
        use_case: UseCase,
        base_model_name_or_path: Any = "smollm2",
        steering_pipelines: Mapping[str, Sequence[Control | ControlSpec]] | None = None,
        runtime_overrides: Mapping[str, Mapping[str, Any]] | None = None,
        gen_kwargs: Mapping[str, Any] | None = None,
        num_trials: int = 1,
        batch_size: int = 8,
        save_dir: str | Path | None = None,
        model_options: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        progress: Callable[[dict], None] | None = None,
    ) -> None:
        if not isinstance(use_case, UseCase):
            raise TypeError(f"use_case must be a UseCase, got {type(use_case).__name__}")
        if num_trials < 1:
            raise ValueError("num_trials must be at least 1")
        self.use_case = use_case
        self.base = base_model_name_or_path
        self.steering_pipelines = dict(steering_pipelines if steering_pipelines is not None else {"baseline": []})
        self.runtime_overrides = dict(runtime_overrides or {})
        self.gen_kwargs = dict(gen_kwargs or {})
        self.num_trials = num_trials
        self.batch_size = batch_size
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.model_options = dict(model_options or {})
        self.context = dict(context or {})
        self.progress = progress
        self._model: Any = None
        self._lookup: Any = None  # the save_dir run store while run() runs
        self._executor: Any = None
        self.configurations = self._configurations()

    # ------------------------------------------------------------------ plan
    def _configurations(self) -> list[Configuration]:
        out = []
        for pipeline, items in self.steering_pipelines.items():
            seen: set[str] = set()
            for params, controls in expand(list(items), self.context):
                cid = config_id(controls)
                if cid in seen:
                    raise ValueError(f"pipeline '{pipeline}' has two identical configurations ({params})")
                seen.add(cid)
                out.append(Configuration(pipeline, cid, params, controls))
        return out

    def identity(self) -> dict:
        base = self.base
        if isinstance(base, str):
            model = base
        elif isinstance(getattr(base, "fingerprint", None), dict):
            model = base.fingerprint
        else:
            model = describe(getattr(getattr(base, "config", None) if not isinstance(base, tuple) else base[0].config, "_name_or_path", repr(base)))
        return {
            "use_case": type(self.use_case).__name__,
            "use_case_fingerprint": self.use_case.fingerprint(),
            "gen_kwargs": describe(self.gen_kwargs),
            "runtime_overrides": describe(self.runtime_overrides),
            "model": model,
        }

    # ------------------------------------------------------------------ model
    def _load(self) -> Any:
        if self._model is None:
            if isinstance(self.base, str):
                from proctor.models.registry import load_model

                log.info("loading base model %s", self.base)
                self._model = load_model(self.base, **self.model_options)
            else:
                self._model = self.base
        return self._model

    def _target(self, controls: list[Control]) -> tuple[Any, Any, SteeringPipeline | None]:
        """(model_or_pipeline, tokenizer, pipeline to clean up)."""
        model = self._load()
        tokenizer = None
        if isinstance(model, tuple):
            model, tokenizer = model
        executor = self._executor_for(model)
        if not controls:
            return executor or model, tokenizer, None
        pipeline = SteeringPipeline(model, controls, tokenizer=tokenizer, executor=executor)
        return pipeline, pipeline.tokenizer, pipeline

    def _executor_for(self, model: Any) -> Any:
        """With ``save_dir``, the executor on its run store for a proctor model (else None)."""
        from proctor.models.base import Model

        if self._lookup is None or not isinstance(model, Model):
            return None
        if self._executor is None:
            from proctor.dialects.aisteer.session import UseCaseExecutor
            from proctor.runs.executor import ModelExecutor

            self._executor = UseCaseExecutor(ModelExecutor(model, self._lookup), name=type(self.use_case).__name__)
        return self._executor

    # ------------------------------------------------------------------ checkpoint
    def _read_checkpoint(self) -> dict[str, list[dict]]:
        if self.save_dir is None or not (self.save_dir / CHECKPOINT).exists():
            return {}
        stored = json.loads((self.save_dir / CHECKPOINT).read_text(encoding="utf-8"))
        mine = json.loads(json.dumps(self.identity(), sort_keys=True, default=str))
        if stored.get("format") != _FORMAT or stored.get("identity") != mine:
            raise ProctorError(
                f"{self.save_dir / CHECKPOINT} belongs to a different benchmark (use case, data, generation "
                "settings or model differ); use another save_dir or delete the checkpoint"
            )
        return stored["profiles"]

    def _write_checkpoint(self, profiles: dict[str, list[dict]]) -> None:
        if self.save_dir is not None:
            write_json_atomic(self.save_dir / CHECKPOINT, {"format": _FORMAT, "identity": self.identity(), "profiles": profiles})

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, list[dict]]:
        """Profiles ``{pipeline: [{trial_id, config_id, params, generations, evaluations}]}``."""
        if self.save_dir is None:
            return self._run()
        from proctor.runs.store import STORE_FILE, Lookup, ResponseStore

        self._lookup = Lookup(ResponseStore(self.save_dir / STORE_FILE))
        try:
            return self._run()
        finally:
            self._lookup.close()
            self._lookup = self._executor = None

    def _run(self) -> dict[str, list[dict]]:
        profiles = self._read_checkpoint()
        done = {(p, e["config_id"], e["trial_id"]) for p, entries in profiles.items() for e in entries}
        if done:
            log.info("resuming: %d finished trial(s) in the checkpoint", len(done))
        for config in self.configurations:
            trials = [t for t in range(self.num_trials) if (config.pipeline, config.config_id, t) not in done]
            profiles.setdefault(config.pipeline, [])
            if not trials:
                continue
            target, tokenizer, pipeline = self._target(config.controls)
            try:
                if pipeline is not None:
                    pipeline.steer()
                for trial in trials:
                    gen_kwargs = dict(self.gen_kwargs)
                    gen_kwargs["seed"] = int(gen_kwargs.get("seed", 0)) + trial
                    generations = self.use_case.generate(
                        target, tokenizer, gen_kwargs=gen_kwargs, runtime_overrides=self.runtime_overrides or None,
                        batch_size=self.batch_size,
                    )
                    with judges_on(self.use_case, self._lookup):  # judge requests on the save_dir store too
                        evaluations = self.use_case.evaluate(generations)
                    entry = {"trial_id": trial, "config_id": config.config_id, "params": describe(config.params),
                             "generations": generations, "evaluations": evaluations}
                    profiles[config.pipeline].append(json.loads(json.dumps(entry, default=str)))
                    self._write_checkpoint(profiles)
                    if self.progress:
                        self.progress({"pipeline": config.pipeline, "config_id": config.config_id, "trial_id": trial,
                                       "params": config.params, "evaluations": evaluations})
            finally:
                if pipeline is not None:
                    pipeline.cleanup()
                gc.collect()
        order = {c.config_id: i for i, c in enumerate(self.configurations)}
        for entries in profiles.values():
            entries.sort(key=lambda e: (order.get(e["config_id"], len(order)), e["trial_id"]))
        self.profiles = profiles
        return profiles

    # ------------------------------------------------------------------ outputs
    def table(self, profiles: Mapping[str, Sequence[Mapping]] | None = None) -> list[dict]:
        return analysis.results_table(profiles if profiles is not None else self.profiles)

    def export(
        self,
        profiles: Mapping[str, Sequence[Mapping]] | None = None,
        save_dir: str | Path | None = None,
        tradeoff: tuple[str, str] | None = None,
        maximize: tuple[bool, bool] = (True, True),
    ) -> dict[str, Path]:
        """Write the use case's export, ``results.csv`` (tidy), ``summary.csv`` and, with
        ``tradeoff=(x_metric, y_metric)``, ``tradeoff.png`` with the Pareto frontier."""
        profiles = profiles if profiles is not None else self.profiles
        folder = Path(save_dir) if save_dir is not None else self.save_dir
        if folder is None:
            raise ValueError("export needs a save_dir")
        folder.mkdir(parents=True, exist_ok=True)
        written: dict[str, Path] = {}
        try:
            self.use_case.export(json.loads(json.dumps(profiles, default=str)), folder)
        except Exception:  # an export failure must not lose the tables
            log.exception("%s.export failed", type(self.use_case).__name__)
        rows = analysis.results_table(profiles)
        written["results"] = analysis.write_csv(rows, folder / "results.csv")
        written["summary"] = analysis.write_csv(analysis.summarize(rows), folder / "summary.csv")
        if tradeoff is not None:
            written["tradeoff"] = analysis.plot_tradeoff(rows, tradeoff[0], tradeoff[1], folder / "tradeoff.png", maximize)
        return written
