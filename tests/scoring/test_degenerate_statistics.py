"""Statistics that cannot mean what they print (red team 12, classes 3, 5 and 6): compare and power on one sample,
no spread, one or few clusters, a clamped design effect or an impossible effect keep their numbers and say why
(console and JSON); groups of proctor's own tasks sum counts, leave a perplexity's micro out, weigh by scored rows
and leave out a metric computed with other arguments; the lm-eval and parquet exports and the DuckDB export say
what results.json says. Clean inputs stay silent."""

from __future__ import annotations

import json
import math
import shutil
import textwrap
from pathlib import Path
from typing import Sequence

import pytest

from proctor import evaluate
from proctor.cli import main
from proctor.core.model_requests import GenerateRequest, GenerateResult, LoglikelihoodResult
from proctor.models.base import Model
from proctor.scoring.aggregate import aggregate_groups
from proctor.scoring.metrics import get_metric
from proctor.scoring.power import degenerate_spread
from tests.support.cli_runs import proctor

CAPITALS = ["Paris", "Rome", "Oslo", "Bern", "Lima", "Kyiv", "Riga", "Baku"]


class Answers(Model):
    """Answers each prompt 'Capital of Cn?' with ``answers[n]`` (a right capital or 'x')."""

    def __init__(self, name: str, answers: Sequence[str]):
        self.name = name
        self.answers = list(answers)

    @property
    def fingerprint(self) -> dict:
        return {"backend": "answers", "model": self.name, "answers": self.answers}

    def loglikelihood(self, requests, progress=None):
        return [LoglikelihoodResult(-1.0, (-1.0,), False) for _ in requests]

    def rolling_loglikelihood(self, requests, progress=None):
        raise NotImplementedError

    def generate(self, requests: Sequence[GenerateRequest], progress=None) -> list[GenerateResult]:
        out = []
        for r in requests:
            n = int(str(r.prompt).split("Capital of C")[1].split("?")[0])
            out.append(GenerateResult(self.answers[n], "stop", 5, 1))
        return out


def _task(folder: Path, n: int, *, cluster: Sequence[str] | None = None, name: str = "g", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"country": f"C{i}", "city": CAPITALS[i % len(CAPITALS)], **({"passage": cluster[i]} if cluster else {})}
        for i in range(n)
    ]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = textwrap.dedent(
        f"""\
        name: {name}
        kind: generate
        data: {{path: {name}.jsonl}}
        prompt: "Capital of {{{{ country }}}}?"
        target: "{{{{ city }}}}"
        generation: {{stop: ["\\n"], max_tokens: 8}}
        metrics: [exact_match]
        """
    )
    spec += "cluster: passage\n" * bool(cluster) + extra
    (folder / f"{name}.yaml").write_text(spec)
    return folder / f"{name}.yaml"


def _run(tmp_path: Path, label: str, task: Path, right: Sequence[bool]) -> Path:
    answers = [CAPITALS[i % len(CAPITALS)] if ok else "x" for i, ok in enumerate(right)]
    return evaluate([task], Answers(label, answers), output_dir=tmp_path / label).run_dir


def _cli(capsys, *args: str) -> tuple[str, str]:
    capsys.readouterr()
    try:
        main(list(args))
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    captured = capsys.readouterr()
    return captured.out, captured.err


def _compare(capsys, tmp_path: Path, a: Path, b: Path) -> tuple[str, dict]:
    out = tmp_path / "cmp.json"
    _, err = _cli(capsys, "compare", str(a), str(b), "-o", str(out), "--resamples", "200")
    return " ".join(err.split()), json.loads(out.read_text())["comparisons"][0]


# ---------------------------------------------------------------- compare


def test_compare_of_one_shared_sample_says_no_test_is_possible(tmp_path, capsys):
    task = _task(tmp_path / "t", 1)
    err, pair = _compare(capsys, tmp_path, _run(tmp_path, "a", task, [True]), _run(tmp_path, "b", task, [False]))
    m = pair["tasks"]["g"]["metrics"]["exact_match"]
    assert m["ci"] == [-1.0, -1.0]  # the number stays
    assert "1 shared sample" in err and "1 shared sample" in m["warnings"][0]
    assert pair["warnings"] == [f"g / exact_match: {m['warnings'][0]}"]


@pytest.mark.parametrize(
    ("right_a", "right_b", "diff"), [([True, False] * 4, [True, False] * 4, "0"), ([False] * 8, [True] * 8, "1")]
)
def test_compare_whose_differences_have_no_spread_says_the_se_and_mde_are_no_uncertainty(
    tmp_path, capsys, right_a, right_b, diff
):
    task = _task(tmp_path / "t", 8)
    err, pair = _compare(capsys, tmp_path, _run(tmp_path, "a", task, right_a), _run(tmp_path, "b", task, right_b))
    m = pair["tasks"]["g"]["metrics"]["exact_match"]
    assert m["paired"]["stderr"] == 0.0 and m["paired"]["mde"] == 0.0
    assert f"differs by the same {diff} (B - A)" in m["warnings"][0] and "no spread" in err


def test_compare_clustered_on_one_cluster_says_the_clustered_se_is_undefined(tmp_path, capsys):
    task = _task(tmp_path / "t", 10, cluster=["P"] * 10)
    right = [i % 2 == 0 for i in range(10)]
    err, pair = _compare(capsys, tmp_path, _run(tmp_path, "a", task, right), _run(tmp_path, "b", task, right[::-1]))
    paired = pair["tasks"]["g"]["metrics"]["exact_match"]["paired"]
    assert paired["stderr"] is None and paired["n_clusters"] == 1
    assert "one cluster" in err and "one cluster" in pair["warnings"][0]


def test_compare_of_varied_differences_is_silent(tmp_path, capsys):
    task = _task(tmp_path / "t", 8)
    a = _run(tmp_path, "a", task, [True, False] * 4)
    b = _run(tmp_path, "b", task, [True, True, False, False] * 2)
    err, pair = _compare(capsys, tmp_path, a, b)
    assert pair["warnings"] == [] and "warning" not in err
    assert "warnings" not in pair["tasks"]["g"]["metrics"]["exact_match"]


def test_degenerate_spread_names_each_case_and_nothing_else():
    assert degenerate_spread([0.5, -0.5, 0.0]) == []
    assert degenerate_spread([0.5, -0.5, 0.0], n_clusters=12) == []
    assert "3 clusters" in degenerate_spread([0.5, -0.5, 0.0], n_clusters=3)[0]
    assert "one cluster" in degenerate_spread([0.5, -0.5], n_clusters=1)[0]
    assert "1 shared sample" in degenerate_spread([1.0])[0]
    assert "no spread" in degenerate_spread([0.2, 0.2])[0]


# ---------------------------------------------------------------- power


def _power(capsys, tmp_path: Path, *runs: Path, effect: str) -> tuple[str, dict]:
    out = tmp_path / "power.json"
    _, err = _cli(capsys, "power", *map(str, runs), "--effect", effect, "-o", str(out))
    return " ".join(err.split()), json.loads(out.read_text())


def test_power_from_pilots_with_no_spread_says_they_cannot_estimate_a_size(tmp_path, capsys):
    task = _task(tmp_path / "t", 8)
    a, b = _run(tmp_path, "a", task, [True] * 8), _run(tmp_path, "b", task, [True] * 8)
    err, found = _power(capsys, tmp_path, a, effect="0.05")
    assert found["tasks"]["g"]["exact_match"]["samples_needed"] == 0  # the number stays
    assert "pilot's per-sample values do not vary" in err and len(found["warnings"]) == 1
    err, found = _power(capsys, tmp_path, a, b, effect="0.05")
    assert "paired differences between the two pilots do not vary" in found["warnings"][0] and "sd 0" in err


def test_power_names_a_task_of_one_sample_it_leaves_out(tmp_path, capsys):
    one, many = _task(tmp_path / "t", 1, name="one"), _task(tmp_path / "t", 8, name="many")
    answers = [CAPITALS[i % len(CAPITALS)] if i % 2 else "x" for i in range(8)]
    run = evaluate([one, many], Answers("a", answers), output_dir=tmp_path / "a").run_dir
    err, found = _power(capsys, tmp_path, run, effect="0.05")
    assert list(found["tasks"]) == ["many"] and "one / exact_match: 1 sample" in err


def test_power_for_an_effect_beyond_a_unit_metric_says_so(tmp_path, capsys):
    task = _task(tmp_path / "t", 8)
    a = _run(tmp_path, "a", task, [True, False] * 4)
    err, found = _power(capsys, tmp_path, a, effect="1.5")
    assert "beyond the metric's range" in err and found["tasks"]["g"]["exact_match"]["samples_needed"] >= 1
    err, found = _power(capsys, tmp_path, a, effect="0.05")  # a possible effect: silent
    assert found["warnings"] == [] and "warning" not in err


def test_power_with_two_clusters_says_the_design_effect_is_not_measured(tmp_path, capsys):
    task = _task(tmp_path / "t", 20, cluster=["P"] * 10 + ["Q"] * 10)
    a = _run(tmp_path, "a", task, [True] * 20)
    b = _run(tmp_path, "b", task, [i % 2 == 0 for i in range(20)])
    err, found = _power(capsys, tmp_path, a, b, effect="0.1")
    entry = found["tasks"]["g"]["exact_match"]
    assert entry["n_clusters"] == 2 and entry["design_effect"] == 1.0  # clamped: the number stays
    assert "2 clusters, far too few" in err and "below 1 and taken as 1" in found["warnings"][0]


def test_power_with_many_clusters_is_silent(tmp_path, capsys):
    task = _task(tmp_path / "t", 24, cluster=[f"P{i // 2}" for i in range(24)])
    a = _run(tmp_path, "a", task, [i % 3 == 0 for i in range(24)])
    b = _run(tmp_path, "b", task, [i % 4 != 0 for i in range(24)])
    err, found = _power(capsys, tmp_path, a, b, effect="0.1")
    assert found["tasks"]["g"]["exact_match"]["n_clusters"] == 12
    assert found["warnings"] == [] and "warning" not in err


def test_compare_and_power_warn_through_the_command(tmp_path):
    """The proctor command in a fresh interpreter: the warnings reach its stderr and the JSON files."""
    task = _task(tmp_path / "t", 8)
    a = _run(tmp_path, "a", task, [False] * 8)
    b = _run(tmp_path, "b", task, [True] * 8)
    done = proctor("compare", str(a), str(b), "-o", str(tmp_path / "c.json"), cwd=tmp_path)
    assert "no spread" in done.stderr and "1 significant difference" in done.stdout  # McNemar's test stays valid
    assert json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["warnings"]
    done = proctor("power", str(b), "--effect", "0.05", "-o", str(tmp_path / "p.json"), cwd=tmp_path)
    assert "sd 0" in done.stderr and json.loads((tmp_path / "p.json").read_text())["warnings"]


# ---------------------------------------------------------------- groups


def _entry(value, stderr, n, n_scored=None) -> dict:
    metric = {"value": value, "stderr": stderr, **({"n_scored": n_scored} if n_scored is not None else {})}
    return {"n_samples": n, "metrics": {"m": metric}}


def test_a_native_group_sums_a_count_and_leaves_a_perplexity_micro_out():
    null_count, ppl, em = (
        get_metric(n, k)
        for n, k in [("null_count", "generate"), ("word_perplexity", "perplexity"), ("exact_match", "generate")]
    )
    entries = {
        "a": {
            "n_samples": 6,
            "metrics": {
                "null_count": {"value": 0.0, "stderr": None},
                "word_perplexity": {"value": 10.0, "stderr": None},
            },
        },
        "b": {
            "n_samples": 4,
            "metrics": {
                "null_count": {"value": 4.0, "stderr": None},
                "word_perplexity": {"value": 2.0, "stderr": None},
            },
        },
    }
    own = {t: [(null_count, {}), (ppl, {}), (em, {})] for t in entries}
    group = aggregate_groups(entries, {"a": ["G"], "b": ["G"]}, own)["G"]["metrics"]
    assert group["null_count"]["value"] == 4.0 and group["null_count"]["micro"] is None
    assert group["word_perplexity"]["value"] == 6.0 and group["word_perplexity"]["micro"] is None
    assert "pooled" in group["word_perplexity"]["note"]
    # without definitions (a group with an lm-eval member): lm-eval's arithmetic, unchanged
    lm = aggregate_groups(entries, {"a": ["G"], "b": ["G"]})["G"]["metrics"]
    assert lm["null_count"]["value"] == 2.0 and lm["null_count"]["micro"] == pytest.approx(1.6)


def test_a_native_group_weighs_members_by_scored_rows_and_lm_eval_by_samples():
    em = get_metric("exact_match", "generate")
    entries = {"a": _entry(1.0, 0.0, 6, n_scored=3), "b": _entry(0.0, 0.0, 6)}
    entries = {
        t: {"n_samples": e["n_samples"], "metrics": {"exact_match": e["metrics"]["m"]}} for t, e in entries.items()
    }
    own = {t: [(em, {})] for t in entries}
    assert aggregate_groups(entries, {"a": ["G"], "b": ["G"]}, own)["G"]["metrics"]["exact_match"][
        "micro"
    ] == pytest.approx(1 / 3)
    assert aggregate_groups(entries, {"a": ["G"], "b": ["G"]})["G"]["metrics"]["exact_match"]["micro"] == 0.5


def test_a_group_whose_members_compute_a_metric_with_other_arguments_leaves_it_out(tmp_path):
    """Through the command: the warning in the console and results.json, no group number mixing the units."""
    (tmp_path / "m.py").write_text(
        "from proctor.scoring.metrics import register_metric\n"
        "@register_metric('score', ['generate'])\n"
        "def score(outcome, scale=1):\n"
        "    return scale * float(outcome.text == outcome.references[0])\n"
    )
    for name, scale in (("a", 1), ("b", 100)):
        _task(tmp_path, 4, name=name, extra="group: G\n")
        spec = (
            (tmp_path / f"{name}.yaml")
            .read_text()
            .replace("metrics: [exact_match]", f"metrics: [exact_match, {{score: {{scale: {scale}}}}}]")
        )
        (tmp_path / f"{name}.yaml").write_text(spec)
    (tmp_path / "fake.py").write_text(
        "from proctor.core.model_requests import GenerateResult\n"
        "from proctor.models.base import Model\n"
        "class Fake(Model):\n"
        "    def __init__(self, rest, **options):\n"
        "        self.name = 'fake:' + rest\n"
        "    @property\n"
        "    def fingerprint(self):\n"
        "        return {'backend': 'fake', 'model': self.name}\n"
        "    def loglikelihood(self, requests, progress=None):\n"
        "        raise NotImplementedError\n"
        "    def rolling_loglikelihood(self, requests, progress=None):\n"
        "        raise NotImplementedError\n"
        "    def generate(self, requests, progress=None):\n"
        "        return [GenerateResult('Paris', 'stop', 5, 1) for r in requests]\n"
        "def register(registry):\n"
        "    registry.add_model_backend('fake', Fake)\n"
    )
    done = proctor(
        "run",
        "a.yaml",
        "b.yaml",
        "--plugin",
        "fake.py",
        "--plugin",
        "m.py",
        "--model",
        "fake:x",
        "-o",
        "run",
        cwd=tmp_path,
    )
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    group = results["groups"]["G"]
    assert "score" not in group["metrics"] and "other arguments" in group["left_out"]["score"]
    assert group["metrics"]["exact_match"]["value"] == 0.25  # one name, one definition: averaged as before
    assert any("group 'G'" in w and "score" in w for w in results["warnings"])
    assert "other arguments" in " ".join(done.stderr.split())


# ---------------------------------------------------------------- exports


def test_lm_eval_export_keeps_a_stderr_from_a_clashing_name_and_a_nan_metric(caplog):
    from proctor.runs.lm_eval_layout import _block

    metrics = {
        "exact_match": {"value": 0.5, "stderr": 0.2},
        "exact_match_stderr": {"value": 0.99, "stderr": 0.0},
        "mine": {"value": None, "stderr": None},
    }
    block = _block("g", metrics, 6)
    assert block["exact_match_stderr,none"] == 0.2 and block["exact_match_stderr_value,none"] == 0.99
    assert block["mine,none"] is None and block["mine_stderr,none"] == "N/A"
    assert "would overwrite" in caplog.text and "'mine' has no number" in caplog.text
    caplog.clear()
    assert _block("g", {"acc": {"value": 0.5, "stderr": 0.1}}, 6) and not caplog.text  # a clean block: silent


def test_parquet_correct_of_a_generation_follows_its_first_binary_metric(tmp_path):
    pytest.importorskip("pyarrow")
    from proctor.runs.run_exports import samples_table

    task = _task(tmp_path / "t", 4)
    run = _run(tmp_path, "a", task, [True, False, True, False])
    assert samples_table(run).column("correct").to_pylist() == [True, False, True, False]


def test_duckdb_refuses_another_run_of_the_same_folder_name(tmp_path, capsys):
    pytest.importorskip("duckdb")
    task = _task(tmp_path / "t", 4)
    first = evaluate([task], Answers("a", ["Paris"] * 4), output_dir=tmp_path / "x" / "r1").run_dir
    second = evaluate([task], Answers("b", ["x"] * 4), output_dir=tmp_path / "y" / "r1").run_dir
    db = str(tmp_path / "all.duckdb")
    _cli(capsys, "export", str(first), "--to", "duckdb", "--database", db)
    _cli(capsys, "export", str(first), "--to", "duckdb", "--database", db)  # the same run again: replaced
    with pytest.raises(SystemExit) as exc:
        main(["export", str(second), "--to", "duckdb", "--database", db])
    assert exc.value.code and "already holds a run named 'r1'" in " ".join(capsys.readouterr().err.split())
    import duckdb

    rows = duckdb.connect(db).sql("select model, value from metrics").fetchall()
    assert rows == [("a", 0.25)] and not math.isnan(rows[0][1])
    # a new run made into the first one's folder replaced it on disk: its rows replace the old ones (review of
    # session 12, finding 3: refused as "another run")
    shutil.rmtree(first)
    again = evaluate([task], Answers("c", ["x"] * 4), output_dir=tmp_path / "x" / "r1")
    _cli(capsys, "export", str(again.run_dir), "--to", "duckdb", "--database", db)
    rows = duckdb.connect(db).sql("select model, value from metrics").fetchall()
    (metric,) = again.tasks.values()
    assert rows == [("c", metric["metrics"]["exact_match"]["value"])] != [("a", 0.25)]
