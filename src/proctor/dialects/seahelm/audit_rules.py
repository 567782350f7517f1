"""The SEA-HELM dialect's audit rule: the few-shot examples SEA-HELM shows a base model are evaluated rows; and
what its rows hold for the generic rules over paired fields (``field_view``: the samples carry none of them).

SEA-HELM reads a task's examples (its ``examples`` split, ``example_filepath``) only when a base model runs
(``fewshot_num_examples: {base: 5, instruct: 0}``), so the generic ``fewshot.*`` rules, which read a native
task's ``fewshot:``, cannot see them. This rule reads them as a base model's run would, before any model loads.
"""

from __future__ import annotations

import contextlib
import json
import string
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from proctor.core.audit import Hit
from proctor.dialects.seahelm.rows import as_rows

if TYPE_CHECKING:
    from proctor.audit.field_pairs import FieldView
    from proctor.audit.subject import AuditSubject
    from proctor.prompts.builder import PreparedSample

BASE_DEFAULT = 5  # SEA-HELM's examples for a base model where the config gives no count (task._make_loader)


def _key(row: object) -> str:
    """A row's content without its id: a copy under another id is the same item."""
    if not isinstance(row, dict):
        return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
    return json.dumps({k: v for k, v in row.items() if k != "id"}, sort_keys=True, ensure_ascii=False, default=str)


def at_examples(subject: AuditSubject, message: str) -> Hit:
    """A hit at the task config's line, naming its ``example_filepath`` (the examples split a base model is shown)."""
    return Hit(message, file=subject.file, line=subject.task.line, field="example_filepath")


def _shown_count(config: object) -> int:
    counts = config.get("fewshot_num_examples") if isinstance(config, dict) else None
    if not isinstance(counts, dict) or not counts:
        return BASE_DEFAULT
    return max((int(v) for v in counts.values() if isinstance(v, (int, str)) and str(v).isdigit()), default=0)


@dataclass(frozen=True)
class _Examples:
    """What a base model's run would show: the evaluated run's loader, a fresh base-model loader, every row of its
    examples split, and how many a base model is shown."""

    loader: Any
    base: Any
    rows: list[Any]
    shown: int


# one reading of the examples file per task for both rules (a handler is one task's)
_READ: weakref.WeakKeyDictionary[Any, _Examples | None] = weakref.WeakKeyDictionary()


def _base_examples(handler: Any) -> _Examples | None:
    """The examples as a base model's run reads them; None where the task shows a base model none, has no examples
    file, or SEA-HELM cannot read it (which a base model's run reports)."""
    try:
        return _READ[handler]
    except (KeyError, TypeError):
        pass
    loader = getattr(handler, "dataloader", None)
    shown = _shown_count(getattr(handler, "config", None))
    read: _Examples | None = None
    if loader is not None and shown > 0:
        try:
            base = handler._make_loader(True)  # a fresh base-model loader: the evaluated run's is left as it is
            if base.specific_task_config.get("example_filepath"):
                handler._plugin_call(base.load_example_dataset, "load_example_dataset", limit=None)
                read = _Examples(loader, base, as_rows(base.example_dataset), shown)
            else:  # examples asked for and no file to draw them from: a base model's run shows none
                read = _Examples(loader, base, [], shown)
        except Exception:  # noqa: BLE001 - examples SEA-HELM cannot read are reported when a base model runs
            read = None
    with contextlib.suppress(TypeError):  # a handler that takes no weak reference is read again by the other rule
        _READ[handler] = read
    return read


def examples_too_few(subject: AuditSubject) -> Iterator[Hit]:
    """The examples file holds fewer rows than a base model is to be shown (an empty file for five): the run
    shows what there is, with no word, and its prompts are not the benchmark's."""
    read = _base_examples(subject.handler)
    if read is None or len(read.rows) >= read.shown:
        return
    if not read.base.specific_task_config.get("example_filepath"):
        yield at_examples(
            subject,
            f"fewshot_num_examples asks for {read.shown} example(s) for a base model, and the task names no "
            "example_filepath: a base model's run (--base-model, or a model without a chat template) is 0-shot, "
            "not the benchmark's; name the examples file, or set the base count to 0",
        )
        return
    yield at_examples(
        subject,
        f"the examples split ({read.base.specific_task_config.get('example_filepath')}) holds {len(read.rows)} "
        f"row(s), and a base model is to be shown {read.shown} (fewshot_num_examples): its prompts get "
        f"{len(read.rows)} example(s), not the benchmark's",
    )


def examples_are_evaluated(subject: AuditSubject) -> Iterator[Hit]:
    read = _base_examples(subject.handler)
    if read is None:
        return
    examples = read.rows[: read.shown]
    evaluated = {_key(row) for row in as_rows(read.loader.dataset)}
    shared = [i for i, row in enumerate(examples) if _key(row) in evaluated]
    if shared:
        path = read.base.specific_task_config.get("example_filepath")
        yield at_examples(
            subject,
            f"{len(shared)} of the {len(examples)} few-shot examples SEA-HELM shows a base model (the 'examples' "
            f"split of {path}) are evaluated rows: a base model is shown test items with their answers (an instruct "
            "model is shown no examples)",
        )


def _template_fields(template: object) -> frozenset[str]:
    """The row fields a ``task_template`` fills (``{sentence1}``): Python's format fields."""
    if not isinstance(template, str):
        return frozenset()
    try:
        return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)
    except ValueError:
        return frozenset()


def field_view(handler: Any, samples: Sequence[PreparedSample]) -> FieldView | None:
    """The rows as SEA-HELM reads them (its dataloader's, one per sample, in order): a row's fields beside its first
    turn's prompt fields, which the language's ``task_template`` fills; ``label`` paired with its text
    (``text_label``)."""
    from proctor.audit.field_pairs import FieldView, named_pairs

    rows = as_rows(getattr(getattr(handler, "dataloader", None), "dataset", None))
    if not rows or len(rows) != len(samples):
        return None
    settings = handler.config["languages"][handler.lang]
    shown = _template_fields((settings.get("prompt_template") or {}).get("task_template"))
    fields = []
    for prepared, row in zip(samples, rows):
        turns = row.get("prompts") if isinstance(row, dict) else None
        first = turns[0] if isinstance(turns, list) and turns and isinstance(turns[0], dict) else {}
        fields.append((prepared.sample, {**{k: v for k, v in row.items() if k != "prompts"}, **first}))
    return FieldView(fields, shown, named_pairs(fields[0][1], frozenset({"label"})))
