"""``SteeringPipeline``: a base model with controls of the four kinds, applied in a fixed order.

Input controls rewrite each prompt (as chat messages) before rendering; structural controls build
a patched copy of the base model (sharing its unchanged tensors; the base model itself is never
changed) and state controls prepare their vectors once in ``steer()`` (structural first, so state
vectors are measured on the patched model); while generating, state controls hook the forward
pass of the pipeline's model and output controls constrain decoding. Every control can take
per-example arguments (``runtime_kwargs``, one dict ``{control name: {kwarg: value}}`` per prompt).
``as_model()`` makes the pipeline a proctor ``Model`` (``models/steering/steered_model.py``), so ordinary
tasks run on it.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

from proctor.models.steering.controls import (
    Control,
    InputControl,
    LogitsProcessor,
    Messages,
    OutputControl,
    RuntimeArguments,
    describe,
)
from proctor.models.steering.generation import Generated, GenKwargs, Prompt, generate_rendered, loaded_backend, render
from proctor.models.steering.state import StateControl

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from proctor.models.hf.model import HFModel
    from proctor.models.steering.steered_model import SteeredModel, StoreExecutor

# Per-example arguments of one prompt: {control name: that control's arguments}.
RuntimeRow = Mapping[str, RuntimeArguments]

_ORDER = {"input": 0, "structural": 1, "state": 2, "output": 3}


class SteeringPipeline:
    """Wrap ``model`` (a proctor ``HFModel``, a ``--model`` spec string, or a transformers model
    with ``tokenizer``) with ``controls``. Use as a context manager, or call ``steer()`` and
    ``cleanup()``. ``base_model`` is the shared transformers model (never changed); ``model`` is
    what the pipeline runs: the base model, or a structural control's patched copy of it.
    ``executor`` (a ``proctor.runs.executor.ModelExecutor`` with a run store, as a use case run on
    ``as_model()`` is given): requests without per-example arguments run as a proctor model through it."""

    def __init__(
        self,
        model: HFModel | str | PreTrainedModel,
        controls: Sequence[Control] = (),
        tokenizer: PreTrainedTokenizerBase | None = None,
        *,
        name: str | None = None,
        executor: StoreExecutor | None = None,
    ) -> None:
        if isinstance(model, str):
            from proctor.models.registry import load_model

            model = load_model(model)
        self.base: HFModel | PreTrainedModel = model
        if hasattr(model, "model") and hasattr(model, "tokenizer") and tokenizer is None:
            self.base_model, self.tokenizer = model.model, model.tokenizer
        else:
            if tokenizer is None:
                raise ValueError("SteeringPipeline needs the tokenizer of a plain transformers model")
            self.base_model, self.tokenizer = model, tokenizer
        self.model = self.base_model
        names = [c.name for c in controls]
        for control in controls:
            if not isinstance(control, Control):
                raise TypeError(f"pipeline controls must be Control instances, got {type(control).__name__}")
        if len(set(names)) != len(names):
            raise ValueError(f"two controls share a name in the pipeline: {names}; pass name= to tell them apart")
        self.controls = sorted(controls, key=lambda c: _ORDER[c.kind])
        self.name = name or ("+".join(names) if names else "base")
        self.steered = False
        self.executor = executor

    # ------------------------------------------------------------------ lifecycle
    @property
    def supports_batching(self) -> bool:
        return all(c.supports_batching for c in self.controls)

    def steer(self) -> "SteeringPipeline":
        if not self.steered:
            if self.tokenizer.pad_token_id is None:
                self.tokenizer.pad_token = self.tokenizer.eos_token
            done = []
            model = self.base_model
            try:
                for control in self.controls:
                    patched = control.steer(model, self.tokenizer)
                    if control.kind == "structural" and patched is not None:
                        model = patched
                    done.append(control)
            except BaseException:
                for control in reversed(done):
                    control.cleanup()
                raise
            self.model = model
            self.steered = True
        return self

    def cleanup(self) -> None:
        for control in reversed(self.controls):
            control.cleanup()
        self.model = self.base_model
        self.steered = False

    def __enter__(self) -> "SteeringPipeline":
        return self.steer()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def config(self) -> dict[str, object]:
        base = getattr(self.base, "fingerprint", None)
        return {
            "base": base
            if isinstance(base, dict)
            else describe(getattr(self.base_model, "name_or_path", type(self.base_model).__name__)),
            "controls": [c.config() for c in self.controls],
        }

    def as_model(self, owns: bool = False) -> SteeredModel:
        """This pipeline as a proctor ``Model``: ordinary tasks (YAML, ``proctor.evaluate``) run on it."""
        from proctor.models.steering.steered_model import SteeredModel

        return SteeredModel(self, owns=owns)

    @contextlib.contextmanager
    def forward_steered(self, runtime: RuntimeRow | None = None) -> Iterator[PreTrainedModel]:
        """Every control applied to whatever runs the pipeline's model inside the block: state hooks
        on its layers, and output controls as a hook on its output layer (so log-likelihoods see
        them too), with one set of runtime arguments (default: each control's own settings) for
        every sequence. Yields the model."""
        if not self.steered:
            self.steer()
        runtime = dict(runtime or {})
        self._check([runtime])
        with contextlib.ExitStack() as stack:
            for control in self.controls:
                row = dict(runtime.get(control.name, {}))
                if isinstance(control, StateControl):
                    stack.enter_context(control.active([row]))
                elif isinstance(control, OutputControl):
                    processors = control.logits_processors(self.tokenizer, [row])
                    if processors:
                        head = self.model.get_output_embeddings()
                        handle = head.register_forward_hook(_processed_logits(processors))
                        stack.callback(handle.remove)
            yield self.model

    # ------------------------------------------------------------------ generation
    def _check(self, runtime_kwargs: Sequence[RuntimeRow]) -> None:
        by_name = {c.name: c for c in self.controls}
        for index, row in enumerate(runtime_kwargs):
            for control_name, kwargs in row.items():
                if control_name not in by_name:
                    raise ValueError(
                        f"runtime arguments for '{control_name}' (prompt {index}), but the "
                        f"pipeline's controls are {sorted(by_name)}"
                    )
                by_name[control_name].check_runtime(kwargs)

    def adapt(self, prompt: Prompt, runtime: RuntimeRow | None = None) -> Messages:
        """The prompt as chat messages after the input controls."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
        for control in self.controls:
            if isinstance(control, InputControl):
                messages = control.transform(messages, **(runtime or {}).get(control.name, {}))
        return messages

    def generate_prompts(
        self,
        prompts: Sequence[Prompt],
        runtime_kwargs: Sequence[RuntimeRow] | None = None,
        gen_kwargs: GenKwargs | None = None,
        batch_size: int = 8,
        use_chat: bool | None = None,
    ) -> list[Generated]:
        """Steered generations, in prompt order; ``runtime_kwargs[i]`` belongs to ``prompts[i]``."""
        if not self.steered:
            self.steer()
        runtime = list(runtime_kwargs) if runtime_kwargs is not None else [{} for _ in prompts]
        if len(runtime) != len(prompts):
            raise ValueError(f"{len(runtime)} runtime argument sets for {len(prompts)} prompts")
        self._check(runtime)
        rendered = []
        for prompt, row in zip(prompts, runtime):
            adapted = self.adapt(prompt, row) if any(isinstance(c, InputControl) for c in self.controls) else prompt
            if isinstance(prompt, str) and adapted == [{"role": "user", "content": prompt}]:
                adapted = prompt
            rendered.append(render(adapted, self.tokenizer, use_chat))

        # One steered setting per distinct runtime row (state hooks and output controls apply to
        # every sequence alike, as in forward_steered); each group decodes on proctor's HF backend.
        groups: dict[str, list[int]] = {}
        for index, row in enumerate(runtime):
            groups.setdefault(json.dumps(row, sort_keys=True, default=repr), []).append(index)
        size = batch_size if self.supports_batching else 1
        out: list[Generated | None] = [None] * len(prompts)
        for indices in groups.values():
            with self.forward_steered(runtime[indices[0]]) as model:
                backend = loaded_backend(model, self.tokenizer, size, self.base)
                for i, result in zip(indices, generate_rendered(backend, [rendered[i] for i in indices], gen_kwargs)):
                    out[i] = result
        return out  # type: ignore[return-value]

    def generate(
        self,
        prompt: Prompt,
        runtime_kwargs: RuntimeRow | None = None,
        **gen_kwargs: object,
    ) -> str:
        """One steered reply (convenience)."""
        return self.generate_prompts([prompt], [dict(runtime_kwargs or {})], gen_kwargs)[0].text


def _processed_logits(
    processors: list[LogitsProcessor],
) -> Callable[[torch.nn.Module, tuple[object, ...], torch.Tensor], torch.Tensor]:
    """A forward hook on the output layer that passes its logits (any leading shape) through ``processors``."""

    def hook(module: torch.nn.Module, args: tuple[object, ...], output: torch.Tensor) -> torch.Tensor:
        flat = output.reshape(-1, output.shape[-1])
        for process in processors:
            flat = process(None, flat)
        return flat.reshape(output.shape)

    return hook
