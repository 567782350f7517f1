"""``Benchmark``: a use case on the base model and on steering pipelines, over trials and sweeps.

- The base model is loaded once; every pipeline wraps that same model, and structural controls
  run a patched copy that shares its unchanged tensors (the base model itself never changes).
- Each configuration has a stable id: a digest of its controls' settings (``baseline`` without any).
- Each (configuration, trial) is one run of ``proctor.evaluate``: the use case as a task
  (``usecase_spec.use_case_task``, trial seed ``seed + t`` in its ``gen_kwargs``) on the base model
  or on the configuration's pipeline as a proctor model (``SteeredModel``; the use case is handed
  the pipeline itself, so per-example runtime arguments apply), into the run folder
  ``save_dir/runs/<pipeline>/<config_id>-t<trial>`` (a temporary folder without ``save_dir``).
  ``save_dir/store.sqlite`` is the shared cache of those run folders, so identical requests (a
  judge's verdict on the same reply) are computed once across trials and configurations.
- Resuming is evaluate's: a trial whose folder holds a complete ``results.json`` (of the same task:
  its content hash is checked) is read back, not run; an unfinished one is run again by
  ``evaluate`` and its store answers every request it had committed. ``save_dir/benchmark.json``
  records what the benchmark was (use case, data, generation settings, model) and a different
  benchmark is refused.
- Profiles are rebuilt from the run folders: ``evaluations`` from ``results.json``, the generations
  from ``samples.jsonl`` in the use case's order (each record's ``generation_index``).
- A raw ``(transformers model, tokenizer)`` base is no proctor model, so it cannot go through
  ``evaluate``: it runs directly (as before), each finished trial kept as ``profile.json`` in its
  folder (read back on a rerun), judge requests on ``save_dir/store.sqlite``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence, Union, cast

from proctor.core.errors import ProctorError
from proctor.dialects.aisteer import analysis
from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.benchmark_plan import Configuration, configurations, trial_dir
from proctor.dialects.aisteer.judge import judges_on
from proctor.dialects.aisteer.records import Evaluations, Generation, ProfileEntry, Profiles
from proctor.models.base import Model
from proctor.models.steering.controls import Control, describe
from proctor.models.steering.pipeline import SteeringPipeline
from proctor.models.steering.specs import ControlSpec
from proctor.runs.results import write_json_atomic

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from proctor.core.task import Task
    from proctor.dialects.aisteer.control_arguments import RuntimeOverrides
    from proctor.models.steering.generation import GenKwargs
    from proctor.runs.store import Lookup

log = logging.getLogger(__name__)

# A loaded base model: a proctor Model, or a raw (transformers model, tokenizer) pair.
LoadedBase = Union[Model, "tuple[PreTrainedModel, PreTrainedTokenizerBase]"]

IDENTITY = "benchmark.json"  # what the benchmark in save_dir is
STORE = "store.sqlite"  # the cache every trial's run folder shares
PROFILE = "profile.json"  # a raw-model trial's profile entry (no run folder results)
_FORMAT = 2


class Benchmark:
    """Compare ``steering_pipelines`` (``{name: [Control | ControlSpec, ...]}``; ``[]`` is the base
    model) on ``use_case``. ``base_model_name_or_path``: a ``--model`` spec (``smollm2``, a folder,
    ``hf:<id>``), a loaded proctor ``Model``, or a ``(transformers model, tokenizer)`` pair."""

    def __init__(
        self,
        use_case: UseCase,
        base_model_name_or_path: str | LoadedBase = "smollm2",
        steering_pipelines: Mapping[str, Sequence[Control | ControlSpec]] | None = None,
        runtime_overrides: RuntimeOverrides | None = None,
        gen_kwargs: GenKwargs | None = None,
        num_trials: int = 1,
        batch_size: int = 8,
        save_dir: str | Path | None = None,
        model_options: Mapping[str, object] | None = None,
        context: Mapping[str, object] | None = None,
        progress: Callable[[dict[str, object]], None] | None = None,
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
        self._model: LoadedBase | None = None
        self.configurations = configurations(self.steering_pipelines, self.context)

    @property
    def _base(self) -> str | LoadedBase:
        """The base model: the ``steer_base`` role given for the run (``--model-role steer_base=``), else ``base``."""
        from proctor.api.model_roles import active_roles

        return active_roles().spec("steer_base", self.base)

    def identity(self) -> dict[str, object]:
        base = self._base
        model: object  # the spec, the model's fingerprint or its name
        if isinstance(base, str):
            model = base
        elif isinstance(getattr(base, "fingerprint", None), dict):
            model = cast(Model, base).fingerprint  # only a Model has one
        else:
            model = describe(
                getattr(
                    getattr(base, "config", None) if not isinstance(base, tuple) else base[0].config,
                    "_name_or_path",
                    repr(base),
                )
            )
        return {
            "use_case": type(self.use_case).__name__,
            "use_case_fingerprint": self.use_case.fingerprint(),
            "gen_kwargs": describe(self.gen_kwargs),
            "runtime_overrides": describe(self.runtime_overrides),
            "model": model,
        }

    @property
    def _direct(self) -> bool:
        """A raw transformers base (no proctor model): trials run without ``evaluate``."""
        return not isinstance(self._base, (str, Model))

    # ------------------------------------------------------------------ model
    def _load(self) -> LoadedBase:
        if self._model is None:
            from proctor.api.model_roles import active_roles

            base = self._base
            if isinstance(base, str):
                log.info("loading base model %s", base)
            self._model = active_roles().model("steer_base", base, options=self.model_options)
        return self._model

    @contextlib.contextmanager
    def _target(self, controls: list[Control]) -> Iterator[tuple[object, PreTrainedTokenizerBase | None]]:
        """(what the trials run on, the tokenizer the use case gets on the direct path) while the
        configuration runs: the base model, or the steered pipeline (cleaned up afterwards); through
        ``evaluate`` a pipeline runs as a proctor model (``as_model()``)."""
        model = self._load()
        tokenizer = None
        if isinstance(model, tuple):
            model, tokenizer = model
        if not controls:
            yield model, tokenizer
            return
        pipeline = SteeringPipeline(model, controls, tokenizer=tokenizer)
        try:
            pipeline.steer()
            yield (pipeline if self._direct else pipeline.as_model()), pipeline.tokenizer
        finally:
            pipeline.cleanup()
            gc.collect()

    # ------------------------------------------------------------------ identity
    def _check_identity(self, folder: Path) -> None:
        path = folder / IDENTITY
        mine = json.loads(json.dumps(self.identity(), sort_keys=True, default=str))
        if path.exists():
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("format") != _FORMAT or stored.get("identity") != mine:
                raise ProctorError(
                    f"{path} belongs to a different benchmark (use case, data, generation settings or model differ); "
                    "use another save_dir or delete it"
                )
        else:
            folder.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, {"format": _FORMAT, "identity": mine})

    # ------------------------------------------------------------------ run
    def run(self) -> Profiles:
        """Profiles ``{pipeline: [{trial_id, config_id, params, generations, evaluations}]}``."""
        with contextlib.ExitStack() as stack:
            folder = self.save_dir
            if folder is None:  # the runs still go through evaluate, into a folder of their own
                folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="proctor-benchmark-")))
            else:
                self._check_identity(folder)
            profiles: Profiles = {}
            for config in self.configurations:
                profiles.setdefault(config.pipeline, []).extend(self._run_configuration(config, folder))
        self.profiles = profiles
        return profiles

    def _run_configuration(self, config: Configuration, folder: Path) -> list[ProfileEntry]:
        entries: dict[int, ProfileEntry] = {}
        for trial in range(self.num_trials):
            entry = self._finished(config, trial, trial_dir(folder, config, trial))
            if entry is not None:
                entries[trial] = entry
        todo = [t for t in range(self.num_trials) if t not in entries]
        if todo:
            with self._target(config.controls) as (target, tokenizer):
                for trial in todo:
                    run_dir = trial_dir(folder, config, trial)
                    if self._direct:
                        entries[trial] = self._run_direct(config, trial, run_dir, folder, target, tokenizer)
                    else:
                        # through evaluate the target is a proctor Model (the base, or pipeline.as_model())
                        entries[trial] = self._run_evaluated(config, trial, run_dir, folder, cast(Model, target))
                    if self.progress:
                        self.progress(
                            {
                                "pipeline": config.pipeline,
                                "config_id": config.config_id,
                                "trial_id": trial,
                                "params": config.params,
                                "evaluations": entries[trial]["evaluations"],
                            }
                        )
        elif entries:
            log.info("%s %s: %d finished trial(s) read back", config.pipeline, config.config_id, len(entries))
        return [entries[t] for t in range(self.num_trials)]

    def _gen_kwargs(self, trial: int) -> dict[str, object]:
        gen_kwargs = dict(self.gen_kwargs)
        gen_kwargs["seed"] = int(gen_kwargs.get("seed", 0)) + trial
        return gen_kwargs

    def _entry(
        self, config: Configuration, trial: int, generations: list[Generation], evaluations: Evaluations
    ) -> ProfileEntry:
        entry = {
            "trial_id": trial,
            "config_id": config.config_id,
            "params": describe(config.params),
            "generations": generations,
            "evaluations": evaluations,
        }
        return json.loads(json.dumps(entry, default=str))

    # ------------------------------------------------------------------ through evaluate
    def _task(self, trial: int) -> Task:
        from proctor.dialects.aisteer.usecase_spec import object_build, use_case_task

        call = {"batch_size": self.batch_size, "runtime_overrides": self.runtime_overrides or None}
        build = object_build(self.use_case, self._gen_kwargs(trial), call)
        return use_case_task(self.use_case.name, build(None), build, None, benchmark_trial=trial)

    def _finished(self, config: Configuration, trial: int, run_dir: Path) -> ProfileEntry | None:
        """The profile entry of a trial whose run finished (None when it did not)."""
        if self._direct:
            path = run_dir / PROFILE
            return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
        from proctor.runs.run_exports import load_results

        if not (run_dir / "results.json").exists():
            return None
        results = load_results(run_dir)
        if results.get("status") != "complete":
            return None
        from proctor.api import task_hash
        from proctor.runs.manifest import read_manifest

        task = self._task(trial)
        manifest = read_manifest(run_dir) or {}
        if manifest.get("tasks") != {task.name: task_hash(task)}:
            raise ProctorError(
                f"{run_dir} belongs to a different benchmark (its use case task differs: data, generation settings or "
                "batch size); use another save_dir or delete it"
            )
        return self._read_run(config, trial, run_dir, results)

    def _read_run(self, config: Configuration, trial: int, run_dir: Path, results: dict) -> ProfileEntry:
        from proctor.runs.run_exports import iter_samples

        result = results["tasks"][self.use_case.name]
        placed: list[tuple[int, Generation]] = []
        for record in iter_samples(run_dir):
            placed.extend(zip(record["generation_index"], record["generations"]))
        generations = [g for _, g in sorted(placed, key=lambda pair: pair[0])]
        return self._entry(config, trial, generations, result["evaluations"])

    def _run_evaluated(
        self, config: Configuration, trial: int, run_dir: Path, folder: Path, model: Model
    ) -> ProfileEntry:
        from proctor.api import evaluate
        from proctor.runs.manifest import RunMismatchError

        try:
            result = evaluate([self._task(trial)], model, output_dir=run_dir, cache=folder / STORE, export=False)
        except RunMismatchError as exc:
            raise ProctorError(f"{run_dir} belongs to a different benchmark: {exc}") from None
        return self._read_run(config, trial, run_dir, result.results)  # evaluations as returned; generations as stored

    # ------------------------------------------------------------------ a raw transformers base
    def _run_direct(
        self,
        config: Configuration,
        trial: int,
        run_dir: Path,
        folder: Path,
        target: object,
        tokenizer: PreTrainedTokenizerBase | None,
    ) -> ProfileEntry:
        generations = self.use_case.generate(
            target,
            tokenizer,
            gen_kwargs=self._gen_kwargs(trial),
            runtime_overrides=self.runtime_overrides or None,
            batch_size=self.batch_size,
        )
        with self._judge_store(folder) as lookup, judges_on(self.use_case, lookup):
            evaluations = self.use_case.evaluate(generations)
        entry = self._entry(config, trial, generations, evaluations)
        if self.save_dir is not None:
            write_json_atomic(run_dir / PROFILE, entry)
        return entry

    @contextlib.contextmanager
    def _judge_store(self, folder: Path) -> Iterator[Lookup | None]:
        """With ``save_dir``, its store for the judges' requests (None without)."""
        if self.save_dir is None:
            yield None
            return
        from proctor.runs.store import Lookup, ResponseStore

        lookup = Lookup(ResponseStore(folder / STORE))
        try:
            yield lookup
        finally:
            lookup.close()

    # ------------------------------------------------------------------ outputs
    def table(self, profiles: Mapping[str, Sequence[ProfileEntry]] | None = None) -> list[analysis.ResultRow]:
        return analysis.results_table(profiles if profiles is not None else self.profiles)

    def export(
        self,
        profiles: Mapping[str, Sequence[ProfileEntry]] | None = None,
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
            written["tradeoff"] = analysis.plot_tradeoff(
                rows, tradeoff[0], tradeoff[1], folder / "tradeoff.png", maximize
            )
        return written
