"""``choices.gold-form`` skips a form when one search of the probed choices, joined, finds no choice with it
(``form_rules._MAY_HAVE``, for speed: issue 45); the search must find every choice that has the form, or the rule
would miss an odd one."""

from __future__ import annotations

import random

import pytest

from proctor.audit.form_rules import _MAY_HAVE, FORMS

pytestmark = pytest.mark.fast

PARTS = ["a", "Paris", " ", "\t", "\r", "\n", "\x1c", "\xa0", "\u3000", ".", "!", ";", ":", ",", "?", "\x7f", "\x01"]


@pytest.mark.parametrize("seed", range(200))
def test_the_search_finds_each_choice_with_the_form(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        choices = ["".join(rng.choice(PARTS) for _ in range(rng.randrange(4))) for _ in range(rng.randrange(1, 5))]
        joined = "\x00".join(choices)
        for (form, has), may_have in zip(FORMS, _MAY_HAVE):
            for choice in choices:
                if has(choice):
                    assert may_have.search(joined) is not None, (form, choices)
                alone = may_have.search(choice) is not None
                assert alone == has(choice), (form, choice)  # one choice alone: the search is the form
