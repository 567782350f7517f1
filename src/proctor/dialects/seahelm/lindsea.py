"""SEA-HELM's special roll-up for the ``linguistic-diagnostics`` competency (LINDSEA).

Per language:

- **pragmatics**: for each phenomenon (scalar_implicatures, presuppositions) the (correct, total) counts
  in the ``subcategories`` of the tasks ``pragmatic-single`` and ``pragmatic-pair`` are pooled;
  accuracy = correct / total; the overall accuracy is the mean over phenomena and
  ``normalized_accuracy`` = 100 * max((acc - 0.5) / 0.5, 0) (chance for the true/false questions is 0.5).
- **pragmatics-logprobs**: per phenomenon the mean over ``pragmatic-single-logprobs`` /
  ``pragmatic-pair-logprobs`` of the subcategory's ``average_cumulative_probabilities``; the overall
  value is the mean over phenomena.
- **LINDSEA** = mean over the categories present of: ``mp-r`` normalized_accuracy, ``mp-r-logprobs``
  average_cumulative_probabilities, pragmatics normalized_accuracy, pragmatics-logprobs
  average_cumulative_probabilities. It is the competency's score.

SEA-HELM computes either the plain or the log-prob pragmatics (whichever its first task is) and
crashes when a phenomenon or every category is missing; proctor computes each variant whose tasks
ran, averages over the phenomena that have data, and when no category is available reports the
competency with no score and a note.
"""

from __future__ import annotations

COMPETENCY = "linguistic-diagnostics"
PHENOMENA = ("scalar_implicatures", "presuppositions")
PRAGMATICS_TASKS = ("pragmatic-single", "pragmatic-pair")
PRAGMATICS_LOGPROB_TASKS = ("pragmatic-single-logprobs", "pragmatic-pair-logprobs")
MIN_SCORE = 0.5
CATEGORIES = (
    ("mp-r", "normalized_accuracy"),
    ("mp-r-logprobs", "average_cumulative_probabilities"),
    ("pragmatics", "normalized_accuracy"),
    ("pragmatics-logprobs", "average_cumulative_probabilities"),
)


def _subcategories(result: dict) -> dict:
    entry = (result.get("metrics") or {}).get("subcategories") or {}
    detail = entry.get("detail") if isinstance(entry, dict) else None
    return detail if isinstance(detail, dict) else {}


def _value(result: dict, metric: str) -> float | None:
    entry = (result.get("metrics") or {}).get(metric) or {}
    value = entry.get("value") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _counts(value: object) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return float(value[0]), float(value[1])
    if isinstance(value, dict) and "correct_count" in value and "total_count" in value:
        return float(value["correct_count"]), float(value["total_count"])
    return None


def pragmatics(tasks: dict[str, dict]) -> tuple[dict | None, list[str]]:
    """The pooled pragmatics category from the task results by task id, and notes."""
    present = [t for t in PRAGMATICS_TASKS if t in tasks]
    if not present:
        return None, []
    notes, subcategories, accuracies = [], {}, []
    for phenomenon in PHENOMENA:
        correct = total = 0.0
        for task in present:
            counts = _counts(_subcategories(tasks[task]).get(phenomenon))
            if counts is not None:
                correct, total = correct + counts[0], total + counts[1]
        if total <= 0:
            notes.append(f"pragmatics: no '{phenomenon}' rows in {', '.join(present)}")
            continue
        subcategories[phenomenon] = {"accuracy": correct / total, "correct_count": correct, "total_count": total}
        accuracies.append(correct / total)
    if not accuracies:
        return None, notes + ["pragmatics: no subcategory counts (the tasks' metric gave no 'subcategories')"]
    accuracy = sum(accuracies) / len(accuracies)
    normalized = max((accuracy - MIN_SCORE) / (1 - MIN_SCORE), 0.0)
    return {
        "accuracy": 100 * accuracy,
        "normalized_accuracy": 100 * normalized,
        "subcategories": subcategories,
        "tasks": present,
    }, notes


def pragmatics_logprobs(tasks: dict[str, dict]) -> tuple[dict | None, list[str]]:
    present = [t for t in PRAGMATICS_LOGPROB_TASKS if t in tasks]
    if not present:
        return None, []
    notes, subcategories, values = [], {}, []
    for phenomenon in PHENOMENA:
        found = []
        for task in present:
            inner = _subcategories(tasks[task]).get(phenomenon)
            if isinstance(inner, dict) and isinstance(inner.get("average_cumulative_probabilities"), (int, float)):
                found.append(float(inner["average_cumulative_probabilities"]))
        if not found:
            notes.append(f"pragmatics-logprobs: no '{phenomenon}' rows in {', '.join(present)}")
            continue
        subcategories[phenomenon] = {"average_cumulative_probabilities": sum(found) / len(found)}
        values.append(sum(found) / len(found))
    if not values:
        return None, notes
    return {
        "average_cumulative_probabilities": sum(values) / len(values),
        "subcategories": subcategories,
        "tasks": present,
    }, notes


def lindsea(tasks: dict[str, dict]) -> dict:
    """``tasks``: one language's linguistic-diagnostics task results by SEA-HELM task id.

    Returns {"value": LINDSEA score or None, "categories": {...}, "notes": [...]}.
    """
    categories: dict[str, dict] = {}
    notes: list[str] = []
    prag, more = pragmatics(tasks)
    notes += more
    prag_lp, more = pragmatics_logprobs(tasks)
    notes += more
    computed = {"pragmatics": prag, "pragmatics-logprobs": prag_lp}
    scores = []
    for category, metric in CATEGORIES:
        if category in computed:
            entry = computed[category]
            value = entry.get(metric) if entry else None
        else:
            entry = None
            value = _value(tasks[category], metric) if category in tasks else None
            if category in tasks and value is None:
                notes.append(f"{category}: no '{metric}' value")
        if value is None:
            continue
        categories[category] = {"value": float(value), "metric": metric, **({"detail": entry} if entry else {})}
        scores.append(float(value))
    if not scores:
        notes.append(
            "no LINDSEA category available (mp-r, mp-r-logprobs, pragmatic-single/pair[-logprobs]): "
            "linguistic-diagnostics has no score"
        )
        return {"value": None, "categories": categories, "notes": notes}
    return {"value": sum(scores) / len(scores), "categories": categories, "notes": notes}


class LindseaRule:
    """The roll-up rule (``proctor.scoring.rollup.RollupRule``): a language's linguistic-diagnostics
    competency scores as LINDSEA, not as the mean of its groups. Its tasks are given by SEA-HELM task id
    (the result name is ``<task id>/<lang>``)."""

    def member_key(self, name: str, result: dict, level_names: list[str]) -> str | None:
        if "competency" not in level_names:
            return None
        if result.get("dialect", "seahelm") != "seahelm" or result["rollup"]["levels"].get("competency") != COMPETENCY:
            return None
        return name.rsplit("/", 1)[0]

    def apply(self, entry: dict, tasks: dict[str, dict]) -> None:
        scored = lindsea(tasks)
        entry["value"] = scored["value"]
        entry["stderr"] = None
        entry.pop("bootstrap", None)
        entry["aggregation"] = "lindsea"
        entry["lindsea"] = {"categories": scored["categories"]}
        if scored["notes"]:
            entry["notes"] = scored["notes"]
        # the pragmatics groups show the pooled score rather than the mean of their tasks' (absent) metric
        for group, child in entry["children"].items():
            category = scored["categories"].get(group)
            if category is not None and "children" in child:
                child["value"], child["stderr"] = category["value"], None
                child.pop("bootstrap", None)
