"""Where a task's samples come from, as its spec says (``TaskSpec.data``, and a few-shot ``source``): a local
file, folder or glob, or a hub dataset, with the joins, fields, filter and ids its rows are read with
(``data/sources.py`` reads them), and how few-shot examples are drawn.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from proctor.core.frozen_spec import FrozenSpec
from proctor.core.names import first_repeat


class DataSpec(FrozenSpec):
    """Where samples come from. ``path`` (local) or ``hub`` (Hugging Face dataset id)."""

    path: str | None = None
    hub: str | None = None
    subset: str | None = None
    split: str | None = None
    format: Literal["auto", "jsonl", "json", "csv", "tsv", "parquet", "arrow", "text"] = "auto"
    columns: list[str] | None = None  # names for header-less csv/tsv (e.g. MMLU)
    records_key: str | None = None  # json: the key holding the list of records
    join: list[str] = Field(default_factory=list)  # row-aligned files whose columns are added
    fields: dict[str, str] = Field(default_factory=dict)  # new field -> Jinja expression
    filter: str | None = None  # Jinja expression; rows where it is false are dropped (and counted)
    id: str | None = None  # column holding the sample id; default: file + row number
    constants: dict[str, Any] = Field(default_factory=dict)  # fields with the same value in every row

    @field_validator("join", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("columns")
    @classmethod
    def _columns_once(cls, value: list[str] | None) -> list[str] | None:
        repeat = first_repeat(value or [])
        if repeat is not None:  # a row would keep only the last of the columns so named
            raise ValueError(f"'columns' names the column '{repeat[1]}' twice")
        return value

    @field_validator("filter")
    @classmethod
    def _filter_is_template(cls, value: str | None) -> str | None:
        if value is not None and "{{" not in value and "{%" not in value:  # plain text: true for every row
            raise ValueError(
                f"'filter' is an expression in braces, such as \"{{{{ {value} }}}}\"; "
                f"plain text {value!r} keeps every row"
            )
        return value

    @model_validator(mode="after")
    def _has_source(self) -> "DataSpec":
        if not self.path and not self.hub:
            raise ValueError("a data source needs 'path' (a local file, folder or glob) or 'hub' (a dataset id)")
        if not self.hub and (self.split is not None or self.subset is not None):
            which = "split" if self.split is not None else "subset"
            raise ValueError(  # a local file has no splits: the whole file would be read, without a word
                f"'{which}' chooses part of a hub dataset, but this source has no 'hub': a local file is read whole "
                "(give each split its own file)"
            )
        return self


class FewShotSpec(FrozenSpec):
    """Few-shot examples, drawn per sample with a seed derived from the sample id."""

    count: int = Field(ge=0)
    source: DataSpec | None = None  # default: the task's own data, never the sample itself
    seed: int = 1234
    separator: str = "\n\n"
    template: str | None = None  # default: prompt + target_delimiter + gold answer
