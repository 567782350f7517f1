"""Stop strings tried on the answer as the prompt asks the model to write it, not on the bare reference: a stop
that no reference holds can still end every answer before it starts, or miss the end of every answer.

- a prompt that asks for reasoning (step by step, think, explain) gets reasoning over several lines, then the
  answer phrase: a stop at the first line break ends it before 'The answer is' (few-shot examples that write
  their reasoning and answer on the cue's one line ask for one line, and are spared);
- few-shot examples that write each answer on the line after the cue ('Answer:\\n18') get an answer starting with
  a line break: a stop '\\n' ends every answer at once, empty;
- a prompt that starts with a cue ('Question:') gets the answer, then the next question (a base model goes on
  in the format it was shown): where no stop string occurs in that run-on, no extraction reads the answer out
  and exact match compares the whole text, every answer scores 0.

Only the first rows' prompts are read (``PROMPTS_READ``): the shapes are the template's, not a row's.
"""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from proctor.audit.metric_rules import metric_names
from proctor.audit.setting_rules import GenerationSettings, lmeval_config
from proctor.audit.subject import AuditSubject
from proctor.core.audit import Hit

PROMPTS_READ = 20
REASONING_LINES = "First, 3 + 7 = 10.\nThen 10 - 4 = 6.\n"  # how a zero-shot model lays out its steps
RUN_ON_WORDS = 5  # references of at most this many words (median) are short answers exact match compares whole
WHOLE_ANSWER_METRICS = frozenset({"exact_match", "em"})

# an explicit request for reasoning ('answer is' alone asks for a phrase, which fits on one line)
_ASKS_REASONING = re.compile(
    r"step[- ]by[- ]step|\bthink\b|\breasoning\b|\bexplain\b|show (?:your|the) work", re.IGNORECASE
)
# an example answer whose reasoning and answer phrase share the cue's line ('A: There are 15 ... The answer is 6.')
_ONE_LINE_EXAMPLE = re.compile(r"^[ \t]*(?:A|Answer|Solution)[ \t]*:[^\n]*\bthe answer is\b", re.IGNORECASE | re.M)
_LEADING_CUE = re.compile(r"\A\s*([^\W\d_][^\W\d_ ]{0,24}):")
_LAST_CUE = re.compile(r"([^\W\d_][^\W\d_ ]{0,24}):[ \t]*\Z")


def _read(subject: AuditSubject) -> list[str]:
    return [t for t in subject.prompt_texts[:PROMPTS_READ] if t]


def reasoning_cut(subject: AuditSubject, settings: GenerationSettings) -> Iterator[Hit]:
    """A stop inside the lines of reasoning the prompt asks for: 'The answer is' is never reached."""
    read = _read(subject)
    if not read or not all(_ASKS_REASONING.search(t) for t in read) or _ONE_LINE_EXAMPLE.search(read[0]):
        return
    stop = next((s for s in settings.stop if s and s.strip() and s in REASONING_LINES), None)
    stop = stop or next((s for s in settings.stop if s and s in REASONING_LINES.strip(" ")), None)
    if stop is None:
        return
    yield subject.at_line(
        settings.key,
        f"the prompt asks for reasoning (e.g. {_asks(read[0])!r}) and the stop string {stop!r} occurs inside it: "
        f"a model that reasons over several lines ({REASONING_LINES + 'The answer is ...'!r}) is stopped before "
        "its answer, which is then never extracted and scores 0; stop at a blank line or the next question instead",
        settings.stop_field,
    )


def _asks(text: str) -> str:
    match = _ASKS_REASONING.search(text)
    return match.group() if match else ""


def answer_after_break(subject: AuditSubject, settings: GenerationSettings) -> Iterator[Hit]:
    """Few-shot examples that put the answer on the line after the cue, under a stop at a line break."""
    read = _read(subject)
    stop = next((s for s in settings.stop if s and s.strip("\n") == "" and s.startswith("\n")), None)
    if not read or stop is None:
        return
    text = read[0].rstrip(" ")
    last = _LAST_CUE.search(text)
    if last is None:
        return
    cue = last.group(1) + ":"
    shown = [m.end() for m in re.finditer(re.escape(cue), text[: last.start()])]
    # the examples' answers: what follows each earlier cue, up to its first non-blank character
    after = [text[end : end + len(stop) + 2] for end in shown]
    if not after or not all(a.lstrip(" \t").startswith(stop) and a.strip() for a in after):
        return
    yield subject.at_line(
        settings.key,
        f"the few-shot examples write each answer on the line after {cue!r} ({text[shown[0] - len(cue) :][:40]!r}) "
        f"and the stop string is {stop!r}: a model that copies the format starts its answer with a line break, "
        "so generation stops at once and every answer is empty; put the examples' answers on the cue's line, "
        "or stop at a blank line",
        settings.stop_field,
    )


def _reads_answer_out(subject: AuditSubject) -> bool:
    """A regex or answer tag reads the answer out of longer text (lm-eval: a regex filter)."""
    extraction = subject.spec.extraction
    if subject.templated:
        return extraction is not None and bool(extraction.regex or extraction.answer_tag)
    filters = getattr(lmeval_config(subject), "filter_list", None) or []
    steps = [f for entry in filters if isinstance(entry, dict) for f in (entry.get("filter") or [])]
    return any(isinstance(f, dict) and f.get("function") in ("regex", "multi_choice_regex") for f in steps)


def _median_words(references: Sequence[tuple[str, ...]]) -> int:
    words = sorted(max(len(r.split()) for r in refs) for refs in references if refs)
    return words[len(words) // 2] if words else 0


def run_on_not_stopped(subject: AuditSubject, settings: GenerationSettings) -> Iterator[Hit]:
    """Stop strings, none of which occurs where the answer runs on into the next question the format shows."""
    read = _read(subject)
    if not read or not settings.stop or subject.use_chat or _reads_answer_out(subject):
        return
    if not WHOLE_ANSWER_METRICS & {name.lower() for name in metric_names(subject)}:
        return
    cue = _LEADING_CUE.match(read[0])
    if cue is None or len(cue.group(1)) < 2:  # 'Q:' itself: the stop is most likely that very cue
        return
    references = [s.references for s in subject.samples[:PROMPTS_READ]]
    if not 0 < _median_words(references) <= RUN_ON_WORDS:
        return
    run_on = f"\n{cue.group(1)}: "  # a single line break: a stop at a blank line ends '\n\nQuestion:' only
    if any(s and s in run_on for s in settings.stop):
        return
    yield subject.at_line(
        settings.key,
        f"none of the stop strings {list(settings.stop)!r} occurs where an answer runs on into the next question "
        f"({'<answer>' + run_on.rstrip()!r}, the cue the prompt starts with), no regex reads the answer out and "
        "exact match compares the whole text: a model that goes on in the format it was shown scores 0 however "
        f"right it is; add {cue.group(1) + ':'!r} or a line break to the stop strings",
        settings.stop_field,
    )
