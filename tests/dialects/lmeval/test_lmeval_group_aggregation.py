"""lm-eval groups scored as lm-eval 0.4.13 scores them (api/group.Group.aggregate): a group file resolved through
proctor's catalogue, the members' results made up (no model), and every group's numbers compared with lm-eval's own
``aggregate`` of the same results: weight_by_size true and false, several metrics, filters found or listed, a member
without a metric or a standard error, and a group inside a group (which averages its leaf tasks, not its subgroup)."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("lm_eval")

from proctor.dialects.lmeval import catalogue, library  # noqa: E402
from proctor.scoring.aggregate import aggregate_groups  # noqa: E402

TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: rows.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{q}}}}"
doc_to_choice: ["a", "b"]
doc_to_target: 0
"""
OUTER = """group: ga_outer
task: [ga_a, ga_inner]
aggregate_metric_list:
  - metric: acc
    weight_by_size: true
  - metric: acc_norm
    weight_by_size: false
  - metric: exact_match
    filter_list: strict
"""
INNER = """group: ga_inner
task: [ga_b, ga_c]
aggregate_metric_list:
  - metric: acc
    aggregation: mean
    weight_by_size: false
"""

# each member: its samples and metrics ("metric,filter" -> (value, stderr)); sizes differ so weighting shows
RESULTS = {
    "ga_a": (3, {"acc,none": (2 / 3, 0.33), "acc_norm,none": (1 / 3, 0.33), "exact_match,strict": (1.0, 0.0)}),
    "ga_b": (
        8,
        {
            "acc,none": (0.5, 0.19),
            "acc,flex": (0.25, 0.16),
            "acc_norm,none": (0.75, None),
            "exact_match,strict": (0.5, 0.19),
            "exact_match,loose": (0.9, 0.1),
        },
    ),
    "ga_c": (21, {"acc,none": (0.9, 0.066), "acc_norm,none": (0.8, 0.09), "exact_match,loose": (0.2, 0.09)}),
}


def _theirs(folder):
    """lm-eval's own group numbers for RESULTS, by group."""
    tm = catalogue.manager([folder], defaults=False)
    flat = {}
    for name, (n, metrics) in RESULTS.items():
        flat[name] = {"sample_len": n}
        for key, (value, stderr) in metrics.items():
            metric, _, filter_name = key.partition(",")
            flat[name][key] = value
            if stderr is not None:
                flat[name][f"{metric}_stderr,{filter_name}"] = stderr
    with library.consent(True), library.capturing():
        outer = tm._load_spec("ga_outer")
    return {g.name: g.aggregate(flat) for g in [outer, *outer.get_all_groups()]}


def test_groups_equal_lm_evals_aggregate(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"q": "x"}\n')
    for name in RESULTS:
        (tmp_path / f"{name}.yaml").write_text(TASK.format(name=name))
    (tmp_path / "outer.yaml").write_text(OUTER)
    (tmp_path / "inner.yaml").write_text(INNER)
    leaves = catalogue.resolve("ga_outer", catalogue.manager([tmp_path], defaults=False), True, "here")
    assert sorted(leaf.name for leaf in leaves) == sorted(RESULTS)
    entries = {
        name: {"n_samples": n, "metrics": {k: {"value": v, "stderr": se} for k, (v, se) in metrics.items()}}
        for name, (n, metrics) in RESULTS.items()
    }
    memberships = {leaf.name: [g for g, _ in leaf.groups] for leaf in leaves}
    rules = {g: r for leaf in leaves for g, r in leaf.aggregation.items()}
    ours = aggregate_groups(entries, memberships, {}, rules)
    theirs = _theirs(tmp_path)
    assert set(ours) == set(theirs) == {"ga_outer", "ga_inner"}
    for group, their in theirs.items():
        keys = {k for k in their if "," in k and "_stderr," not in k}
        assert set(ours[group]["metrics"]) == keys  # the metrics lm-eval reports, no more
        for key in keys:
            entry = ours[group]["metrics"][key]
            assert entry["value"] == pytest.approx(their[key], rel=1e-12), (group, key)
            metric, _, filter_name = key.partition(",")
            stderr = their[f"{metric}_stderr,{filter_name}"]
            if stderr == "N/A":
                assert entry["stderr"] is None, (group, key)
            else:
                assert entry["stderr"] == pytest.approx(stderr, rel=1e-12), (group, key)
    # the numbers themselves: ga_outer's acc weighs 3, 8 and 21 rows; ga_inner's acc weighs b and c alike
    outer, inner = ours["ga_outer"]["metrics"], ours["ga_inner"]["metrics"]
    assert outer["acc,none"]["value"] == pytest.approx((2 + 4 + 0.9 * 21) / 32)
    assert outer["acc,flex"]["value"] == pytest.approx(0.25)  # only b has it
    assert outer["acc_norm,none"]["value"] == pytest.approx((1 / 3 + 0.75 + 0.8) / 3)
    assert outer["acc_norm,none"]["stderr"] is None  # b has none
    assert outer["exact_match,strict"]["value"] == pytest.approx((3 * 1.0 + 8 * 0.5) / 11)
    assert "exact_match,loose" not in outer  # filter_list names strict only
    assert inner["acc,none"]["value"] == pytest.approx(0.7)
    assert inner["acc,none"]["stderr"] == pytest.approx(math.sqrt(0.19**2 + 0.066**2) / 2)
    assert "acc_norm,none" not in inner  # its list names acc only
