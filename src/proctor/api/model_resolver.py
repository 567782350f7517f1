"""The one place a run's model is made from what the user gave: a spec string (``hf:DIR``, ``openai:NAME``,
``vllm:DIR``, ...) loaded by the backend registry, or a pool of Ray replicas of it, a steering pipeline turned
into a model, or a model object used as it is."""

from __future__ import annotations

from dataclasses import dataclass

from proctor.engine.run_config import ModelConfig
from proctor.models.base import ConvertsToModel, Model


@dataclass(frozen=True)
class ResolvedModel:
    model: Model
    owned: bool  # made here from a spec: whoever resolved it closes it
    given: str | None  # the spec as the user wrote it (lm-eval's model_name), where there is one


def resolve_model(config: ModelConfig) -> ResolvedModel:
    """The model ``config`` names, loaded (a spec string) or as given."""
    ref = config.model
    # a pool of replicas keeps the spec it was started with
    spec = ref if isinstance(ref, str) else getattr(ref, "spec", None)
    given = spec if isinstance(spec, str) else None
    if isinstance(ref, str):
        cluster = config.cluster_options()
        if cluster is not None:
            from proctor.engine.distributed import DistributedModel

            return ResolvedModel(DistributedModel(ref, config.options, cluster), True, given)
        from proctor.models.registry import load_model

        return ResolvedModel(load_model(ref, **dict(config.options)), True, given)
    if not isinstance(ref, Model) and isinstance(ref, ConvertsToModel):  # a SteeringPipeline
        return ResolvedModel(ref.as_model(), False, given)
    return ResolvedModel(ref, False, given)  # a Model, or a stand-in with its calls (test doubles need not subclass it)
