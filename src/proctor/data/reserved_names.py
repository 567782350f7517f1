"""The names the reader gives fields of its own in every row: '_row' (``readers.ROW_KEY``), '_file'
(``readers.FILE_KEY``), and '_source' and '_path', which ``sources`` sets. A data column of one of these names
would be silently replaced by the reader's value, and a task reading it (`id: _row`, `breakdown: _file`) would read
the reader's, not the data's: such a column is refused where the file is read, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from proctor.core.errors import TaskDefinitionError

RESERVED = {
    "_row": "the row's line or record number",
    "_file": "the file's name",
    "_source": "the file's path below the glob",
    "_path": "the file's path",
}


def no_reserved(keys: Iterable[object], path: Path, line: int | None = None) -> None:
    """Refuse a data column named as one of the reader's own fields (the first row's keys, a CSV's header)."""
    taken = [k for k in keys if k in RESERVED]
    if taken:
        name = str(taken[0])
        raise TaskDefinitionError(
            f"the data has a column '{name}', a name the reader uses for {RESERVED[name]}: the column's values "
            f"would be silently replaced by it (a breakdown, an id or a template reading '{name}' gets the "
            f"reader's, not the data's); rename the column (e.g. '{name[1:]}')",
            file=path,
            line=line,
            field=name,
        )
