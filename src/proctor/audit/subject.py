"""What the audit rules look at: one prepared task, as every dialect leaves it before a model loads."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping, Sequence

from proctor.audit.columns import Columns
from proctor.audit.fixed_text import fixed_text
from proctor.audit.row_choices import RowChoices, listed
from proctor.audit.row_scan import RowScan, scan_rows
from proctor.core.audit import Hit
from proctor.core.task import Task
from proctor.core.task_spec import TaskSpec
from proctor.data.sources import Sample, SourceStats
from proctor.prompts.builder import PreparedSample

# fields a reader adds to every row (its line, file, path): not the row's content
READER_FIELDS = frozenset({"_row", "_file", "_path", "_source"})
_SPACES = re.compile(r"\s+")


# characters a reader does not see: zero-width spaces and joiners, direction marks, soft hyphens, a BOM
INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
# letters of other scripts drawn like Latin ones ("В" is Cyrillic): a reader takes them for the Latin letter
_LOOK_ALIKES = str.maketrans(
    "АВЕКМНОРСТХаеорсухіјѕԁΑΒΕΖΗΙΚΜΝΟΡΤΥΧοι",
    "ABEKMHOPCTXaeopcyxijsdABEZHIKMNOPTYXoi",
)
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}«»“”‘’"


def loose(text: str) -> str:
    """A text as a reader sees it: Unicode's compatibility forms (NFKC: composed accents, full-width digits,
    no-break spaces), invisible characters dropped, case and runs of whitespace ignored ("Paris " and "paris"
    are one answer)."""
    if text.isascii():
        return _SPACES.sub(" ", text).strip().casefold()
    text = INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return _SPACES.sub(" ", text).strip().casefold()


def _case_forms(text: str) -> set[str]:
    return {text, text.lower(), text.upper(), text[:1].upper() + text[1:], text[:1].lower() + text[1:], text.title()}


def reads_alike(a: str, b: str) -> bool:
    """Whether two texts that ``loose`` makes one are one answer to a reader: the same up to spacing, or one a
    plain change of case of the other ('Paris' / 'PARIS', 'blue' / 'Blue'). Where the case itself is what differs
    ('Cc or cc' / 'CC or Cc', a genotype; 'US' / 'us'), they are two answers."""
    a, b = (" ".join(INVISIBLE.sub("", unicodedata.normalize("NFKC", t)).split()) for t in (a, b))
    return a == b or b in _case_forms(a) or a in _case_forms(b)


def near(text: str) -> str:
    """``loose``, and what else a reader would not tell apart: quotes and punctuation at either end, letters
    of other scripts drawn like Latin ones, a number's spelling ("4" and "4.0")."""
    key = loose(text.translate(_LOOK_ALIKES)).strip(_EDGE_PUNCTUATION).strip()
    try:
        number = float(key)
    except ValueError:
        return key
    return repr(number) if number == number else key


class OfTask:
    """What a subject says of its task file: the spec, the file, a setting's line, a hit there (``AuditSubject``
    before the model loads, ``model_rules.ModelSubject`` after)."""

    task: Task

    @property
    def spec(self) -> TaskSpec:
        return self.task.spec

    @property
    def file(self) -> str | None:
        return str(self.task.file) if self.task.file else None

    def line(self, key: str) -> int | None:
        """The task file's line of ``key`` (or the task's own line)."""
        return self.task.lines.get(key, self.task.line)

    def at_line(self, key: str, message: str, field: str | None = None) -> Hit:
        """A hit at the task file's line of ``key`` (a setting of the task), naming ``field`` (default ``key``)."""
        return Hit(message, file=self.file, line=self.line(key.split(".")[0]), field=field or key)


@dataclass(frozen=True)
class AuditSubject(OfTask):
    """A task after ``engine/prepare``: its spec and file, the samples it will evaluate (prompts, choices, gold
    indices, references), every row its source gave (before ``--limit``), and the few-shot pool."""

    task: Task
    samples: Sequence[PreparedSample]
    rows: Sequence[Sample]
    pool: Sequence[Sample]
    pool_is_own: bool  # the few-shot pool is the evaluated data itself (no fewshot.source)
    stats: SourceStats
    # what the data reader noticed (a join's key order), by rule id
    source_hits: Mapping[str, Sequence[Hit]] = dataclasses.field(default_factory=dict)
    handler: Any = None  # the dialect's handler that gave the samples (a dialect's own rules read what it built)
    epochs: int = 1  # generate tasks: samples drawn per row (--epochs)
    use_chat: bool = False  # prompts go through the model's chat template (the task file's chat, or the command's)
    # the choices are contexts the prompt's text follows (lm-eval's multiple_input, shown by its audit view)
    choices_lead: bool = False

    def at_row(self, sample: Sample, message: str, field: str) -> Hit:
        """A hit at one data row (its file and row), naming ``field`` and the sample's id."""
        return Hit(message, file=sample.file or self.file, row=sample.row, field=field, sample=sample.id)

    @property
    def templated(self) -> bool:
        """Whether the task's own templates made the texts (native YAML), not a dialect's handler."""
        return self.spec.handler is None and self.spec.task_class is None

    @cached_property
    def columns(self) -> Columns:
        """Each part of every sample as one column, read once for all rules (``columns.py``)."""
        return Columns(self.samples)

    @property
    def scored(self) -> list[PreparedSample]:
        """Multiple-choice samples with a right answer (unscored ones, ``unscored_target``, have none)."""
        return self.columns.scored

    @cached_property
    def scan(self) -> RowScan:
        """The rows the per-row rules look at closely (one pass over every row: ``row_scan.py``)."""
        return scan_rows(self.samples, self.prompt_texts, near, self.columns)

    @cached_property
    def fixed_text(self) -> tuple[str, str]:
        """The template's own text: (prefix, suffix) every prompt shares, in whole lines (``fixed_text.py``)."""
        return fixed_text(self.columns.prompt_texts)

    @cached_property
    def listed_choices(self) -> Sequence[RowChoices]:
        """The choices rows list that their samples do not carry (a use case's rows: ``listed_choices.py``)."""
        return listed(self.handler, self.samples) if self.handler is not None else ()

    @property
    def prompt_texts(self) -> list[str]:
        """Each sample's prompt as text (chat messages joined), for rules that read what the model is shown."""
        return self.columns.prompt_texts

    def forget_columns(self) -> None:
        """Drop what the rules shared (the columns, the scan, the template's text), read again if asked. The
        stage calls it once the rules have run, before the cyclic collector is back on: the columns are lists of
        100,000 rows each, made while it was off, and its next pass would walk every one of them (16 ms at
        100,000 rows) while the subject lives on in ``engine/prepare``."""
        for name in ("columns", "scan", "fixed_text"):
            self.__dict__.pop(name, None)
