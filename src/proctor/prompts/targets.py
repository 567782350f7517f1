"""A sample's right answers: the gold choice indices of a multiple-choice row, the references of a generated one.

What a task's own ``target`` template gives is held to the format's rules: a value that would silently score
wrong (a choice named twice, a digit text that is both one choice's index and another choice's text, a mapping
str() would make a reference) is an error naming the row. A dialect's handler gives its targets as its format
reads them (``template=False``): those keep only the checks every format shares.
"""

from __future__ import annotations

from typing import Callable

from proctor.core.errors import TaskDefinitionError

Fail = Callable[[str], TaskDefinitionError]  # the error for this row and field 'target'


def _index(item: object, choices: tuple[str, ...], template: bool, fail: Fail) -> int:
    if isinstance(item, str) and item in choices:
        index = choices.index(item)
        digits = item.strip().lstrip("-").isdigit()
        if template and digits and int(item) != index and 0 <= int(item) < len(choices):
            raise fail(
                f"'target' gave the text {item!r}, which is choice {int(item)}'s index and choice {index}'s text: "
                'for the index give a number ("{{ label | int }}"); for the text give its index '
                '("{{ options.index(answer) }}", with the list the choices come from)'
            )
        return index
    if isinstance(item, bool) or item is None or (isinstance(item, float) and not float(item).is_integer()):
        raise fail(f"'target' gave {item!r} ({type(item).__name__}), which is not a choice index")
    if isinstance(item, (int, float)) or (isinstance(item, str) and item.strip().lstrip("-").isdigit()):
        return int(item)
    raise fail(
        f"'target' gave {item!r}, which is neither a choice index nor one of the choices {list(choices)!r:.200}"
        + _near_choice(item, choices)
    )


def _near_choice(item: object, choices: tuple[str, ...]) -> str:
    """Why a target text that reads as a choice is not one: another Unicode form (decomposed accents, full-width
    letters) or spacing and case; the text alone would not say it."""
    if not isinstance(item, str):
        return ""
    import unicodedata

    def form(text: str) -> str:
        return unicodedata.normalize("NFKC", text)

    def loose(text: str) -> str:
        return " ".join(form(text).casefold().split())

    for how, same in (
        ("Unicode form (NFC/NFKC: decomposed accents, full-width letters)", form),
        ("case or spacing", loose),
    ):
        found = [i for i, c in enumerate(choices) if same(c) == same(item)]
        if found:
            return (
                f"; it is choice {found[0]} ({choices[found[0]]!r}) in another {how}: write the target and the "
                "choices in one form (normalise both, e.g. unicodedata.normalize('NFC', ...))"
            )
    return ""


def gold_indices(value: object, choices: tuple[str, ...], template: bool, fail: Fail) -> tuple[int, ...]:
    """The indices of the right choices ``value`` (an index or a choice's text, or a list of them) names."""
    values = value if isinstance(value, (list, tuple)) else [value]
    gold: list[int] = []
    for item in values:
        index = _index(item, choices, template, fail)
        if not 0 <= index < len(choices):
            raise fail(f"'target' index {index} is out of range for {len(choices)} choices")
        if template and index in gold:  # gold_probability would count the choice twice
            raise fail(f"'target' names choice {index} ({choices[index]!r:.60}) twice: {value!r:.80}")
        gold.append(index)
    if not gold:
        raise fail("'target' is empty")
    return tuple(gold)


def _not_a_reference(value: object) -> bool:
    return isinstance(value, (dict, list, tuple, set)) or (isinstance(value, float) and value != value)


def references(value: object, template: bool, fail: Fail, empty_scored: bool = False) -> tuple[str, ...]:
    """The reference answers ``value`` gives: one, or a list of them (each a text or a number). ``empty_scored``:
    an empty list is a sample without references (the task's ``no_reference: scored``), not an error."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if any(v is None for v in values):  # str(None) would make "None" a reference answer
        raise fail(f"'target' gave a null reference: {value!r:.80}")
    if template:
        if not values and not empty_scored:
            raise fail("'target' gave no reference (an empty list): nothing to compare the answer with")
        for v in values:
            if _not_a_reference(v):  # str() would make "{'a': 1}" or "nan" the reference
                raise fail(f"'target' gave {v!r:.60} ({type(v).__name__}) as a reference, not a text or a number")
    return tuple(str(v) for v in values)
