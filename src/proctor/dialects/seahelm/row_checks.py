"""Checks of a SEA-HELM task's data rows once its dataloader has read them, before any model runs: a row
without the label its siblings have, a label of another type than theirs, and ``prompts`` that are not a
list of objects. Each error names the data file, the row (1-based) and the field."""

from __future__ import annotations

from proctor.core.errors import TaskDefinitionError


def check_labels(rows: list, data: str | None) -> None:
    """A row without the label its siblings have would be scored as a miss: an error naming it.
    (Judge tasks, whose rows have no labels at all, are not affected.)"""

    def missing(row: object) -> bool:
        label = row.get("label") if isinstance(row, dict) else None
        return label is None or (isinstance(label, float) and label != label)

    absent = [i for i, row in enumerate(rows) if missing(row)]
    if absent and len(absent) < len(rows):
        raise TaskDefinitionError(
            f"has no 'label' (null, NaN or absent) while {len(rows) - len(absent)} other rows "
            "have one; it would be scored as a miss",
            file=str(data) if data else None,
            row=absent[0] + 1,
            field="label",
        )
    # a number among text labels (3 among "Positif", "Negatif") matches no class: a miss, or an error mid-run
    labels = [row.get("label") if isinstance(row, dict) else None for row in rows]
    if any(isinstance(label, str) for label in labels):
        odd = next((i for i, x in enumerate(labels) if x is not None and not isinstance(x, (str, list))), None)
        if odd is not None:
            raise TaskDefinitionError(
                f"the label is {type(labels[odd]).__name__} {labels[odd]!r:.60} while other rows' labels are text",
                file=str(data) if data else None,
                row=odd + 1,
                field="label",
            )


def check_prompts(rows: list, data: str | None) -> None:
    """Each row's ``prompts`` is a list of objects (one per turn) whose fields fill ``task_template``; a text or
    a number there would fail inside ``str.format`` (SEA-HELM stops with a TypeError): an error naming the row."""
    for i, row in enumerate(rows):
        prompts = row.get("prompts") if isinstance(row, dict) else None
        if prompts is None:
            continue
        if not isinstance(prompts, list):
            problem = f"'prompts' must be a list of objects (one per turn), got {type(prompts).__name__}"
        else:
            odd = next((t for t, p in enumerate(prompts) if not isinstance(p, dict)), None)
            if odd is None:
                continue
            problem = (
                f"'prompts' item {odd} is {type(prompts[odd]).__name__} {prompts[odd]!r:.60}: each turn is an "
                "object whose fields fill the prompt template's task_template"
            )
        raise TaskDefinitionError(problem, file=str(data) if data else None, row=i + 1, field="prompts")
