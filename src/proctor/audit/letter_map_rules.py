"""A letter-to-index map written out by hand in a template, out of order: ``{'A': 0, 'B': 1, 'C': 2, 'D': 4,
'E': 3}[answerKey]``, ``['A', 'B', 'D', 'C'].index(answer)``, ``'ABDCE'.find(key)``. Every row keyed by a swapped
letter is scored against another choice, and the rows that still point inside the choice list give no error. A
map between letters (or digits) and positions keeps their order and steps by one; one that does not is a typo."""

from __future__ import annotations

from typing import Iterator, Sequence

from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import as_template, parsed_template
from proctor.core.audit import AuditRule, Hit

MIN_KEYS = 3  # two letters in the "wrong" order may be a deliberate yes/no map; three out of order are a typo


def _key_class(key: str) -> str | None:
    """The kind of a one-character key that has an order (an upper-case letter, a lower-case one, a digit)."""
    if len(key) != 1:
        return None
    if "A" <= key <= "Z":
        return "upper"
    if "a" <= key <= "z":
        return "lower"
    return "digit" if "0" <= key <= "9" else None


def _out_of_order(pairs: Sequence[tuple[str, int]]) -> list[tuple[str, int]] | None:
    """Of (key, position) pairs of one kind of key, those that break "in order, one step apart" (None: in order):
    the keys whose position is not the one their place among the keys gives, or those after a skipped place."""
    ordered = sorted(pairs)
    if len(ordered) < MIN_KEYS:
        return None
    places = sorted(v for _, v in ordered)
    wrong = [(k, v) for (k, v), place in zip(ordered, places) if v != place]
    if not wrong:
        wrong = [(k, v) for i, (k, v) in enumerate(ordered) if v != places[0] + i]
    return wrong or None


def _groups(pairs: Sequence[tuple[str, int]]) -> list[list[tuple[str, int]]]:
    """The pairs by kind of key ({'A': 0, '1': 0} maps letters and digits alike, each in its own order)."""
    by_class: dict[str, list[tuple[str, int]]] = {}
    for key, value in pairs:
        kind = _key_class(key)
        if kind is None:
            return []  # a map of words ('yes', 'no'), not of letters
        by_class.setdefault(kind, []).append((key, value))
    return list(by_class.values())


def _maps(source: str) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """Each letter map a template writes out: (how it is written, its (key, position) pairs)."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return
    for node in tree.find_all((nodes.Dict, nodes.Call)):
        if isinstance(node, nodes.Dict):
            pairs = [(p.key, p.value) for p in node.items]
            if all(isinstance(k, nodes.Const) and isinstance(v, nodes.Const) for k, v in pairs):
                consts = [(k.value, v.value) for k, v in pairs]  # type: ignore[attr-defined]
                if all(isinstance(k, str) and type(v) is int for k, v in consts):
                    yield "a mapping", consts
                elif all(type(k) is int and isinstance(v, str) for k, v in consts):
                    yield "a mapping", [(v, k) for k, v in consts]  # position -> letter, read the other way
            continue
        if not isinstance(node, nodes.Call):
            continue
        called = node.node
        if not isinstance(called, nodes.Getattr) or called.attr not in ("index", "find"):
            continue
        listed = called.node
        if isinstance(listed, (nodes.List, nodes.Tuple)) and all(
            isinstance(i, nodes.Const) and isinstance(i.value, str) for i in listed.items
        ):
            yield f"a list's .{called.attr}", [(i.value, n) for n, i in enumerate(listed.items)]  # type: ignore[attr-defined]
        elif isinstance(listed, nodes.Const) and isinstance(listed.value, str) and listed.value.isalnum():
            yield f"a string's .{called.attr}", [(c, n) for n, c in enumerate(listed.value)]


def _templates(subject: AuditSubject) -> list[tuple[str, str]]:
    """(field, template) for every template that can turn a row's key into a position."""
    if subject.templated:
        spec = subject.spec
        found = [("target", spec.target)] if spec.target else []
        found += [("choices", spec.choices)] if isinstance(spec.choices, str) else []
        for data in spec.data:
            found += [(f"fields.{name}", as_template(e)) for name, e in data.fields.items()]
        return found
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    return [
        (key, value)
        for key in ("doc_to_target", "doc_to_choice", "doc_to_text")
        if isinstance(value := getattr(config, key, None), str) and "{" in value
    ]


def permuted_letter_map(subject: AuditSubject) -> Iterator[Hit]:
    for field, source in _templates(subject):
        for how, pairs in _maps(source):
            for group in _groups(pairs):
                wrong = _out_of_order(group)
                if wrong is None:
                    continue
                written = ", ".join(f"{k!r} -> {v}" for k, v in sorted(group))
                swapped = ", ".join(repr(k) for k, _ in wrong)
                key = ("data" if field.startswith("fields.") else field) if subject.templated else field
                yield subject.at_line(
                    key,
                    f"the {field} template maps letters to positions by hand ({how}: {written}), and {swapped} are "
                    "out of order or skip a place: every row keyed by them is scored against another choice (a "
                    "typo in the map); list the keys in order, one position apart",
                    field,
                )
                return


RULES = (
    AuditRule(
        "labels.permuted-map",
        "warning",
        "A template maps letters or digits to choice positions by hand ({'A': 0, 'B': 1, 'C': 2, 'D': 4, 'E': 3}, "
        "['A', 'B', 'D', 'C'].index(key), 'ABDC'.find(key)) out of order or skipping a place: every row keyed by "
        "the swapped letters is scored against another choice.",
        permuted_letter_map,
    ),
)
