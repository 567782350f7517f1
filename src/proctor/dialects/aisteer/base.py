"""The ``UseCase`` base class: a task written as Python (generate / evaluate / export).

Construction rules (AISteer360's, with its gaps closed):

- ``evaluation_data`` is a list of dicts or a ``.json`` / ``.jsonl`` path;
- every row must carry the class's ``_EVALUATION_REQ_KEYS`` (non-null); ``id`` is required only
  where the class lists it (AISteer360's instruction-following rows have none), and ids, where
  rows have them, must be unique; every row is checked, and ``validate_evaluation_data`` is called
  on it, when the use case is built — before any generation — and errors name the row and its id;
- ``shuffle`` uses ``random.Random(seed)`` and happens before truncation to ``num_samples``;
- extra keyword arguments become attributes; subclasses do not define ``__init__``.
"""

from __future__ import annotations

import abc
import hashlib
import json
import logging
import math
import random
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Sequence

from proctor.core.errors import ProctorError
from proctor.data.readers import Row
from proctor.dialects.aisteer.metrics import Metric

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from proctor.dialects.aisteer.control_arguments import RuntimeOverrides
    from proctor.dialects.aisteer.records import Evaluations, Generation, Profiles
    from proctor.models.steering.generation import GenKwargs

log = logging.getLogger(__name__)


class UseCaseDataError(ProctorError, ValueError):
    """A row of a use case's evaluation data is wrong; the message names the row and its id."""


def load_rows(source: list[Row] | str | Path) -> tuple[list[Row], str]:
    """Rows of evaluation data and a label for error messages."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise UseCaseDataError(f"{path}: no such evaluation data file")
        from proctor.core.errors import TaskDefinitionError
        from proctor.data.file_text import compression
        from proctor.data.readers import json_document, json_values

        try:  # proctor's reader and its checks (a key given twice, bytes that are not UTF-8), named as this file's
            if (Path(path.stem).suffix if compression(path) else path.suffix) == ".jsonl":
                rows = [row for _, row in json_values(path)]
            else:
                rows = json_document(path)
        except TaskDefinitionError as exc:
            raise UseCaseDataError(str(exc)) from None
        if isinstance(rows, dict) and "data" in rows:
            rows = rows["data"]
        if not isinstance(rows, list):
            raise UseCaseDataError(f"{path}: expected a list of rows, got {type(rows).__name__}")
        if not rows:
            raise UseCaseDataError(f"{path}: the evaluation data file holds no rows (it is empty)")
        return rows, str(path)
    if isinstance(source, (list, tuple)):
        return list(source), "evaluation_data"
    raise TypeError(f"evaluation_data must be a list of dicts or a .json/.jsonl path, got {type(source).__name__}")


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


class UseCase(abc.ABC):
    """Base class of Python use cases. Subclasses implement ``generate`` and ``evaluate``."""

    _EVALUATION_REQ_KEYS: ClassVar[Sequence[str]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            raise TypeError(
                f"{cls.__name__} defines __init__: use cases take their settings as keyword arguments of "
                "UseCase (they become attributes); declare them as class annotations instead"
            )

    def __init__(
        self,
        evaluation_data: list[Row] | str | Path,
        evaluation_metrics: Sequence[Metric] | None = None,
        num_samples: int = -1,
        shuffle: bool = False,
        seed: int = 555,
        **kwargs: object,
    ) -> None:
        for key, value in kwargs.items():
            if callable(getattr(type(self), key, None)):
                raise TypeError(f"{type(self).__name__}: keyword argument '{key}' would hide the method of that name")
            setattr(self, key, value)
        metrics = list(evaluation_metrics or [])
        for metric in metrics:
            if not isinstance(metric, Metric):
                raise TypeError(f"evaluation_metrics must be Metric instances, got {type(metric).__name__}")
        names = [m.name for m in metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"two evaluation metrics share a name: {names}")
        self.evaluation_metrics = metrics
        self._metrics_by_name = {m.name: m for m in metrics}  # AISteer360's attribute
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)):
            raise TypeError(
                f"num_samples must be an integer (the number of rows to keep; -1 for all), got "
                f"{type(num_samples).__name__} {num_samples!r:.60}"
            )
        self.num_samples = num_samples
        self.shuffle = shuffle
        self.seed = seed
        self._check_settings()
        rows, self._data_label = load_rows(evaluation_data)
        if not rows:
            warnings.warn(f"{type(self).__name__}: the evaluation data is empty", UserWarning, stacklevel=2)
        self._check_rows(rows)
        if shuffle:
            random.Random(seed).shuffle(rows)
        if num_samples is not None and num_samples > 0:
            rows = rows[:num_samples]
        self.evaluation_data: list[Row] = rows

    # ------------------------------------------------------------------ validation
    def _check_settings(self) -> None:  # noqa: B027 - an optional hook: most use cases have nothing to check
        """A subclass's check of its settings (the keyword arguments, now attributes), run when it is built,
        before any model loads; raise ``ValueError`` / ``TypeError`` naming the setting."""

    def _check_rows(self, rows: Sequence[object]) -> None:
        seen: dict[str, int] = {}
        required = list(dict.fromkeys(self._EVALUATION_REQ_KEYS))
        for index, row in enumerate(rows):
            where = f"{self._data_label}, row {index + 1}"
            if not isinstance(row, dict):
                raise UseCaseDataError(f"{where}: expected an object, got {type(row).__name__}")
            if "id" in required and ("id" not in row or _is_missing(row["id"])):
                raise UseCaseDataError(
                    f"{where}: every row needs an 'id' (missing keys: {[k for k in required if k not in row]})"
                )
            if "id" in row:
                where += f" (id {row['id']!r})"
            missing = [key for key in required if key not in row]
            if missing:
                raise UseCaseDataError(f"{where}: missing required keys {missing}")
            empty = [key for key in required if _is_missing(row[key])]
            if empty:
                raise UseCaseDataError(f"{where}: required keys are null or NaN: {empty}")
            if "id" in row:
                key = json.dumps(row["id"], sort_keys=True, default=str)
                if key in seen:
                    raise UseCaseDataError(f"{where}: duplicate id (also row {seen[key] + 1})")
                seen[key] = index
            try:
                self.validate_evaluation_data(row)
            except UseCaseDataError:
                raise
            except (ValueError, TypeError, KeyError) as exc:
                raise UseCaseDataError(f"{where}: {exc}") from exc

    def validate_evaluation_data(self, row: Row) -> None:  # noqa: B027 - optional, as upstream's
        """Check one row; raise ValueError with what is wrong. Called on every row at construction.

        The base class has already checked ``_EVALUATION_REQ_KEYS`` and that ids are unique.
        """

    # ------------------------------------------------------------------ the contract
    @abc.abstractmethod
    def generate(
        self,
        model_or_pipeline: object,
        tokenizer: PreTrainedTokenizerBase | None = None,
        gen_kwargs: GenKwargs | None = None,
        runtime_overrides: RuntimeOverrides | None = None,
        **kwargs: object,
    ) -> list[Generation]:
        """Generations: one dict per prompt, with at least ``response``."""

    @abc.abstractmethod
    def evaluate(self, generations: list[Generation]) -> Evaluations:
        """Scores: ``{metric name: {value name: number}}``."""

    def export(self, profiles: Profiles, save_dir: str | Path) -> None:
        """Write benchmark profiles to ``save_dir`` (default: ``profiles.json``)."""
        from proctor.runs.results import write_json_atomic

        write_json_atomic(Path(save_dir) / "profiles.json", profiles)

    # ------------------------------------------------------------------ identity
    def settings(self) -> dict[str, object]:
        """The attributes that shape prompts (extra kwargs, seed, sampling of the data)."""
        skip = {"evaluation_data", "evaluation_metrics"}
        out = {}
        for key, value in vars(self).items():
            if key in skip or key.startswith("_"):
                continue
            try:
                json.dumps(value)
                out[key] = value
            except TypeError:
                out[key] = repr(value)
        return out

    def fingerprint(self) -> str:
        """A digest of the class, its settings, its metrics and its data."""
        payload = {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "settings": self.settings(),
            "metrics": [m.name for m in self.evaluation_metrics],
            "data": self.evaluation_data,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @property
    def name(self) -> str:
        return type(self).__name__
