"""Per-example runtime arguments for steering controls (``runtime_overrides``).

Shape: ``{ControlName: {kwarg: column}}`` where ``column`` names a field of the evaluation data,
or is a nested dict of the same shape (``{"params": {"instructions": "instructions"}}`` gives the
control ``params={"instructions": row["instructions"]}``).

Each *prompt* is matched to its evaluation row by the prompt's ``id`` — not by position — so a use
case that expands every row into several prompts (shuffles, repeats) gets the right arguments for
every one of them, in every retry round.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence, Union, cast

# What a control argument is taken from: a column of the row, or a dict of such (a nested argument).
ColumnSpec = Union[str, Mapping[str, "ColumnSpec"]]
# ``runtime_overrides`` as a use case is given it: {ControlName: {kwarg: ColumnSpec}}.
RuntimeOverrides = Mapping[str, Mapping[str, ColumnSpec]]


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _pull(spec: object, row: Mapping[str, object], where: str) -> object:
    if isinstance(spec, Mapping):
        return {k: _pull(v, row, where) for k, v in spec.items()}
    if not isinstance(spec, str):
        raise ValueError(f"runtime_overrides values must be column names or dicts of them, got {spec!r}")
    if spec not in row:
        raise ValueError(f"runtime_overrides: {where} has no column '{spec}' (columns: {sorted(row)})")
    return row[spec]


def resolve_overrides(
    runtime_overrides: RuntimeOverrides | None,
    prompt_data: Sequence[Mapping[str, object]],
    evaluation_data: Sequence[Mapping[str, object]] | None = None,
) -> list[dict[str, dict[str, object]]]:
    """For each prompt: ``{ControlName: {kwarg: value}}`` (empty dicts when there are no overrides).

    A prompt's row is the evaluation row with the same ``id``; prompts without an ``id`` use the
    row at the same position when there are as many rows as prompts, or their own fields when no
    evaluation data is given.
    """
    if not runtime_overrides:
        return [{} for _ in prompt_data]
    for control, mapping in runtime_overrides.items():
        if not isinstance(mapping, Mapping):
            raise ValueError(f"runtime_overrides['{control}'] must map control arguments to columns, got {mapping!r}")
    by_id: dict[str, Mapping[str, object]] = {}
    for row in evaluation_data or []:
        if "id" in row:
            by_id[_key(row["id"])] = row
    resolved = []
    for index, item in enumerate(prompt_data):
        if evaluation_data is None:
            row, where = item, f"prompt {index}"
        elif "id" in item:
            found = by_id.get(_key(item["id"]))
            if found is None:
                raise ValueError(
                    f"runtime_overrides: prompt {index} has id {item['id']!r}, which no evaluation row has"
                )
            row = found
            where = f"evaluation row with id {item['id']!r}"
        elif len(evaluation_data) == len(prompt_data):
            row, where = evaluation_data[index], f"evaluation row {index}"
        else:
            raise ValueError(
                "runtime_overrides: prompts need an 'id' matching their evaluation row "
                f"({len(prompt_data)} prompts, {len(evaluation_data)} rows)"
            )
        resolved.append(
            {
                control: cast("dict[str, object]", _pull(mapping, row, where))  # a mapping pulls a dict
                for control, mapping in runtime_overrides.items()
            }
        )
    return resolved
