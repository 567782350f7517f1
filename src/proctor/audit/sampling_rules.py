"""``generation.sampling``: generation settings that make a score one random draw (a temperature above 0, lm-eval's
``do_sample``, with one epoch or repeat), or that seem to ask for sampling and do nothing (top_p under greedy
decoding). The rule is registered in ``generation_rules.py``, with the other generation rules."""

from __future__ import annotations

from typing import Iterator

from proctor.audit.setting_rules import lmeval_config
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit


def _generated(subject: AuditSubject) -> bool:
    """A templated task's generated rows (its own settings are the task file's)."""
    return subject.templated and subject.spec.kind == "generate" and any(s.references for s in subject.samples)


def one_sample_of_chance(subject: AuditSubject) -> Iterator[Hit]:
    generation = subject.spec.generation
    if _generated(subject) and generation.temperature > 0 and subject.epochs == 1:
        yield subject.at_line(
            "generation",
            f"temperature is {generation.temperature} with one epoch: each row's score is one random draw, so the "
            "number moves with the seed; --epochs K averages K draws (and says how much that narrows it)",
            "generation.temperature",
        )
    yield from _lmeval_sampling(subject)
    yield from _sampling_under_greedy(subject)


def _sampling_under_greedy(subject: AuditSubject) -> Iterator[Hit]:
    """top_p or seed set while temperature is 0: greedy decoding reads neither, so the run is not the nucleus
    sampling (or the seeded draw) the file seems to ask for."""
    generation = subject.spec.generation
    if not _generated(subject) or generation.temperature > 0 or generation.top_p >= 1.0:
        return  # a seed alone is a habit of reproducible files, and harmless
    seeded = f" and seed {generation.seed}" if "seed" in generation.model_fields_set else ""
    yield subject.at_line(
        "generation",
        f"top_p {generation.top_p}{seeded} set while temperature is 0: greedy decoding reads neither, so every answer "
        "is the greedy one, not the sampled one the settings seem to ask for (set a temperature above 0, or drop "
        "them)",
        "generation.top_p",
    )


def _lmeval_sampling(subject: AuditSubject) -> Iterator[Hit]:
    """lm-eval's ``generation_kwargs`` that sample (as lm-eval 0.4.13's ``normalize_gen_kwargs`` reads them: a
    temperature above 0 unless ``do_sample: false``) with one repeat: each document's score is one draw, as a native
    task's temperature with one epoch. And ``do_sample: true`` at temperature 0 (or none): lm-eval decodes greedily
    then, with only a log line, so the file seems to ask for sampling and gets the greedy answers."""
    config = lmeval_config(subject)
    kwargs = getattr(config, "generation_kwargs", None) if subject.spec.kind == "generate" else None
    if not isinstance(kwargs, dict):
        return
    do_sample, temperature = kwargs.get("do_sample"), kwargs.get("temperature", 0.0)
    if not isinstance(temperature, (int, float)) or isinstance(temperature, bool):
        return
    if do_sample is True and temperature <= 0:
        yield subject.at_line(
            "generation_kwargs",
            f"do_sample is true with temperature {temperature}: lm-eval decodes greedily at temperature 0 (it only "
            "logs 'For non-greedy sampling, set temperature > 0.0'), and so does proctor: the answers are the greedy "
            "ones; give a temperature above 0 to sample, or do_sample: false",
            "generation_kwargs.temperature" if "temperature" in kwargs else "generation_kwargs.do_sample",
        )
        return
    repeats = getattr(config, "repeats", 1) or 1
    if temperature > 0 and do_sample is not False and repeats == 1 and subject.epochs == 1:
        switch = "do_sample is true" if do_sample is True else "do_sample is unset, which lm-eval reads as true"
        yield subject.at_line(
            "generation_kwargs",
            f"{switch} (temperature {temperature}) with one repeat: each document's score is one random draw, so "
            "the number moves with the seed; repeats: K (with a filter that votes or averages) or --epochs K averages "
            "K draws, and do_sample: false reads the greedy answer",
            "generation_kwargs.do_sample" if do_sample is True else "generation_kwargs.temperature",
        )


def epochs_under_greedy(subject: AuditSubject) -> Iterator[Hit]:
    """``--epochs K`` with greedy decoding: greedy requests get no per-epoch seed (engine/epochs.seeded), so every
    epoch is the one stored answer; the K "draws" are K copies, pass@K is pass@1 and the epochs' spread is 0."""
    if not _generated(subject) or subject.epochs <= 1 or subject.spec.generation.temperature > 0:
        return
    k = subject.epochs
    yield subject.at_line(
        "generation",
        f"--epochs {k} with greedy decoding (temperature 0): every epoch gets the same answer, so the {k} epochs are "
        f"{k} copies of one: pass@K is pass@1 and the spread across epochs is 0 (set a temperature above 0 to draw "
        f"{k} answers, or drop --epochs)",
        "generation.temperature",
    )
