"""Structural controls: change the weights (a weight delta, or a LoRA adapter through peft).

Both patch the shared base model in place when the pipeline is steered and restore it exactly
on ``cleanup`` — the base model is loaded once and every pipeline of a benchmark reuses it.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

from proctor.errors import require
from proctor.usecases.controls import Control

log = logging.getLogger(__name__)


class WeightDelta(Control):
    """Add ``strength × delta`` to named parameters (``{parameter name: tensor}``)."""

    kind = "structural"

    def __init__(self, deltas: Mapping[str, Any], strength: float = 1.0, name: str | None = None) -> None:
        if not deltas:
            raise ValueError("WeightDelta needs at least one {parameter name: delta}")
        super().__init__(name, deltas=dict(deltas), strength=float(strength))
        self._saved: dict[str, Any] = {}
        self._model: Any = None

    def runtime_arguments(self) -> tuple[str, ...]:
        return ()

    def steer(self, model: Any, tokenizer: Any) -> None:
        import torch

        parameters = dict(model.named_parameters())
        unknown = sorted(set(self.params["deltas"]) - set(parameters))
        if unknown:
            raise ValueError(f"WeightDelta: the model has no parameter(s) {unknown}")
        self._model = model
        with torch.no_grad():
            for key, delta in self.params["deltas"].items():
                weight = parameters[key]
                delta = torch.as_tensor(delta, dtype=weight.dtype, device=weight.device)
                if delta.shape != weight.shape:
                    raise ValueError(f"WeightDelta: delta for {key} has shape {tuple(delta.shape)}, the weight {tuple(weight.shape)}")
                self._saved[key] = weight.detach().clone()
                weight.add_(self.params["strength"] * delta)

    def cleanup(self) -> None:
        import torch

        if self._model is None:
            return
        parameters = dict(self._model.named_parameters())
        with torch.no_grad():
            for key, original in self._saved.items():
                parameters[key].copy_(original)
        self._saved.clear()
        self._model = None


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
            name, train_texts=list(train_texts), adapter_path=adapter_path, r=r, alpha=alpha,
            target_modules=list(target_modules) if target_modules else None, steps=steps, lr=lr,
            strength=float(strength), seed=seed,
        )
        self._peft_model: Any = None

    def runtime_arguments(self) -> tuple[str, ...]:
        return ()

    def steer(self, model: Any, tokenizer: Any) -> None:
        peft = require("peft", "steer", "The LoRA control")
        import torch

        self._grad_flags = {k: p.requires_grad for k, p in model.named_parameters()}
        self._base = model
        if self.params["adapter_path"]:
            self._peft_model = peft.PeftModel.from_pretrained(model, self.params["adapter_path"])
        else:
            torch.manual_seed(self.params["seed"])
            config = peft.LoraConfig(
                r=self.params["r"], lora_alpha=self.params["alpha"], lora_dropout=0.0,
                target_modules=self.params["target_modules"] or ["q_proj", "v_proj"], task_type="CAUSAL_LM",
            )
            self._peft_model = peft.get_peft_model(model, config)
            self._train(tokenizer)
        with torch.no_grad():
            for key, parameter in self._peft_model.named_parameters():
                if "lora_B" in key:
                    parameter.mul_(self.params["strength"])
        model.eval()

    def _train(self, tokenizer: Any) -> None:
        import torch

        model = self._peft_model
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
        if self._peft_model is not None:
            self._peft_model.unload()  # puts the original layers back into the base model
            self._peft_model = None
            for key, parameter in self._base.named_parameters():
                parameter.requires_grad_(self._grad_flags.get(key, parameter.requires_grad))
