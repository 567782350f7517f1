"""State control: activation addition (steering vectors) through forward hooks.

The vector for each chosen layer is mean(h⁺) − mean(h⁻): the layer's output at the last token of
each positive prompt, minus the same for the negative prompts. While the pipeline generates, a
forward hook adds ``strength × vector`` to that layer's output at every position. Hooks are only
in place during generation, so the shared base model is never left steered.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TypeAlias, cast

from proctor.models.steering.controls import Control, RuntimeArguments

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

# What a decoder block returns: its hidden states, alone or first in a tuple.
LayerOutput: TypeAlias = "torch.Tensor | tuple[torch.Tensor, ...]"
# A forward hook (torch's ``register_forward_hook``): (module, its inputs, its output) -> replacement output or None
ForwardHook = Callable[["torch.nn.Module", "tuple[object, ...]", LayerOutput], "LayerOutput | None"]


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The ModuleList of transformer blocks (the longest ``layers`` / ``h`` list in the model)."""
    import torch

    best = None
    for name, module in model.named_modules():
        stack = isinstance(module, torch.nn.ModuleList) and name.rsplit(".", 1)[-1] in ("layers", "h", "blocks")
        if stack and (best is None or len(module) > len(best)):
            best = module
    if best is None:
        raise ValueError(f"cannot find the decoder layers of {type(model).__name__}")
    return best


def _hidden(output: LayerOutput) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


class StateControl(Control):
    """A control that hooks the forward pass of the pipeline's model while it runs."""

    kind = "state"

    def active(self, rows: list[RuntimeArguments]) -> contextlib.AbstractContextManager[None]:
        """Hooks on for one batch whose rows have these runtime arguments."""
        raise NotImplementedError


class ActivationAddition(StateControl):
    """Add a contrastive steering vector to the residual stream at chosen layers.

    ``positive`` / ``negative``: prompts (texts) whose activations define the direction, or give a
    ready ``vector`` (one tensor for all layers, or {layer: tensor}). ``layers``: indices of the
    decoder blocks (negative counts from the end). Runtime argument: ``strength`` (per example).
    """

    def __init__(
        self,
        layers: Sequence[int] = (-1,),
        strength: float = 1.0,
        positive: Sequence[str] = (),
        negative: Sequence[str] = (),
        vector: torch.Tensor | dict[int, torch.Tensor] | None = None,
        normalize: bool = False,
        name: str | None = None,
    ) -> None:
        if vector is None and (not positive or not negative):
            raise ValueError("ActivationAddition needs positive and negative prompts, or a vector")
        super().__init__(
            name,
            layers=list(layers),
            strength=float(strength),
            positive=list(positive),
            negative=list(negative),
            vector=vector,
            normalize=normalize,
        )
        self.vectors: dict[int, torch.Tensor] = {}
        self._layers: torch.nn.ModuleList | None = None

    def runtime_arguments(self) -> tuple[str, ...]:
        return ("strength",)

    def steer(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
        import torch

        blocks = decoder_layers(model)
        indices = [i % len(blocks) for i in self.params["layers"]]
        self._layers = blocks
        given = self.params["vector"]
        if given is not None:
            for i, raw in zip(indices, self.params["layers"]):
                v = given.get(raw, given.get(i)) if isinstance(given, dict) else given
                self.vectors[i] = torch.as_tensor(v, dtype=torch.float32)
        else:
            pos = self._mean_states(model, tokenizer, blocks, indices, self.params["positive"])
            neg = self._mean_states(model, tokenizer, blocks, indices, self.params["negative"])
            self.vectors = {i: pos[i] - neg[i] for i in indices}
        if self.params["normalize"]:
            self.vectors = {i: v / v.norm().clamp(min=1e-8) for i, v in self.vectors.items()}

    @staticmethod
    def _mean_states(
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        blocks: torch.nn.ModuleList,
        indices: list[int],
        prompts: Sequence[str],
    ) -> dict[int, torch.Tensor]:
        import torch

        sums: dict[int, torch.Tensor] = {}
        captured: dict[int, torch.Tensor] = {}

        def capture(i: int) -> ForwardHook:
            def hook(module: torch.nn.Module, args: tuple[object, ...], output: LayerOutput) -> None:
                captured[i] = _hidden(output)[0, -1].detach().float()

            return hook

        handles = [blocks[i].register_forward_hook(capture(i)) for i in indices]
        device = next(model.parameters()).device
        try:
            with torch.inference_mode():
                for text in prompts:
                    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids.to(device)
                    model(input_ids=ids)
                    for i in indices:
                        sums[i] = captured[i] if i not in sums else sums[i] + captured[i]
        finally:
            for handle in handles:
                handle.remove()
        return {i: sums[i] / len(prompts) for i in indices}

    @contextlib.contextmanager
    def active(self, rows: list[RuntimeArguments]) -> Iterator[None]:
        """Hooks on for one batch; row r is steered with its own strength."""
        import torch

        if not self.vectors:
            raise RuntimeError(f"control '{self.name}' was not steered: call pipeline.steer() first")
        strengths = [float(row.get("strength", self.params["strength"])) for row in rows]
        if all(s == 0.0 for s in strengths):
            yield None
            return
        handles = []

        def add(vector: torch.Tensor) -> ForwardHook:
            def hook(module: torch.nn.Module, args: tuple[object, ...], output: LayerOutput) -> LayerOutput:
                hidden = _hidden(output)
                scale = torch.tensor(strengths, dtype=hidden.dtype, device=hidden.device)
                scale = scale.repeat_interleave(hidden.shape[0] // len(strengths))[:, None, None]
                steered = hidden + scale * vector.to(device=hidden.device, dtype=hidden.dtype)
                return (steered, *output[1:]) if isinstance(output, tuple) else steered

            return hook

        try:
            for i, vector in self.vectors.items():
                layers = cast("torch.nn.ModuleList", self._layers)  # set by steer(), as the vectors are
                handles.append(layers[i].register_forward_hook(add(vector)))
            yield None
        finally:
            for handle in handles:
                handle.remove()
