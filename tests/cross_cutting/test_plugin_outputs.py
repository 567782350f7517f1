"""What a plug-in hands back is checked where it enters, and what it registers cannot silently replace another's.

Red team 12's class (probes 004 to 018, 160 to 168, 191 to 215): a metric's per-sample value, an aggregate's
result, a backend's results, an audit rule's hits and an exporter's files were used as they came, and a plug-in
registering a taken name (``exact_match``, ``openai``, a built-in audit rule id, another plug-in file's metric)
replaced it without a word. Each case runs the ``proctor`` command in this process (``proctor.cli.main``); one
runs it in a fresh process. The controls (Fraction, int, numpy and bool values; a name registered again by a later
command's file) must stay silent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.models.reply_checks import ReplyError
from proctor.models.result_checks import check_results
from tests.support.cli_runs import jsonl, proctor, proctor_error, results, run_in_process, samples, write

pytestmark = pytest.mark.fast

ROWS = [
    {"country": "France", "city": "Paris", "choices": ["Paris", "Lyon"], "answer": 0},
    {"country": "Italy", "city": "Rome", "choices": ["Milan", "Rome"], "answer": 1},
    {"country": "Spain", "city": "Madrid", "choices": ["Madrid", "Seville"], "answer": 0},
    {"country": "Peru", "city": "Lima", "choices": ["Cusco", "Lima"], "answer": 1},
]
GENERATE = """\
name: g
kind: generate
data: {path: rows.jsonl}
prompt: "Capital of {{ country }}?"
target: "{{ city }}"
generation: {stop: ["\\n"], max_tokens: 8}
metrics: [exact_match, %s]
%s"""
CHOICE = """\
name: mc
kind: multiple_choice
data: {path: rows.jsonl}
prompt: "Capital of {{ country }}?"
choices: "{{ choices }}"
target: "{{ answer }}"
metrics: [acc, acc_per_token]
"""
PERPLEXITY = """\
name: p
kind: perplexity
data: {path: rows.jsonl}
text: "The capital of {{ country }} is {{ city }}."
metrics: [word_perplexity]
"""

# A backend (``--model bk:NAME``): each character of a continuation costs 0.5 nats; it answers "Paris". LL, GEN
# and ROLL are the expressions of each result, so that a test can break one field.
BACKEND = """\
import math
from proctor.core.model_requests import GenerateResult, LoglikelihoodResult, RollingLoglikelihoodResult
from proctor.models.base import Model


class Backend(Model):
    def __init__(self, rest, **options):
        self.name = f"bk:{rest}"

    @property
    def fingerprint(self):
        return {"backend": "bk", "model": self.name}

    def loglikelihood(self, requests, progress=None):
        out = []
        for r in requests:
            lps = tuple(-0.5 for _ in r.continuation)
            out.append(%(ll)s)
        return out

    def generate(self, requests, progress=None):
        return [%(gen)s for r in requests]

    def rolling_loglikelihood(self, requests, progress=None):
        out = []
        for r in requests:
            lps = tuple(-0.5 for _ in r.text)
            out.append(%(roll)s)
        return out


def register(registry):
    registry.add_model_backend("bk", Backend)
"""
GOOD = {
    "ll": "LoglikelihoodResult(sum(lps), lps, False)",
    "gen": 'GenerateResult("Paris", "stop", len(r.prompt), 1)',
    "roll": "RollingLoglikelihoodResult(sum(lps), len(lps), lps)",
}


@pytest.fixture(autouse=True)
def _registrations_restored():
    """What these tests' plug-ins register (a rule yielding text, an exporter) is not left to later tests."""
    from proctor.core.registry import registry
    from proctor.scoring import metrics

    built = registry()
    tables = (built.audit_rules, built.exporters, built.model_backends, metrics.METRICS, metrics.METRIC_ORIGINS)
    kept = [dict(table) for table in tables]
    origins = {what: dict(table) for what, table in built.origins.items()}
    yield
    for table, before in zip(tables, kept):
        table.clear()
        table.update(before)
    built.origins.clear()
    built.origins.update(origins)


def _folder(tmp_path: Path, backend: dict[str, str] | None = None) -> Path:
    jsonl(tmp_path / "rows.jsonl", ROWS)
    write(tmp_path / "bk.py", BACKEND % {**GOOD, **(backend or {})})
    write(tmp_path / "mc.yaml", CHOICE)
    write(tmp_path / "p.yaml", PERPLEXITY)
    return tmp_path


def _run(folder: Path, tasks: str = "g.yaml", plugins: tuple[str, ...] = (), out: str = "run") -> tuple[int, str]:
    flags = [x for p in ("bk.py", *plugins) for x in ("--plugin", str(folder / p))]
    code, text = run_in_process(["run", str(folder / tasks), *flags, "--model", "bk:v1", "-o", str(folder / out)])
    return code, " ".join(text.split())  # rich wraps long lines


def _metric(folder: Path, body: str, aggregate: str | None = None, name: str = "mine", file: str = "m.py") -> None:
    """A --plugin file registering metric NAME for generate tasks, whose function returns BODY."""
    extra = f", aggregate={aggregate}" if aggregate else ""
    write(
        folder / file,
        f"""\
import numpy as np
from fractions import Fraction
from proctor.scoring.metrics import register_metric


@register_metric({name!r}, ["generate"]{extra})
def mine(outcome):
    right = outcome.text == outcome.references[0]
    return {body}
""",
    )
    write(folder / "g.yaml", GENERATE % (name, ""))


def _refused(code: int, out: str, *words: str) -> None:
    assert code == 2, out
    assert "internal error" not in out and "Traceback" not in out, out
    for word in words:
        assert word in out, (word, out)


# ------------------------------------------------------------------ a metric's per-sample values
@pytest.mark.parametrize(
    "body, shown",
    [
        ("'1' if right else '0'", "'1' (a str)"),  # 004: averaged as numbers by numpy
        ("[1.0, 0.0]", "[1.0, 0.0] (a list)"),  # 011: flattened into twice the samples
        ("complex(1, 1)", "(1+1j) (a complex)"),  # 015: an internal error
        ("np.array([1.0])", "(a ndarray)"),
        ("{'right': right}", "(a dict)"),
    ],
)
def test_a_metric_value_that_is_no_number_names_the_metric_its_file_and_the_sample(tmp_path, body, shown):
    folder = _folder(tmp_path)
    _metric(folder, body)
    code, out = _run(folder, plugins=("m.py",))
    _refused(code, out, "metric 'mine'", str(folder / "m.py"), shown, "for sample '", "rows.jsonl, row 1")


@pytest.mark.parametrize(
    "body", ["Fraction(1, 1) if right else 0", "np.float32(right)", "bool(right)", "int(right)", "None if right else 0"]
)
def test_numbers_of_every_kind_are_numbers(tmp_path, body):
    """016 (a CONTROL): Fraction and int values are numbers (it was 'not JSON serialisable: Fraction')."""
    folder = _folder(tmp_path)
    _metric(folder, body)
    code, out = _run(folder, plugins=("m.py",))
    assert code == 0, out
    entry = results(folder / "run")["tasks"]["g"]["metrics"]["mine"]
    # the backend answers Paris: right on the first row only
    assert entry["value"] == (1 / 4 if "None" not in body else 0.0)
    assert all(isinstance(s["metrics"]["mine"], (int, float, type(None))) for s in samples(folder / "run"))


# ------------------------------------------------------------------ an aggregate's result
@pytest.mark.parametrize(
    "aggregate, words",
    [
        ("lambda values: sum(values) / len(values)", ["returned 0.25 (a float), not (value, stderr)"]),  # 013
        ("lambda values: (sum(values) / len(values), -0.1)", ["standard error -0.1", "at least 0"]),  # 212
        ("lambda values: (np.array([0.25]), None)", ["the value array([0.25]) (a ndarray)"]),  # 213
        ("lambda values: (0.25, 'small')", ["the standard error 'small' (a str)"]),
    ],
)
def test_an_aggregate_that_breaks_its_contract_names_the_metric_and_its_file(tmp_path, aggregate, words):
    folder = _folder(tmp_path)
    _metric(folder, "float(right)", aggregate)
    code, out = _run(folder, plugins=("m.py",))
    _refused(code, out, "the aggregate of metric 'mine'", str(folder / "m.py"), *words)


def test_an_aggregate_of_fractions_is_a_number(tmp_path):
    folder = _folder(tmp_path)
    _metric(folder, "Fraction(1, 1) if right else Fraction(0)", "lambda v: (sum(v) / len(v), Fraction(0))")
    code, out = _run(folder, plugins=("m.py",))
    assert code == 0, out
    assert results(folder / "run")["tasks"]["g"]["metrics"]["mine"] == {"value": 0.25, "stderr": 0.0}


# ------------------------------------------------------------------ a backend's results
@pytest.mark.parametrize(
    "task, broken, field, words",
    [
        (
            "mc.yaml",
            {"ll": "LoglikelihoodResult(-sum(lps), tuple(-x for x in lps), False)"},
            "token_logprobs[0]",
            "above 0",
        ),  # 191
        ("mc.yaml", {"ll": "LoglikelihoodResult(math.nan, lps, False)"}, "logprob", "is NaN"),  # 192
        ("mc.yaml", {"ll": "LoglikelihoodResult(sum(lps), lps, 'False')"}, "is_greedy", "not true or false"),  # 195
        ("mc.yaml", {"ll": "LoglikelihoodResult(sum(lps), (), False)"}, "logprob", "no token log-probs"),  # 215
        ("mc.yaml", {"ll": "LoglikelihoodResult(-math.inf, lps, False)"}, "logprob", "is -inf"),
        ("mc.yaml", {"ll": "(sum(lps), False)"}, "(the result)", "not a LoglikelihoodResult"),
        ("g.yaml", {"gen": 'GenerateResult(None, "stop", 3, 1)'}, "text", "None (a NoneType), not text"),  # 193
        ("g.yaml", {"gen": 'GenerateResult("Paris", "stop", 3, -1)'}, "completion_tokens", "not a count"),
        ("g.yaml", {"gen": 'GenerateResult("Paris", None, 3, 1)'}, "finish_reason", "not text"),
        ("p.yaml", {"roll": "RollingLoglikelihoodResult(sum(lps), 0)"}, "logprob", "no token log-probs"),  # 196
        ("p.yaml", {"roll": "RollingLoglikelihoodResult(sum(lps), len(lps) + 1, lps)"}, "n_tokens", "token log-probs"),
    ],
)
def test_a_backend_result_that_breaks_an_invariant_names_the_backend_request_and_field(
    tmp_path, task, broken, field, words
):
    folder = _folder(tmp_path, broken)
    write(folder / "g.yaml", GENERATE % ("f1", ""))
    code, out = _run(folder, tasks=task)
    name = task.split(".")[0]
    _refused(
        code, out, f"model 'bk:v1' (class Backend in {folder / 'bk.py'})", f"'{field}'", words,
        f"of task '{name}', sample '", "check the backend's code",
    )  # fmt: skip


def test_a_backend_that_keeps_the_invariants_runs_as_before(tmp_path):
    folder = _folder(tmp_path)
    for task in ("mc.yaml", "p.yaml"):
        code, out = _run(folder, tasks=task, out=f"run-{task}")
        assert code == 0, out
    assert results(folder / "run-p.yaml")["tasks"]["p"]["metrics"]["word_perplexity"]["value"] > 1


def test_options_a_backend_without_a_check_may_not_read_are_warned(tmp_path):
    """Red team 12, 230/231: --dtype float16 and --model-arg temperature_scale=3 handed to a plug-in backend that
    takes **options and declares no check: run as if not given, without a word. Now a warning (console and
    results.json) names them; the command line's defaults (float32, cpu, 8) are nobody's choice and not named."""
    folder = _folder(tmp_path)
    flags = ["--dtype", "float16", "--model-arg", "temperature_scale=3"]
    code, out = run_in_process(
        ["run", str(folder / "mc.yaml"), "--plugin", str(folder / "bk.py"), "--model", "bk:v1", *flags, "-o",
         str(folder / "run")]
    )  # fmt: skip
    assert code == 0, out
    (warning,) = [w for w in results(folder / "run")["warnings"] if "declares no check" in w]
    assert warning.startswith("--dtype float16, --model-arg temperature_scale 3 handed to the bk backend")
    assert str(folder / "bk.py") in warning and warning[:60] in " ".join(out.split())
    code, out = _run(folder, tasks="mc.yaml", out="plain")
    assert code == 0 and not any("declares no check" in w for w in results(folder / "plain").get("warnings") or [])


def test_an_option_a_backends_loader_does_not_take_is_refused_before_it_loads(tmp_path):
    folder = _folder(tmp_path)
    source = (folder / "bk.py").read_text()
    write(folder / "bk.py", source.replace("(self, rest, **options):", "(self, rest, dtype=None, device=None):"))
    code, out = run_in_process(
        ["run", str(folder / "mc.yaml"), "--plugin", str(folder / "bk.py"), "--model", "bk:v1", "--model-arg",
         "temperature_scale=3", "-o", str(folder / "run")]
    )  # fmt: skip
    said = " ".join(out.split())
    _refused(code, said, "--model-arg temperature_scale 3: the bk backend's loader", "(it takes: device, dtype)")
    assert not (folder / "run" / "samples.jsonl").exists()


def test_the_results_of_built_in_backends_pass():
    """What hf, vllm and openai return: an empty continuation scores (0.0, (), True), top_logprobs a bounded one."""
    model = type("M", (), {"name": "hf:x"})()
    ll = [LoglikelihoodRequest("a", ""), LoglikelihoodRequest("a", " b"), LoglikelihoodRequest("a", " c")]
    check_results(
        model,
        "loglikelihood",
        ll,
        [
            LoglikelihoodResult(0.0, (), True),
            LoglikelihoodResult(-1.25, (-0.25, -1.0), False, 3),
            LoglikelihoodResult(-7.0, (-7.0,), False, bounded=True),
        ],
    )
    check_results(model, "generate", [GenerateRequest("a")], [GenerateResult("", "length", 0, 0)])
    check_results(
        model, "rolling_loglikelihood", [RollingLoglikelihoodRequest("")], [RollingLoglikelihoodResult(0.0, 0)]
    )
    with pytest.raises(ReplyError, match="model 'hf:x' .*sent a wrong reply"):
        check_results(model, "loglikelihood", ll[:1], [LoglikelihoodResult(0.5, (0.5,), True)])


# ------------------------------------------------------------------ a name registered twice
def test_a_plugin_metric_named_as_a_built_in_is_refused_naming_both(tmp_path):
    folder = _folder(tmp_path)  # 009: exact_match 1.0 where the built-in gives 0.25
    _metric(folder, "1.0", name="exact_match")
    code, out = _run(folder, plugins=("m.py",))
    _refused(code, out, f"{folder / 'm.py'} registers the metric 'exact_match'", "proctor's built-in metrics")


def test_a_plugin_acc_for_generation_is_refused(tmp_path):
    folder = _folder(tmp_path)  # 204: it removed the built-in acc from multiple choice
    _metric(folder, "1.0", name="acc")
    code, out = _run(folder, plugins=("m.py",))
    _refused(code, out, "registers the metric 'acc'", "proctor's built-in metrics")


def test_two_plugin_files_registering_one_metric_are_refused_naming_both(tmp_path):
    folder = _folder(tmp_path)  # 017: the last one won silently
    _metric(folder, "1.0", file="m.py")
    _metric(folder, "0.0", file="m2.py")
    code, out = _run(folder, plugins=("m.py", "m2.py"))
    _refused(code, out, f"{folder / 'm2.py'} registers the metric 'mine', which {folder / 'm.py'} already")


def test_a_later_command_may_register_a_name_again_from_another_file(tmp_path):
    """In one process (a test suite, a notebook) each command's --plugin files are its own."""
    for k, value in enumerate(("1.0", "0.0")):
        folder = _folder(tmp_path / f"run{k}")
        _metric(folder, value, name="again")
        code, out = _run(folder, plugins=("m.py",))
        assert code == 0, out
        assert results(folder / "run")["tasks"]["g"]["metrics"]["again"]["value"] == float(value)


def test_a_plugin_backend_named_as_a_built_in_is_refused(tmp_path):
    folder = _folder(tmp_path)  # 018: --model openai:gpt-4o ran the plug-in
    write(folder / "o.py", (BACKEND % GOOD).replace('add_model_backend("bk"', 'add_model_backend("openai"'))
    code, out = _run(folder, plugins=("o.py",))
    _refused(code, out, f"{folder / 'o.py'} registers the model backend 'openai'", "proctor.models.declaration")


RULE = """\
from proctor.core.audit import AuditRule, Hit


def check(subject):
    yield %s


def register(registry):
    registry.add_audit_rule(AuditRule(%r, "warning", "a house rule", check))
"""


def test_a_plugin_audit_rule_under_a_built_in_id_is_refused(tmp_path):
    folder = _folder(tmp_path)  # 160: its findings never appeared
    write(folder / "g.yaml", GENERATE % ("f1", ""))
    write(folder / "r.py", RULE % ("Hit('hello', file='rows.jsonl', row=1)", "target.constant"))
    code, out = _run(folder, plugins=("r.py",))
    _refused(code, out, f"{folder / 'r.py'} registers the audit rule 'target.constant'", "built-in rule")


def test_an_audit_rule_yielding_what_is_no_hit_names_the_rule_and_its_file(tmp_path):
    folder = _folder(tmp_path)  # 163: internal error: AttributeError
    write(folder / "g.yaml", GENERATE % ("f1", ""))
    write(folder / "r.py", RULE % ("'not a Hit'", "house.text"))
    code, out = _run(folder, plugins=("r.py",))
    _refused(code, out, "audit rule 'house.text'", str(folder / "r.py"), "yielded 'not a Hit'", "not a proctor")


EXPORTER = """\
def ghost(prepared, outcome, run_dir, model_name):
    %s
    return ["answers.tsv"]


def register(registry):
    registry.add_exporter("ghost", ghost)
"""


def test_an_exporter_claiming_a_file_it_never_wrote_is_refused(tmp_path):
    folder = _folder(tmp_path)  # 168: exit 0, no file, no word
    write(folder / "g.yaml", GENERATE % ("f1", "exports: [{format: ghost}]\n"))
    write(folder / "e.py", EXPORTER % "pass")
    code, out = _run(folder, plugins=("e.py",))
    _refused(code, out, "export format 'ghost'", str(folder / "e.py"), "'answers.tsv'", "holds no such file")
    write(folder / "e2.py", EXPORTER % "(run_dir / 'answers.tsv').write_text('x')")  # a later command's file
    code, out = _run(folder, plugins=("e2.py",))
    assert code == 0, out
    assert results(folder / "run")["tasks"]["g"]["exports"] == ["answers.tsv"]


# ------------------------------------------------------------------ the command in a fresh process
def test_the_proctor_command_refuses_a_shadowing_metric_and_scores_fractions(tmp_path):
    folder = _folder(tmp_path)
    _metric(folder, "1.0", name="exact_match")
    message = " ".join(
        proctor_error(
            "run", "g.yaml", "--plugin", "bk.py", "--plugin", "m.py", "--model", "bk:v1", "-o", "run", cwd=folder
        ).split()
    )
    assert "registers the metric 'exact_match', which proctor's built-in metrics" in message
    _metric(folder, "Fraction(1, 1) if right else 0", name="frac")
    write(folder / "bad.py", BACKEND % {**GOOD, "ll": "LoglikelihoodResult(math.nan, lps, False)"})
    proctor("run", "g.yaml", "--plugin", "bk.py", "--plugin", "m.py", "--model", "bk:v1", "-o", "run", cwd=folder)
    run = json.loads((folder / "run" / "results.json").read_text())
    assert run["tasks"]["g"]["metrics"]["frac"]["value"] == 0.25
    assert not run.get("warnings")
    message = " ".join(
        proctor_error("run", "mc.yaml", "--plugin", "bad.py", "--model", "bk:v1", "-o", "run2", cwd=folder).split()
    )
    assert "'logprob' is NaN" in message and "of task 'mc', sample '" in message and "bad.py" in message
