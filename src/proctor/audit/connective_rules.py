"""A connective chosen by a row's condition, the wrong way round: XCOPA's ``'because' if question == 'effect'
else 'therefore'``. The condition is read (``prompt.drops-condition`` is satisfied) and every row is asked the
opposite relation: the cause rows "therefore ...", the effect rows "because ...". The words are a small lexicon,
so the rule reads the template's own choice of words for 'cause' and 'effect'."""

from __future__ import annotations

import re
from typing import Iterator

from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import parsed_template
from proctor.core.audit import AuditRule, Hit

# what introduces a cause, and what introduces an effect, in the languages COPA-style sets come in
_CAUSE_WORDS = re.compile(
    r"\b(because|since|due to|as a result of|perché|poiché|karena|sebab|porque|parce que|weil|çünkü|vì|kwa sababu)\b"
    r"|因为|由于|เพราะ",
    re.IGNORECASE,
)
_EFFECT_WORDS = re.compile(
    r"\b(so|therefore|thus|hence|as a result|consequently|quindi|perciò|maka|jadi|sehingga|por lo tanto|por eso|"
    r"donc|deshalb|bu yüzden|nên|kwa hiyo)\b|所以|因此|ดังนั้น",
    re.IGNORECASE,
)
_CONDITIONS = {"cause": "cause", "effect": "effect", "result": "effect"}


def _says(text: str) -> str | None:
    """Which relation a connective introduces ('cause', 'effect'; None for neither or both)."""
    cause, effect = bool(_CAUSE_WORDS.search(text)), bool(_EFFECT_WORDS.search(text))
    return "cause" if cause and not effect else "effect" if effect and not cause else None


def _choices(source: str) -> Iterator[tuple[str, str]]:
    """(the condition a branch is for, the text it writes) for each branch a template chooses by 'cause' or
    'effect': ``a if question == 'effect' else b`` and ``{'cause': a, 'effect': b}[question]``."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return
    for node in tree.find_all((nodes.CondExpr, nodes.Dict)):
        if isinstance(node, nodes.Dict):
            for pair in node.items:
                if isinstance(pair.key, nodes.Const) and isinstance(pair.value, nodes.Const):
                    key, value = pair.key.value, pair.value.value
                    if isinstance(key, str) and key.lower() in _CONDITIONS and isinstance(value, str):
                        yield _CONDITIONS[key.lower()], value
            continue
        if not isinstance(node, nodes.CondExpr):
            continue
        test = node.test
        if not isinstance(test, nodes.Compare) or len(test.ops) != 1:
            continue
        operand = test.ops[0]
        constant = operand.expr
        if not isinstance(constant, nodes.Const) or not isinstance(constant.value, str):
            continue
        condition = _CONDITIONS.get(constant.value.lower())
        if condition is None or operand.op not in ("eq", "ne"):
            continue
        other = "effect" if condition == "cause" else "cause"
        yes, no = (condition, other) if operand.op == "eq" else (other, condition)
        for branch, said_for in ((node.expr1, yes), (node.expr2, no)):  # expr2 is None without an else
            if isinstance(branch, nodes.Const) and isinstance(branch.value, str):
                yield said_for, branch.value


def _templates(subject: AuditSubject) -> list[tuple[str, str]]:
    if subject.templated:
        return [("prompt", subject.spec.prompt)] if isinstance(subject.spec.prompt, str) else []
    config = getattr(getattr(subject.handler, "task", None), "config", None)
    text = getattr(config, "doc_to_text", None)
    return [("doc_to_text", text)] if isinstance(text, str) and "{" in text else []


def inverted_connective(subject: AuditSubject) -> Iterator[Hit]:
    for key, source in _templates(subject):
        for condition, text in _choices(source):
            said = _says(text)
            if said is not None and said != condition:
                yield subject.at_line(
                    key,
                    f"the {key} writes {text!r} for the rows that ask for the {condition}, a word that introduces "
                    f"the {said}: every row is asked the opposite relation (the branches of the condition are "
                    "swapped)",
                    key,
                )
                return


RULES = (
    AuditRule(
        "prompt.inverted-condition",
        "warning",
        "A template chooses its connective by the row's cause/effect and writes a cause word ('because') for the "
        "effect rows or an effect word ('therefore') for the cause rows: every row is asked the opposite relation.",
        inverted_connective,
    ),
)
