"""lm-eval's request instances as proctor's three request kinds, answered through the ``Executor`` the engine
hands the handler: ``loglikelihood`` → ``LoglikelihoodRequest``, ``loglikelihood_rolling`` →
``RollingLoglikelihoodRequest``, ``generate_until`` → ``GenerateRequest`` (lm-eval's ``until``,
``max_gen_toks`` defaulting to HFLM's 256, sampling settings; repeats seeded one by one).

Kept apart from ``handler.py`` (building lm-eval's task and scoring it) because it is the one place lm-eval's
requests meet proctor's model calls.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.model_requests import GenerateRequest, LoglikelihoodRequest, RollingLoglikelihoodRequest
from proctor.kinds.capabilities import Executor

if TYPE_CHECKING:
    from lm_eval.api.instance import Instance

    from proctor.dialects.lmeval.catalogue import Leaf

DEFAULT_MAX_GEN_TOKS = 256  # lm-eval's HFLM default


def lmeval_samples(do_sample: object, temperature: float) -> bool:
    """Whether lm-eval 0.4.13 samples (its ``normalize_gen_kwargs``, which its hf and vllm models call): an unset
    ``do_sample`` follows the temperature (``temperature: 0.7`` alone samples); ``do_sample: false`` is greedy at
    any temperature; ``do_sample: true`` at temperature 0 is greedy too (lm-eval only warns)."""
    if do_sample is None:
        return temperature > 0
    return bool(do_sample) and temperature > 0


def proctor_request(instance: Instance, leaf: Leaf) -> Any:
    """The proctor request that answers one lm-eval request instance (its type, arguments and generation kwargs)."""
    kind = instance.request_type
    args = instance.arguments
    if kind == "loglikelihood":
        return LoglikelihoodRequest(context=args[0], continuation=args[1])
    if kind == "loglikelihood_rolling":
        return RollingLoglikelihoodRequest(text=args[0], window=10**9)
    if kind == "generate_until":
        context, kwargs = args[0], dict(args[1] or {})
        until = kwargs.pop("until", None)
        until = [until] if isinstance(until, str) else list(until or [])
        do_sample = kwargs.pop("do_sample", None)
        temperature = float(kwargs.pop("temperature", 0.0) or 0.0)
        sample = lmeval_samples(do_sample, temperature)
        return GenerateRequest(
            prompt=context,
            max_tokens=int(kwargs.pop("max_gen_toks", DEFAULT_MAX_GEN_TOKS)),
            stop=tuple(until),
            temperature=temperature if sample else 0.0,
            top_p=float(kwargs.pop("top_p", 1.0) or 1.0) if sample else 1.0,
        )
    raise TaskDefinitionError(
        f"task '{leaf.name}': request type '{kind}' is not supported", file=leaf.source, field="output_type"
    )


THINKING = "proctor_thinking"  # an instance's attribute: the thinking cut off each of its replies


def answer_instances(instances: list[Instance], n_docs: int, executor: Executor, leaf: Leaf, seed: int = 0) -> None:
    """Every request instance answered through the executor (run store, chunks), grouped by request type and
    each distinct request sent once (``seed``: --seed, the first repeat's sampling seed); the answers appended to
    the instances' ``resps`` as lm-eval's own model classes would, and progress reported per document (``n_docs``
    in all)."""
    model, progress = executor.model, executor.progress
    by_type: dict[str, list] = defaultdict(list)
    for instance in instances:
        by_type[instance.request_type].append(instance)
    total = sum(len(v) * (v[0].repeats if v else 1) for v in by_type.values()) or 1
    reported, done = 0, 0

    def step(n: int) -> None:  # request progress -> sample progress (the runner counts samples)
        nonlocal reported, done
        done += n
        target = n_docs * done // total
        if target > reported:
            progress(target - reported)
            reported = target

    for kind, group in by_type.items():
        if kind != "generate_until" and not getattr(model, "supports_loglikelihood", True):
            raise ProctorError(f"task '{leaf.name}' needs log-likelihoods, which model '{model.name}' cannot score")
        proctor_type = {
            "loglikelihood": "loglikelihood",
            "loglikelihood_rolling": "rolling_loglikelihood",
            "generate_until": "generate",
        }[kind]
        flat = []
        for instance in group:
            request = proctor_request(instance, leaf)
            if kind == "generate_until" and (instance.repeats > 1 or seed):  # --seed S: repeats draw S, S+1, ...
                flat += [dataclasses.replace(request, seed=seed + k) for k in range(instance.repeats)]
            else:
                flat += [request] * instance.repeats
        unique = list(dict.fromkeys(flat))
        results = executor.run(proctor_type, unique, step)
        answer = dict(zip(unique, results))
        position = 0
        for instance in group:
            for _ in range(instance.repeats):
                result = answer[flat[position]]
                position += 1
                if kind == "loglikelihood":
                    instance.resps.append((float(result.logprob), bool(result.is_greedy)))
                elif kind == "loglikelihood_rolling":
                    instance.resps.append(float(result.logprob))
                else:
                    instance.resps.append(result.text)
                    thinking = getattr(result, "thinking", None)  # --think-end-token: cut off before lm-eval sees it
                    if thinking is not None:
                        instance.__dict__.setdefault(THINKING, []).append(thinking)
    if reported < n_docs:
        progress(n_docs - reported)
