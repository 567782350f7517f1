"""Issue 45's red-team corpus: inputs that validate but would give wrong numbers must be reported by the audit.

Every case of tests/support/audit_corpus.py runs in-process through ``proctor``'s entry point
(tests/support/audit_runner.py): a case that expects a rule must end with that ``[rule]`` finding (or a
clear error), a case that expects an error with a clear error naming the words given, and a valid control
must pass with no audit finding. The rule cases fail until the audit stage has the rule.
"""

from __future__ import annotations

import pytest

from tests.support.audit_corpus import CORPUS, AuditCase
from tests.support.audit_runner import classify, meets, run_case


def _needs_lmeval(case: AuditCase) -> bool:
    return case.name.startswith("lmeval-")


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_audit_case(case: AuditCase, tmp_path, request):
    if _needs_lmeval(case):
        pytest.importorskip("lm_eval")
    fixture = "tiny_base_model_dir" if case.needs_base_model else "tiny_model_dir"
    model = request.getfixturevalue(fixture) if case.needs_model else None
    outcome = run_case(case, tmp_path / "case", model)
    problem = meets(case, outcome)
    assert problem is None, f"{case.name} [{case.category}]: {problem}"


def test_corpus_is_large_and_has_controls():
    names = [c.name for c in CORPUS]
    assert len(names) == len(set(names))
    assert len(CORPUS) >= 150
    controls = [c for c in CORPUS if c.expect == ("ok",)]
    assert 0.1 <= len(controls) / len(CORPUS) <= 0.3, len(controls)


def test_what_the_audit_does_not_catch_yet_stays_few():
    """The corpus's known gaps (audit_corpus.GAPS, listed in docs/audit.md): a ratchet, so that a new gap is a
    decision, and at most a fifth of the cases that expect a finding."""
    gaps = [c for c in CORPUS if c.expect[0] == "gap"]
    expecting = [c for c in CORPUS if c.expect[0] in ("gap", "rule")]
    assert len(gaps) <= 0
    assert len(gaps) / len(expecting) <= 0.25


def test_classification_of_outcomes():
    """The runner's classes themselves: a finding, a bare warning, silence, an internal error, a hang."""
    assert classify(0, "warning [choices.duplicate] quiz.yaml:data.jsonl row 3, field choices: x\n").kind == "warned"
    assert classify(0, "warning [choices.duplicate] q.yaml: x\n").rules == ["choices.duplicate"]
    assert classify(0, "warning: data read from the YAML's folder\n").kind == "warned"
    assert classify(0, "ok quiz: 6 samples (t.yaml:2)\n1 task(s) valid\n").kind == "silent"
    assert classify(0, "[bold]ok[/bold] quiz\n").rules == []
    assert classify(2, "error: t.yaml:3, field 'choices': ...\n").kind == "error"
    assert classify(3, "error: internal error: KeyError: 'x'\n").kind == "internal"
    assert classify(1, "Traceback (most recent call last):\n").kind == "internal"
    assert classify(None, "").kind == "hang"
