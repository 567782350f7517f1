"""Malformed inputs of the four seed dialects (probsem, GLM-130B, SEA-HELM, AISteer360 use cases) for
tests/cross_cutting/test_malformed_inputs.py, beyond malformed_cases.py and malformed_cases_more.py: each was
seen to end in a traceback, an internal error, a raw exception, an error after the model loaded, or a run
that completed on nonsense, before its fix."""

from __future__ import annotations

from tests.support.malformed_cases import Case
from tests.support.malformed_cases_more import SEAHELM_ROWS, SEAHELM_RUN, _lines, seahelm

SEEDS: list[Case] = []


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    assert id.startswith("seed-"), id
    SEEDS.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


# --- SEA-HELM --------------------------------------------------------------------------------------------
add(
    "seed-seahelm-prompts-item-text",
    SEAHELM_RUN,
    ["copy", "row 2", "prompts"],
    setup=seahelm(_lines([SEAHELM_ROWS[0], {**SEAHELM_ROWS[1], "prompts": ["Buruk"]}, SEAHELM_ROWS[2]])),
)
