"""``group.metric-not-shared``: a group whose members do not all compute one metric. A group's number for a
metric is an average over its members; where some members do not compute it, that number is not the group's:
proctor averages only the metrics every member has (the others' are dropped from the group without a word), and
lm-eval averages, for each metric its group's ``aggregate_metric_list`` names, the members that have it (a subset's
number under the group's name). Either way a reader of the group's table is misled. A group that names the metrics
it averages (``Task.resources[GROUP_METRICS]``, lm-eval's list) is read for those only: a member's other metric is
the member's own. Only a metric a harness reports by
default (acc, acc_norm, exact_match, f1, a perplexity) is named: one a member adds of its own (brier_score) is its
own, and the group leaving it out is what a reader expects. The members' metrics are known
before any task is prepared (``GroupMembers.of``); the finding is named once per group and metric set, at the
first member that lacks them."""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping, Sequence

from proctor.core.audit import Hit
from proctor.core.task import GROUP_METRICS, Task

RULE = "group.metric-not-shared"


def _metrics(task: Task, defaults: Mapping[str, Sequence[str]]) -> frozenset[str] | None:
    """The metrics a task computes: its own list, else its kind's defaults; None where unknown."""
    named = [m.name for m in task.spec.metrics]
    if named:
        return frozenset(named)
    default = defaults.get(task.spec.kind)
    return frozenset(default) if default else None


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def unshared_metrics(tasks: Sequence[Task], defaults: Mapping[str, Sequence[str]]) -> dict[str, list[Hit]]:
    """A task's name -> the hits naming a group of it whose members do not all compute a metric."""
    members: dict[str, list[tuple[Task, frozenset[str]]]] = defaultdict(list)
    unknown: set[str] = set()  # groups with a member whose metrics are not known: not compared
    declared: dict[str, frozenset[str]] = {}  # group -> the metric names it says it averages
    for task in tasks:
        metrics = _metrics(task, defaults)
        named = task.resources.get(GROUP_METRICS)
        for group, names in named.items() if isinstance(named, Mapping) else ():
            declared[group] = declared.get(group, frozenset()) | frozenset(map(str, names))
        for group in task.spec.group:
            if metrics is None:
                unknown.add(group)
            else:
                members[group].append((task, metrics))
    # the metrics a harness reports for a kind by default, the numbers a reader looks for in a group's row; one a
    # member adds of its own (brier_score beside acc) is that member's, and the group leaving it out is by design
    headline = {m for names in defaults.values() for m in names} - {"null_count"}
    out: dict[str, list[Hit]] = defaultdict(list)
    for group, tasks_metrics in members.items():
        if group in unknown or len(tasks_metrics) < 2 or len({t.spec.name for t, _ in tasks_metrics}) < 2:
            continue
        shared = frozenset.intersection(*(m for _, m in tasks_metrics))
        if not shared:
            continue  # no metric in common: the run says the group has no number
        every = frozenset.union(*(m for _, m in tasks_metrics))
        averaged = declared.get(group, headline)
        odd = sorted(m for m in every - shared if m.split(",")[0] in headline and m.split(",")[0] in averaged)
        if not odd:
            continue
        metric = odd[0]
        lacking = [t for t, m in tasks_metrics if metric not in m]
        having = [t.spec.name for t, m in tasks_metrics if metric in m]
        first = lacking[0]
        others = f" (and {', '.join(odd[1:4])})" if len(odd) > 1 else ""
        out[first.spec.name].append(
            Hit(
                f"group '{group}' averages its members, and '{metric}'{others} is computed by {_names(having)} "
                f"but not by {_names([t.spec.name for t in lacking])}: proctor drops a metric not every member has "
                f"from the group, so the group reports no '{metric}' without a word"
                + (
                    ", and lm-eval, whose group names the metric, averages the members that have it, a subset's "
                    "number under the group's name"
                    if group in declared
                    else ""
                )
                + "; give every member the same metrics",
                file=str(first.file) if first.file else None,
                line=first.lines.get("metrics", first.lines.get("name", first.line)),
                field="metrics",
            )
        )
    return dict(out)


def metric_notes(task: Task, unshared: Mapping[str, list[Hit]]) -> dict[str, list[Hit]]:
    hits = unshared.get(task.spec.name)
    return {RULE: list(hits)} if hits else {}
