"""The audit's row scan (``audit/row_scan.py``) works on whole joined columns and hashes for speed (issue 45); what
it finds must be what the plain per-row definitions below find, row for row, on rows made to be awkward: near-
duplicate and numeric choices, placeholders, non-ASCII and wide whitespace, separators inside texts, ragged
choice counts, perplexity rows, look-alike ids."""

from __future__ import annotations

import dataclasses
import random
import re
import sys
import unicodedata
from typing import Any, Sequence

import pytest

from proctor.audit import choice_keys, row_scan
from proctor.audit.row_scan import PLACEHOLDER_KEYS, TRUTH_KEYS, WIDE_SPACES, RowScan, scan_rows
from proctor.audit.subject import near
from proctor.data.sources import Sample
from proctor.prompts.builder import PreparedSample, Prompt

pytestmark = pytest.mark.fast

_DROP = b" \t\n\r\f\v\"'`.,;:!?()[]{}<>-_/\\|*#"
_NUMBERS = re.compile(r"(?:^|\x00)\s*[+-]?(?:\d+\.?\d*|\.\d+)\s*(?=\x00|$)")


# -- the definitions, one row at a time -------------------------------------------------------------------------


def _cheap(choices: Sequence[str]) -> list[Any]:
    """A row's choice keys: lowered, spacing and punctuation dropped (ASCII rows); ``near`` (others)."""
    if all(c.isascii() for c in choices):
        return [c.lower().encode().translate(None, _DROP) for c in choices]
    return [near(c) for c in choices]


def _one_number(choices: Sequence[str]) -> bool:
    joined = "\x00".join(choices)
    if "." not in joined or len(_NUMBERS.findall(joined)) < 2:
        return False
    values = []
    for choice in choices:
        try:
            values.append(float(choice))
        except ValueError:
            continue
    return len(set(values)) < len(values)


def _id_key(sample_id: str) -> str:
    key = " ".join(sample_id.split()).lower()
    try:
        number = float(key)
    except ValueError:
        return key
    return repr(number) if number == number else key


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def reference_scan(samples: Sequence[PreparedSample], texts: Sequence[str]) -> RowScan:
    scan = RowScan()
    items: dict[tuple[str, ...], int] = {}
    loose: dict[tuple[str, ...], int] = {}
    ids: dict[str, int] = {}
    for i, (s, text) in enumerate(zip(samples, texts)):
        keys = _cheap(s.choices)
        if len(keys) > 1 and (len(set(keys)) < len(keys) or _one_number(s.choices)):
            scan.choice_collisions.append(i)
        if len(keys) > 1 and (not isinstance(keys[0], bytes) or not PLACEHOLDER_KEYS.isdisjoint(keys)):
            scan.placeholder_choices.append(i)
        if len(keys) > 1 and (not isinstance(keys[0], bytes) or not TRUTH_KEYS.isdisjoint(keys)):
            scan.truth_choices.append(i)
        # items compared with their accents composed (NFC): a row typed in decomposed accents is the same item
        text, s = nfc(text), dataclasses.replace(s, text=None if s.text is None else nfc(s.text))
        s = dataclasses.replace(s, choices=tuple(map(nfc, s.choices)))
        item = (" ".join(s.text.split()),) if s.text is not None else (" ".join(text.split()), "\x00".join(s.choices))
        if item not in (("", ""), ("",)):
            earlier = items.setdefault(item, i)
            if earlier != i:
                scan.repeats.append((i, earlier))
            elif s.text is None and len(s.choices) >= 2:  # one item up to case, spacing and the choices' order
                key = (" ".join(text.casefold().split()), *sorted(" ".join(c.casefold().split()) for c in s.choices))
                earlier = loose.setdefault(key, i)
                if earlier != i:
                    scan.reorders.append((i, earlier))
        earlier = ids.setdefault(_id_key(s.sample.id), i)
        if earlier != i and samples[earlier].sample.id != s.sample.id:
            scan.id_clashes.append((i, earlier))
        parts = [text, *s.choices, *s.references]
        if not all(p.isascii() for p in parts) or any("&" in p for p in parts) or "\\" in text:
            scan.unusual_text.append(i)
    # ids with no point in any: told apart by case and ends alone when those tell them all apart ("1" and "01"
    # are then two ids)
    names = [s.sample.id for s in samples]
    if "." not in "".join(names):
        quick = [i.strip().lower() for i in names]
        if len(set(quick)) == len(quick) and " " not in "".join(quick):
            scan.id_clashes = []
    return scan


# -- awkward rows -----------------------------------------------------------------------------------------------

WORDS = ["Paris", "paris", "Paris.", " paris ", "PARIS!", "Rome", "Ваш", "Вaш", "café", "cafe\u0301", "na", "N/A"]
WORDS += [
    "uXdXfXnXd",
    "None",
    "null",
    "4",
    "4.0",
    " 4 ",
    "+4.",
    ".5",
    "0.5",
    "٤",
    "1e3",
    "a&b",
    "a\\nb",
    "x\x00y",
    "x\x01y",
]
WORDS += ["True", "false", "TRUE."]  # truth values as texts (choices.coerced reads those rows)
WORDS += ["two  words", "two\twords", "two\xa0words", "two\u3000words", "tab\x1fsep", "", "blue", "green"]
# pairs whose cheap keys differ (non-ASCII texts) but that near() or their numbers' values equate
NEAR_ONLY = [("Ваш", "Вaш"), ("café", "cafe\u0301"), ("٤", "4"), ("٠", "-0.0"), ("\uff21", "a")]
SPACES = [" ", "\n ", "\x1c", "\xa0", "\t\t", "\u3000 "]
IDS = ["q1", "Q1", "q1 ", "1", "01", "1e1", "10", "id\x00", "ü", "Ü", "a b", "a  b", "nan", "NaN", "1.0", "x.y"]


def _text(rng: random.Random) -> str:
    return rng.choice(["", " "]) + rng.choice(["\n", " ", "  ", "\t", "\x1c"]).join(rng.sample(WORDS, 3))


def awkward_samples(
    rng: random.Random, n: int, ragged: bool, perplexity: bool, points: bool, width: int = 4
) -> list[PreparedSample]:
    """``width``: how many choices every row has (pairs compared up to 8, sorted beyond), unless ``ragged``."""
    out = []
    ids = IDS if points else IDS[:-2]
    uniform = width
    for i in range(n):
        width = rng.choice([0, 1, 2, 3, 4, 5]) if ragged else uniform
        choices = tuple(rng.choice(WORDS[:8] if rng.random() < 0.5 else WORDS) for _ in range(width))
        prompt = _text(rng) if rng.random() < 0.7 else rng.choice(["Q: same?", "Q:  same? ", ""])
        if rng.random() < 0.1:  # choices that only a reader's eye (near) takes for one
            choices = (*rng.choice(NEAR_ONLY), *choices[2:])
        if out and rng.random() < 0.1:  # an earlier row asked again, spaced otherwise
            again = rng.choice(out)
            respaced = re.sub(" ", lambda _: rng.choice(SPACES), again.prompt.text or "")
            prompt, choices = rng.choice(SPACES) + respaced + rng.choice(SPACES), again.choices
            if rng.random() < 0.3:  # in another case, its choices in another order (reorders)
                prompt, choices = prompt.upper(), tuple(c.upper() for c in reversed(choices))
        sample_id = rng.choice(ids) + rng.choice(["", str(i % 7)]) if rng.random() < 0.3 else f"row{i}"
        out.append(
            PreparedSample(
                Sample(sample_id, {}, file="data.jsonl", row=i + 1),
                Prompt(text=prompt),
                choices=choices,
                gold=(0,) if choices else (),
                references=tuple(rng.sample(WORDS, rng.choice([0, 1, 2]))),
                text=(_text(rng) if rng.random() < 0.5 else "same text") if perplexity and rng.random() < 0.4 else None,
            )
        )
    return out


def _rewritten(samples: list[PreparedSample], drop: str) -> list[PreparedSample]:
    """The same rows with the characters ``drop`` matches taken out of every text (a choice left empty: "e")."""
    out = re.compile(drop)
    return [
        PreparedSample(
            dataclasses.replace(s.sample, id=out.sub("", s.sample.id)),
            Prompt(text=out.sub("", s.prompt.text or "")),
            choices=tuple(out.sub("", c) or "e" for c in s.choices),
            gold=s.gold,
            references=tuple(out.sub("", r) for r in s.references),
            text=None if s.text is None else out.sub("", s.text),
        )
        for s in samples
    ]


NO_SEPARATORS = "[\x00\x01]"  # non-ASCII kept: the joined columns split back into rows (the fast paths)
PLAIN = r"[^ -~\n\t]|[&\\]"  # ASCII without "&" or a backslash: no row is unusual


@pytest.mark.parametrize("seed", range(12))
def test_scan_finds_what_the_per_row_definitions_find(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # rows that share their choices have their prompts read one by one, or all prompts are read at once
    monkeypatch.setattr(row_scan, "FEW_ROWS", 1.0 if seed % 5 < 2 else 0.0)
    # the choices joined a few at a time (a point, a NUL or a non-ASCII choice in some pieces only), or all at once
    monkeypatch.setattr(choice_keys, "PIECE", (7, 64, 1 << 15)[seed // 4 % 3])
    rng = random.Random(seed)
    width = (4, 10, 2)[seed % 3]
    ragged, perplexity, points = seed % 2 == 1, seed % 3 == 0, seed % 4 < 2
    samples = awkward_samples(rng, 400, ragged=ragged, perplexity=perplexity, points=points, width=width)
    if seed % 4 == 3:  # no point in any choice: the numbers' pass is skipped
        samples = [dataclasses.replace(s, choices=tuple(c.replace(".", "") for c in s.choices)) for s in samples]
    found = []
    variants = [_rewritten(samples, NO_SEPARATORS), _rewritten(samples, PLAIN), samples]
    for rows in (*variants, samples[:1], variants[1][:3]):
        texts = [s.prompt.text or "" for s in rows]
        expected = reference_scan(rows, texts)
        assert scan_rows(rows, texts, near) == expected
        found.append([len(rows) for rows in vars(expected).values()])
    # the rows made to collide do, or the comparison above would prove little
    assert all(found[0][:6]) and all(found[1][:4]) and not found[1][4] and all(found[2][:6]), found
    assert found[0][6] or found[1][6] or found[2][6], found  # reorders: the same item in another order or case


def test_a_clean_task_gives_no_rows_and_a_repeat_is_found_among_many() -> None:
    rows = [
        PreparedSample(
            Sample(f"q{i}", {}, row=i + 1),
            Prompt(text=f"Q: question {i}?\nA:"),
            choices=(f"red {i}", f"blue {i}", f"green {i}", f"amber {i}"),
            gold=(i % 4,),
        )
        for i in range(5000)
    ]
    texts = [s.prompt.text or "" for s in rows]
    assert scan_rows(rows, texts, near) == RowScan()
    rows[4321] = PreparedSample(
        Sample("q4321", {}, row=4322), Prompt(text="Q:  question 17?\nA: "), rows[17].choices, gold=(1,)
    )
    texts[4321] = "Q:  question 17?\nA: "
    rows[999] = PreparedSample(Sample("Q5", {}, row=1000), rows[999].prompt, ("4", "4.0", "x"), gold=(0,))
    scan = scan_rows(rows, texts, near)
    assert scan.repeats == [(4321, 17)]
    assert scan.id_clashes == [(999, 5)]
    assert scan.choice_collisions == [999]


def test_wide_spaces_are_every_non_ascii_whitespace() -> None:
    """The scan's spacing makes these spaces; ``str.split()`` must take no other character for one."""
    spaces = "".join(chr(c) for c in range(128, sys.maxunicode + 1) if chr(c).isspace())
    assert WIDE_SPACES.sub("", spaces) == ""
    assert len(WIDE_SPACES.findall(spaces + "a\u200b")) == len(spaces) == 19
