"""AISteer360's control classes (``aisteer360.algorithms.*``) as proctor sees them.

``FewShot`` runs: AISteer360's arguments and runtime arguments, the same system message of labelled
examples, as a proctor input control. Every other AISteer360 control is listed in ``CONTROLS`` with
the reason proctor cannot run it; its name imports (so files that import it load), and building
it raises a ``ProctorError`` that names the control, why, and proctor's nearest control if any.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from typing import Any, Mapping, Sequence, TypeVar

from proctor.core.errors import ProctorError
from proctor.models.steering.controls import InputControl, Messages, RuntimeArguments

T = TypeVar("T")

_PROMPT = "needs a proposer model and an optimisation loop over prompts, which proctor does not run"
_DECODE = (
    "is a decoding algorithm of its own; proctor's pipelines decode with transformers' "
    "generate and logits processors only"
)
_STATE = "needs its own activation / attention hooks, which proctor does not implement"
_TRL = "trains the model with the 'trl' library; proctor evaluates models and does not train them with trl"

# AISteer360 package (under aisteer360.algorithms.) -> (control, args class, why proctor cannot run it)
CONTROLS: dict[str, tuple[str, str, str]] = {
    "input_control.cpo": ("CPO", "CPOArgs", _PROMPT),
    "input_control.few_shot": ("FewShot", "FewShotArgs", ""),
    "input_control.gepa": ("GEPA", "GEPAArgs", _PROMPT),
    "input_control.prewrite": (
        "PRewrite",
        "PRewriteArgs",
        "trains a prompt rewriter with reinforcement learning (trl's GRPO)",
    ),
    "output_control.best_of_n": ("BestOfN", "BestOfNArgs", _DECODE),
    "output_control.budget_forcing": ("BudgetForcing", "BudgetForcingArgs", _DECODE),
    "output_control.contrastive_decoding": ("ContrastiveDecoding", "ContrastiveDecodingArgs", _DECODE),
    "output_control.contrastive_guidance": ("ContrastiveGuidance", "ContrastiveGuidanceArgs", _DECODE),
    "output_control.deal": ("DeAL", "DeALArgs", _DECODE),
    "output_control.dexperts": ("DExperts", "DExpertsArgs", _DECODE),
    "output_control.phased_decoding": ("PhasedDecoding", "PhasedDecodingArgs", _DECODE),
    "output_control.rad": ("RAD", "RADArgs", _DECODE),
    "output_control.routed_decoding": ("RoutedDecoding", "RoutedDecodingArgs", _DECODE),
    "output_control.sasa": ("SASA", "SASAArgs", _DECODE),
    "output_control.search_decoding": ("SearchDecoding", "SearchDecodingArgs", _DECODE),
    "output_control.stopping_rules": ("StoppingRules", "StoppingRulesArgs", _DECODE),
    "output_control.thinking_intervention": ("ThinkingIntervention", "ThinkingInterventionArgs", _DECODE),
    "output_control.value_guidance": ("ValueGuidance", "ValueGuidanceArgs", _DECODE),
    "state_control.act_add": (
        "ActAdd",
        "ActAddArgs",
        _STATE + " (ActAdd adds a positional prompt-pair vector at one layer)",
    ),
    "state_control.activation_adapter": ("ActivationAdapter", "ActivationAdapterArgs", _STATE),
    "state_control.angular_steering": ("AngularSteering", "AngularSteeringArgs", _STATE),
    "state_control.caa": ("CAA", "CAAArgs", _STATE + " (CAA averages answer-token differences over many pairs)"),
    "state_control.cast": ("CAST", "CASTArgs", _STATE + " (CAST gates steering on a condition probe)"),
    "state_control.directional_ablation": ("DirectionalAblation", "DirectionalAblationArgs", _STATE),
    "state_control.iti": ("ITI", "ITIArgs", _STATE + " (ITI shifts attention heads found by probes)"),
    "state_control.pasta": ("PASTA", "PASTAArgs", _STATE + " (PASTA rescales attention to marked substrings)"),
    "structural_control.wrappers.mergekit": (
        "MergeKit",
        "MergeKitArgs",
        "merges models with the 'mergekit' library, which proctor does not wrap",
    ),
    "structural_control.wrappers.trl.apotrainer": ("APO", "APOArgs", _TRL),
    "structural_control.wrappers.trl.dpotrainer": ("DPO", "DPOArgs", _TRL),
    "structural_control.wrappers.trl.grpotrainer": ("GRPO", "GRPOArgs", _TRL),
    "structural_control.wrappers.trl.ppotrainer": ("PPO", "PPOArgs", _TRL),
    "structural_control.wrappers.trl.sfttrainer": ("SFT", "SFTArgs", _TRL),
}

NEAREST = {
    "ActAdd": "ActivationAddition",
    "CAA": "ActivationAddition",
    "SFT": "LoRA (train_texts=...)",
    "StoppingRules": "gen_kwargs 'stop'",
    "DExperts": "TokenBias",
    "ThinkingIntervention": "PromptRewrite",
}


def unsupported(name: str, reason: str) -> type:
    """A class named ``name`` whose construction raises a ProctorError saying why proctor cannot run it."""

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        nearest = f"; proctor's nearest control is {NEAREST[name]} (see docs/aisteer.md)" if name in NEAREST else ""
        raise ProctorError(f"AISteer360's {name} cannot run in proctor: it {reason}{nearest}")

    return type(
        name, (), {"__init__": __init__, "__doc__": f"AISteer360's {name}: not runnable in proctor ({reason})."}
    )


# ---------------------------------------------------------------------------------------- FewShot
@dataclasses.dataclass
class FewShotArgs:
    """AISteer360's ``FewShotArgs`` (a pool given needs its ``k``)."""

    selector: Any = None
    formatter: Any = None
    directive: str | None = None
    positive_example_pool: list[dict] | None = None
    negative_example_pool: list[dict] | None = None
    k_positive: int | None = None
    k_negative: int | None = None

    def __post_init__(self) -> None:
        if self.positive_example_pool and self.k_positive is None:
            raise ValueError("k_positive must be specified when positive_example_pool is provided.")
        if self.negative_example_pool and self.k_negative is None:
            raise ValueError("k_negative must be specified when negative_example_pool is provided.")


class RandomSelector:
    """``k`` items uniformly without replacement (all of them, shuffled, when ``k`` >= their number)."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def select(
        self,
        items: Sequence[T],
        query: object = None,
        k: int = 1,
        context: dict[str, object] | None = None,
        rng: random.Random | None = None,
    ) -> list[T]:
        rng = rng or random.Random(self.seed)
        pool = list(items)
        if k >= len(pool):
            rng.shuffle(pool)
            return pool
        return rng.sample(pool, k)


class FewShotBlockFormatter:
    """The system message: the directive, then each example under its header as ``Title Key: value`` lines."""

    DEFAULT_POSITIVE_HEADER = "### Positive example (behavior to follow)"
    DEFAULT_NEGATIVE_HEADER = "### Negative example (behavior to avoid)"

    def __init__(
        self, positive_header: str = DEFAULT_POSITIVE_HEADER, negative_header: str = DEFAULT_NEGATIVE_HEADER
    ) -> None:
        self.positive_header, self.negative_header = positive_header, negative_header

    def block(self, directive: str, examples: Sequence[Mapping[str, object]]) -> str:
        parts = [directive] if directive else []
        for example in examples:
            header = self.negative_header if example.get("_polarity") == "negative" else self.positive_header
            lines = [
                f"{key.replace('_', ' ').title()}: {value}" for key, value in example.items() if not key.startswith("_")
            ]
            parts.append("\n".join([header, *lines]))
        return "\n\n".join(parts)


class FewShot(InputControl):
    """AISteer360's ``FewShot``: a system message with a directive and labelled positive / negative
    examples, put first (after an existing system message). Pools are sampled per prompt (``k_positive``,
    ``k_negative``); runtime arguments ``positive_examples`` / ``negative_examples`` replace the pools.
    Samples are seeded by ``seed`` and the prompt, so a prompt always gets the same examples."""

    def __init__(self, _init_data: Any = None, *, seed: int = 0, name: str | None = None, **kwargs: Any) -> None:
        if isinstance(_init_data, FewShotArgs):
            args = _init_data
        else:
            try:
                args = FewShotArgs(**{**dict(_init_data or {}), **kwargs})
            except TypeError as exc:
                raise ValueError(f"FewShot: {exc}") from None
        selector = args.selector
        if selector not in (None, "random") and not callable(getattr(selector, "select", None)):
            raise ValueError(
                f"FewShot selector must be None, 'random' or an object with select(items, query, k); got {selector!r}"
            )
        formatter = args.formatter or FewShotBlockFormatter()
        if not callable(getattr(formatter, "block", None)):
            raise ProctorError(
                "FewShot: proctor renders examples with its FewShotBlockFormatter (headers may be changed); "
                f"{type(formatter).__name__} is an AISteer360 formatter proctor does not run"
            )
        self.args, self.selector, self.formatter = args, selector, formatter
        params = {f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
        # stable descriptions (the configuration id is a digest of params)
        params["selector"] = (
            selector
            if selector in (None, "random")
            else (
                {"RandomSelector": selector.seed}
                if isinstance(selector, RandomSelector)
                else type(selector).__qualname__
            )
        )
        params["formatter"] = (
            {"positive_header": formatter.positive_header, "negative_header": formatter.negative_header}
            if isinstance(formatter, FewShotBlockFormatter)
            else type(formatter).__qualname__
        )
        super().__init__(name or "FewShot", **params, seed=seed)

    def runtime_arguments(self) -> tuple[str, ...]:
        return ("positive_examples", "negative_examples")

    def _draw(self, pool: Sequence[dict] | None, k: int | None, polarity: str, query: str) -> list[dict]:
        if not pool or not k or k <= 0:
            return []
        selector = self.selector
        digest = hashlib.sha256(f"{self.params['seed']}\0{polarity}\0{query}".encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))
        if isinstance(selector, RandomSelector) or selector in (None, "random"):
            chosen = (selector if isinstance(selector, RandomSelector) else RandomSelector()).select(
                pool, query=query, k=k, rng=rng
            )
        else:
            chosen = selector.select(list(pool), query=query, k=k)
        return [{**example, "_polarity": polarity} for example in chosen]

    def examples(self, messages: Messages, runtime: RuntimeArguments) -> list[dict]:
        if "positive_examples" in runtime or "negative_examples" in runtime:
            return [{**e, "_polarity": "positive"} for e in runtime.get("positive_examples", [])] + [
                {**e, "_polarity": "negative"} for e in runtime.get("negative_examples", [])
            ]
        query = "\n".join(str(m.get("content", "")) for m in messages)
        return self._draw(
            self.params["positive_example_pool"], self.params["k_positive"], "positive", query
        ) + self._draw(self.params["negative_example_pool"], self.params["k_negative"], "negative", query)

    def transform(self, messages: Messages, **runtime: object) -> Messages:
        block = self.formatter.block(self.params["directive"] or "", self.examples(messages, runtime))
        if not block:
            return messages
        at = 1 if messages and messages[0].get("role") == "system" else 0
        return (
            [dict(m) for m in messages[:at]] + [{"role": "system", "content": block}] + [dict(m) for m in messages[at:]]
        )


# every other AISteer360 control and its Args class: importable, not buildable
for _control, _args, _reason in CONTROLS.values():
    if _control != "FewShot":
        globals()[_control] = unsupported(_control, _reason)
        globals()[_args] = unsupported(_args, _reason)
EPRSelector = unsupported(
    "EPRSelector", "trains a dense retriever of examples with a scoring model, which proctor does not run"
)
