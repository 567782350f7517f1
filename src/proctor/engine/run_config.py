"""A run's configuration, typed and frozen: what ``proctor run`` and ``api.evaluate`` are asked to do.

The command line builds one ``RunConfig`` from its flags and ``api.evaluate``'s keywords build the same;
``api.run_evaluation`` takes it from either, so both go one way. Each group holds one concern: the model
(``ModelConfig``), the rows each task keeps (``RowLimit``), how tasks are prepared (``PrepareOptions``) and
the run folder (``OutputOptions``). Values are parsed when the configuration is built, once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Union

from proctor.core.errors import ProctorError
from proctor.core.run_overrides import RunOverrides, parse_limit
from proctor.core.task import Task
from proctor.models.base import ConvertsToModel, Model

if TYPE_CHECKING:
    from proctor.engine.distributed import ClusterOptions

ModelRef = Union[Model, ConvertsToModel, str]  # a loaded model, a steering pipeline, or a --model string
TaskRef = Union[Task, str, Path]  # a task, or a file or folder to find tasks in


@dataclass(frozen=True)
class RowLimit:
    """``--limit`` / ``--limit-per-part``: a count or a fraction (0 < value < 1) of each task's rows, or of
    each part of its first ``breakdown`` field (``per_part``, which only holds with a value); or ``--sample-id``:
    the samples with these ids (exact, or globs), in every task (``engine/sample_selection.py``)."""

    value: int | float | None = None
    per_part: bool = False
    sample_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.value is None and self.per_part:
            object.__setattr__(self, "per_part", False)  # no limit: nothing is cut, per part or not
        if self.sample_ids and self.value is not None:  # which rows, named twice: the ids would be cut again
            flag = "--limit-per-part" if self.per_part else "--limit"
            raise ProctorError(
                f"--sample-id and {flag} exclude each other: --sample-id names the samples to run, {flag} keeps "
                "the first rows; give one"
            )

    @classmethod
    def parse(cls, value: str | int | float | None, per_part: bool = False) -> "RowLimit":
        """From a count or fraction as given (text or number); a bad one raises ``ProctorError``."""
        return cls(parse_limit(value), per_part)


@dataclass(frozen=True)
class ModelConfig:
    """The model and how it is loaded: backend ``options`` for a ``--model`` string, and Ray replicas
    (``workers``, or a ``cluster``: ``engine.distributed.ClusterOptions`` or a mapping of its fields)."""

    model: ModelRef = "smollm2"
    options: Mapping[str, object] = field(default_factory=dict)
    workers: int | None = None
    cluster: "ClusterOptions | Mapping[str, Any] | None" = None

    def cluster_options(self) -> "ClusterOptions | None":
        """ClusterOptions when the run goes to Ray (more than one worker, or a cluster address), else None."""
        if self.cluster is None and (self.workers or 1) <= 1:
            return None
        from proctor.engine.distributed import ClusterOptions

        if self.cluster is None:
            cluster = ClusterOptions(workers=self.workers or 1)
        elif isinstance(self.cluster, ClusterOptions):
            cluster = self.cluster
        else:
            cluster = ClusterOptions(**dict(self.cluster))
        if self.workers is not None and self.workers != cluster.workers:
            cluster = dataclasses.replace(cluster, workers=self.workers)
        if cluster.workers <= 1 and cluster.address is None:
            return None
        return cluster


@dataclass(frozen=True)
class RolesConfig:
    """The models a run's dialects use besides the evaluated one, by role (``--model-role ROLE=SPEC``; the roles
    are ``api/model_roles.ROLES``): each replaces the model the task files name for that role. ``server``: the
    server settings (``--base-url``, ``--api-key-env``) a role named ``openai:NAME`` takes where its dialect
    gives none."""

    given: Mapping[str, ModelRef] = field(default_factory=dict)
    server: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PrepareOptions:
    """How every task is prepared: ``${VAR}`` values (GLM-130B's ``data_path`` sets ``${DATA_PATH}``), chat
    templates (None: as each task says), the multiple-choice format and the run-time ``overrides``."""

    variables: Mapping[str, str] = field(default_factory=dict)
    data_path: Path | None = None
    chat: bool | None = None
    mc_format: str = "auto"
    mc_shuffle_seed: int | None = None
    overrides: RunOverrides = field(default_factory=RunOverrides)
    strict_audit: bool = False  # --strict: every audit finding the task does not silence stops it

    def all_variables(self) -> dict[str, str] | None:
        """The variables with ``DATA_PATH`` from ``data_path`` (None when neither is given)."""
        if self.data_path is None:
            return dict(self.variables) if self.variables else None
        return {**self.variables, "DATA_PATH": str(Path(self.data_path).expanduser().resolve())}

    def mc_options(self) -> dict[str, str | int]:
        """Only non-default multiple-choice options enter the manifest (older run folders stay comparable)."""
        out: dict[str, str | int] = {}
        if self.mc_format != "auto":
            out["mc_format"] = self.mc_format
        if self.mc_shuffle_seed is not None:
            out["mc_shuffle_seed"] = self.mc_shuffle_seed
        return out


@dataclass(frozen=True)
class OutputOptions:
    """The run folder: ``output_dir`` (None: a new folder under ``runs_root``), resuming (``update``,
    ``restart``), the shared response ``cache``, requests per stored chunk, run-level exports, and the
    ``command`` recorded (None from Python)."""

    output_dir: Path | None = None
    runs_root: Path = Path("runs")
    cache: str | Path | None = None  # as given: "" (an empty $PROCTOR_CACHE) means none, see runs.store.cache_path
    chunk_size: int | None = None
    update: bool = False
    restart: bool = False
    export: bool = True
    command: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RunConfig:
    """One run: the tasks (``Task`` objects, or files and folders filtered by the ``select`` globs and read with
    the dialects' ``dialect_options``), the model, the row limit, how tasks are prepared, and the run folder.
    ``predict_only``: the model answers and its answers are kept (run store, samples.jsonl), but no metric is
    computed; the same folder run again without it scores the stored answers."""

    tasks: tuple[TaskRef, ...]
    model: ModelConfig = field(default_factory=ModelConfig)
    select: tuple[str, ...] | None = None
    dialect_options: Mapping[str, object] | None = None
    limit: RowLimit = field(default_factory=RowLimit)
    prepare: PrepareOptions = field(default_factory=PrepareOptions)
    output: OutputOptions = field(default_factory=OutputOptions)
    predict_only: bool = False
    roles: RolesConfig = field(default_factory=RolesConfig)
