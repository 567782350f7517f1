"""The audit's shared columns (``audit/columns.py``) and the template's own text (``audit/fixed_text.py``) are
read in whole columns and joined texts for speed (issue 45); what they give is what the plain per-row
definitions here give, on awkward rows: chat prompts, absent texts, unscored and perplexity rows, prompts that
hold the row separator or share lines at either end."""

from __future__ import annotations

import os
import random

import pytest

from proctor.audit.columns import Columns
from proctor.audit.fixed_text import fixed_text
from proctor.data.sources import Sample
from proctor.prompts.builder import PreparedSample, Prompt


def _plain_fixed_text(texts: list[str]) -> tuple[str, str]:
    """The definition: the common prefix of all texts cut back to a line end; the longest of the first text's
    line ends that every text ends with."""
    if len(texts) < 2:
        return "", ""
    common = os.path.commonprefix(texts)
    prefix = common[: common.rfind("\n") + 1]
    ends = [texts[0][i:] for i, c in enumerate(texts[0]) if c == "\n"]
    suffix = next((end for end in ends if all(t.endswith(end) for t in texts)), "")
    return prefix, suffix


LINES = ["Answer the question.", "Q:", "A:", "Options: yes, no", "", " ", "\x01", "yes", "Q: what?"]


def _texts(rng: random.Random) -> list[str]:
    head = "\n".join(rng.choice(LINES) for _ in range(rng.randrange(3)))
    tail = "\n".join(rng.choice(LINES) for _ in range(rng.randrange(3)))
    texts = []
    for _ in range(rng.randrange(1, 9)):
        own = "\n".join(rng.choice(LINES) for _ in range(rng.randrange(3)))
        texts.append("\n".join(part for part in (head, own, tail) if rng.random() < 0.9))
    return texts


@pytest.mark.parametrize("seed", range(400))
def test_fixed_text_is_the_common_whole_lines_at_either_end(seed):
    texts = _texts(random.Random(seed))
    expected = _plain_fixed_text(texts)
    assert fixed_text(texts) == expected


@pytest.mark.parametrize("seed", range(60))
def test_fixed_text_of_many_texts_one_of_which_differs_after_the_first_ones(seed):
    """One odd text far down; a long template (more line starts than are tried one by one) too."""
    rng = random.Random(seed)
    head = "Choose.\nContext: x\n" + "".join(f"Example {k}\n" for k in range(rng.choice([0, 12])))
    tail = "\nOptions: yes, no\nA:"
    texts = [f"{head}Q: {i}{tail}" for i in range(rng.randrange(70, 200))]
    odd = rng.randrange(66, len(texts))
    texts[odd] = rng.choice(
        [f"Q: {odd}{tail}", f"Choose.\nQ: {odd}{tail}", f"{head}Q: {odd}\nA:", f"{head}Q: {odd}", texts[odd] + "\n"]
    )
    expected = _plain_fixed_text(texts)
    assert fixed_text(texts) == expected
    assert expected != (head, tail)


def test_fixed_text_of_prompts_around_a_row_part():
    texts = [f"Choose.\nQ: {q}\nOptions: yes, no\nA:" for q in ("one", "two", "three")]
    assert fixed_text(texts) == ("Choose.\n", "\nOptions: yes, no\nA:")
    texts[1] = "Q: two\nA:"  # one prompt lacks the first line and the options
    assert fixed_text(texts) == ("", "\nA:")


def _sample(i: int, prompt: Prompt, **parts) -> PreparedSample:
    return PreparedSample(Sample(f"s{i}", {"q": i}, row=i + 1), prompt, **parts)


def test_columns_are_each_samples_parts():
    samples = [
        _sample(0, Prompt("Q: a\nA:"), choices=("x", "y"), gold=(1,)),
        _sample(1, Prompt(messages=(("system", "Be brief."), ("user", "Q: b")))),
        _sample(2, Prompt(None), choices=("x", "y"), gold=()),  # an unscored row with no prompt text
        _sample(3, Prompt("", messages=()), references=("r",)),
        _sample(4, Prompt(""), text="a perplexity text"),
        _sample(5, Prompt("Q: c\x01"), choices=("u", "v", "w"), gold=(0, 2)),
    ]
    columns = Columns(samples)
    assert columns.prompt_texts == ["Q: a\nA:", "Be brief.\nQ: b", "", "", "", "Q: c\x01"]
    assert columns.choice_counts.tolist() == [2, 0, 2, 0, 0, 3]
    assert columns.gold_counts.tolist() == [1, 0, 0, 0, 0, 2]
    assert not columns.all_multiple_choice
    assert columns.scored == [samples[0], samples[5]]
    assert columns.multiple_choice() == 3
    assert columns.any_scored_multiple_choice()
    assert columns.ids == [f"s{i}" for i in range(6)]
    assert columns.own_texts == [None, None, None, None, "a perplexity text", None]
    assert columns.references[3] == ("r",)
    assert [r.row for r in columns.rows] == [1, 2, 3, 4, 5, 6]


def test_columns_of_plain_prompts_and_unscored_rows():
    samples = [_sample(i, Prompt(f"Q: {i}\nA:"), choices=("x", "y")) for i in range(3)]
    columns = Columns(samples)
    assert columns.prompt_texts == ["Q: 0\nA:", "Q: 1\nA:", "Q: 2\nA:"]
    assert columns.all_multiple_choice
    assert columns.scored == []
    assert columns.multiple_choice() == 3
    assert not columns.any_scored_multiple_choice()
