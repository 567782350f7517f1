"""Structural controls: change the weights (a weight delta, or a LoRA adapter through peft).

The base model is loaded once and shared (by a benchmark's pipelines, by the proctor backend
that owns it), so a structural control never touches it. ``steer`` returns a *shared copy*: a
new module tree whose parameters and buffers are the base model's own tensors (no extra memory)
except the ones the control changes, which are fresh. The pipeline runs that copy; the base
model's outputs stay the same while the pipeline is steered, and after.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, cast

from proctor.core.errors import require
from proctor.models.steering.controls import Control

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


def shared_copy(model: PreTrainedModel, fresh: Iterable[str] = ()) -> PreTrainedModel:
    """A copy of ``model``'s module tree sharing every tensor with it, except the parameters named
    in ``fresh`` (cloned, so they can be changed without changing ``model``)."""
    fresh = set(fresh)
    cloned = {id(p) for name, p in model.named_parameters(remove_duplicate=False) if name in fresh}
    memo: dict[int, torch.Tensor] = {id(p): p for p in model.parameters() if id(p) not in cloned}
    memo.update({id(b): b for b in model.buffers()})
    return copy.deepcopy(model, memo)


class WeightDelta(Control):
    """Add ``strength × delta`` to named parameters (``{parameter name: tensor}``)."""

    kind = "structural"

    def __init__(self, deltas: Mapping[str, torch.Tensor], strength: float = 1.0, name: str | None = None) -> None:
        if not deltas:
            raise ValueError("WeightDelta needs at least one {parameter name: delta}")
        super().__init__(name, deltas=dict(deltas), strength=float(strength))

    def runtime_arguments(self) -> tuple[str, ...]:
        return ()

    def steer(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
        import torch

        parameters = dict(model.named_parameters())
        unknown = sorted(set(self.params["deltas"]) - set(parameters))
        if unknown:
            raise ValueError(f"WeightDelta: the model has no parameter(s) {unknown}")
        for key, delta in self.params["deltas"].items():
            shape = tuple(torch.as_tensor(delta).shape)
            if shape != tuple(parameters[key].shape):
                raise ValueError(
                    f"WeightDelta: delta for {key} has shape {shape}, the weight {tuple(parameters[key].shape)}"
                )
        patched = shared_copy(model, fresh=self.params["deltas"])
        patched_parameters = dict(patched.named_parameters())
        with torch.no_grad():
            for key, delta in self.params["deltas"].items():
                weight = patched_parameters[key]
                weight.add_(self.params["strength"] * torch.as_tensor(delta, dtype=weight.dtype, device=weight.device))
        patched.eval()
        return patched


class LoRA(Control):
    """A LoRA adapter (peft): loaded from ``adapter_path`` or trained briefly on ``train_texts``.

    Training is plain causal-LM fine-tuning for ``steps`` steps (Adam, ``lr``, seeded). ``strength``
    scales the adapter's contribution (0 leaves the model unchanged). Needs ``pip install 'proctor[steer]'``.
    """

    kind = "structural"

    def __init__(
        self,
        train_texts: Sequence[str] = (),
        adapter_path: str | None = None,
        r: int = 8,
        alpha: float = 16.0,
        target_modules: Sequence[str] | None = None,
        steps: int = 20,
        lr: float = 1e-3,
        strength: float = 1.0,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        if not train_texts and adapter_path is None:
            raise ValueError("LoRA needs train_texts or an adapter_path")
        super().__init__(
            name,
            train_texts=list(train_texts),
            adapter_path=adapter_path,
            r=r,
            alpha=alpha,
            target_modules=list(target_modules) if target_modules else None,
            steps=steps,
            lr=lr,
            strength=float(strength),
            seed=seed,
        )
        self._peft_model: torch.nn.Module | None = None  # a peft.PeftModel once steered

    def runtime_arguments(self) -> tuple[str, ...]:
        return ()

    def steer(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> PreTrainedModel:
        peft = require("peft", "steer", "The LoRA control")
        import torch

        # peft injects its layers into the module tree it is given: give it a shared copy.
        target = shared_copy(model)
        grad_flags = {id(p): p.requires_grad for p in model.parameters()}
        try:
            if self.params["adapter_path"]:
                self._peft_model = peft.PeftModel.from_pretrained(target, self.params["adapter_path"])
            else:
                torch.manual_seed(self.params["seed"])
                config = peft.LoraConfig(
                    r=self.params["r"],
                    lora_alpha=self.params["alpha"],
                    lora_dropout=0.0,
                    target_modules=self.params["target_modules"] or ["q_proj", "v_proj"],
                    task_type="CAUSAL_LM",
                )
                self._peft_model = peft.get_peft_model(target, config)
                self._train(tokenizer)
        finally:  # peft freezes the (shared) base parameters: give them their flags back
            for parameter in model.parameters():
                parameter.requires_grad_(grad_flags.get(id(parameter), parameter.requires_grad))
        with torch.no_grad():
            for key, parameter in self._peft_model.named_parameters():
                if "lora_B" in key:
                    parameter.mul_(self.params["strength"])
        self._peft_model.eval()
        return self._peft_model.base_model.model  # the transformers model with the adapter layers in it

    def _train(self, tokenizer: PreTrainedTokenizerBase) -> None:
        import torch

        model = cast("torch.nn.Module", self._peft_model)  # steer() made it just before
        device = next(model.parameters()).device
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(trainable, lr=self.params["lr"])
        texts = self.params["train_texts"]
        model.train()
        for step in range(self.params["steps"]):
            text = texts[step % len(texts)]
            ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids.to(device)
            loss = model(input_ids=ids, labels=ids).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        log.info("LoRA trained %d steps, last loss %.4f", self.params["steps"], loss.item())
        model.eval()

    def cleanup(self) -> None:
        self._peft_model = None  # the adapted copy goes; the base model was never changed
