"""AISteer360's ``Benchmark`` constructor on proctor's ``Benchmark``.

AISteer360 writes ``Benchmark(use_case, base_model_name_or_path, steering_pipelines,
runtime_overrides=None, hf_model_kwargs=None, gen_kwargs=None, device_map="auto", num_trials=1,
batch_size=8, save_dir=None)``: the same arguments in that order are accepted here, and the run is
proctor's (one shared base model, trials with seeds ``seed + t``, each trial a run of ``proctor.evaluate``
in ``save_dir/runs``, resumed as evaluate resumes). ``hf_model_kwargs`` / ``device_map`` become the proctor
model's options.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from proctor.dialects.aisteer.base import UseCase
from proctor.dialects.aisteer.benchmark import Benchmark, LoadedBase
from proctor.dialects.aisteer.records import Profiles

if TYPE_CHECKING:
    from proctor.dialects.aisteer.control_arguments import RuntimeOverrides
    from proctor.models.steering.controls import Control
    from proctor.models.steering.generation import GenKwargs
    from proctor.models.steering.specs import ControlSpec

log = logging.getLogger(__name__)

# HF from_pretrained keywords proctor's HFModel takes, under proctor's names
_HF_OPTIONS = {"revision": "revision", "trust_remote_code": "trust_remote_code"}


def model_options(hf_model_kwargs: Mapping[str, object] | None, device_map: object) -> dict[str, object]:
    """proctor model options for AISteer360's ``hf_model_kwargs`` and ``device_map``."""
    options: dict[str, object] = {}
    kwargs = dict(hf_model_kwargs or {})
    dtype = kwargs.pop("torch_dtype", kwargs.pop("dtype", None))
    if dtype is not None:
        options["dtype"] = str(dtype).removeprefix("torch.")
    for key, name in _HF_OPTIONS.items():
        if key in kwargs:
            options[name] = kwargs.pop(key)
    if kwargs:
        raise ValueError(
            f"hf_model_kwargs {sorted(kwargs)} have no proctor equivalent (supported: "
            f"torch_dtype, dtype, {', '.join(_HF_OPTIONS)})"
        )
    if isinstance(device_map, str):
        options["device"] = device_map  # "auto", "cpu", "cuda", "cuda:N"
    elif device_map is not None:
        raise ValueError(
            f"device_map {device_map!r}: proctor places a model on one device ('auto', 'cpu', 'cuda', 'cuda:N')"
        )
    return options


class AISteerBenchmark(Benchmark):
    """``Benchmark`` with AISteer360's constructor (``aisteer360.evaluation.benchmark.Benchmark``)."""

    def __init__(
        self,
        use_case: UseCase,
        base_model_name_or_path: str | Path | LoadedBase,
        steering_pipelines: Mapping[str, list[Control | ControlSpec]],
        runtime_overrides: RuntimeOverrides | None = None,
        hf_model_kwargs: Mapping[str, object] | None = None,
        gen_kwargs: GenKwargs | None = None,
        device_map: object = "auto",
        num_trials: int = 1,
        batch_size: int = 8,
        save_dir: str | Path | None = None,
        **proctor_options: Any,
    ) -> None:
        options = model_options(hf_model_kwargs, device_map) if isinstance(base_model_name_or_path, (str, Path)) else {}
        options.update(proctor_options.pop("model_options", None) or {})
        super().__init__(
            use_case,
            str(base_model_name_or_path) if isinstance(base_model_name_or_path, Path) else base_model_name_or_path,
            steering_pipelines,
            runtime_overrides=runtime_overrides,
            gen_kwargs=gen_kwargs,
            num_trials=int(num_trials),
            batch_size=int(batch_size),
            save_dir=save_dir,
            model_options=options,
            **proctor_options,
        )
        self.base_model_name_or_path = base_model_name_or_path
        self.hf_model_kwargs = dict(hf_model_kwargs or {})
        self.device_map = device_map

    def run(self) -> Profiles:
        """Proctor's run; then, with ``save_dir``, the use case's ``export`` as AISteer360 calls it
        (a failing export is logged, not raised)."""
        profiles = super().run()
        if self.save_dir is not None:
            try:
                self.use_case.export(json.loads(json.dumps(profiles, default=str)), str(self.save_dir))
            except Exception:
                log.exception("%s.export failed", type(self.use_case).__name__)
        return profiles
