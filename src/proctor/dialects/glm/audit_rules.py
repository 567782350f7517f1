"""The GLM-130B dialect's audit rule: prompt folders of one dataset that hold different rows.

GLM-130B keeps each prompt of a dataset in a folder of its own (``prompt_1/test.jsonl``, ``prompt_2/test.jsonl``)
and reports, per ``file-pattern`` group, the max and the median over its files (``dialect.py``). Prompts of one
dataset are compared on the same rows only where each folder holds them all: a folder holding 10 rows beside one
holding 40 is scored on a quarter of the questions, and the max picks whichever set was easier. Files of one name in
several folders are taken as one dataset's prompts; files of different names in a group (MMLU's subjects) are
different datasets, whose sizes differ by design.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import PurePosixPath
from typing import Any, Iterator

from proctor.core.audit import Hit


def prompt_rows(subject: Any) -> Iterator[Hit]:
    """Files of one name in several folders (one dataset's prompts) holding different numbers of rows."""
    counts: Counter[str] = Counter(str(s.sample.fields.get("_source") or "") for s in subject.samples)
    by_name: dict[str, list[str]] = defaultdict(list)
    for source in counts:
        if source:
            by_name[PurePosixPath(source).name].append(source)
    for name, sources in by_name.items():
        if len(sources) < 2 or len({counts[s] for s in sources}) < 2:
            continue
        most = max(sources, key=lambda s: counts[s])
        least = min(sources, key=lambda s: counts[s])
        yield Hit(
            f"the prompt folders of '{name}' hold different rows: {least} has {counts[least]} and {most} "
            f"{counts[most]} ({len(sources)} folders): GLM-130B's max and median over the prompts then compare "
            "scores on different questions, and the max favours the easier set; give every prompt folder the "
            "same rows",
            file=str(subject.task.file) if subject.task.file else None,
            line=subject.task.lines.get("data", subject.task.line),  # its file-pattern
            field="file-pattern",
        )
