"""The reply outcome tally: what a task's replies held besides a scoreable answer, counted once per task.

Every reply check (models/reply_checks.py) asks whether one reply is well formed. A reply can be well formed
and still mean nothing: log-probs that are all 0 (every choice ties, the pick is the tie-break's), the same
log-prob for every token, a generation the server withheld (``finish_reason: content_filter``, a refusal, a
tool call), an empty answer, the prompt echoed back, invisible characters around the answer, a ``<think>``
trace scored as the answer, a judge that never answers in its format. One such reply is the model's business;
a share of them is the server's, and the task's number then measures the server. So every task is tallied
here, whatever its kind or dialect: ``add`` sees each request and its result (the engine's requests, and a
``ModelExecutor``'s for task classes that call the model themselves), ``add_records`` the scored samples
(choices that tie, lettered replies, judge verdicts). The engine turns each outcome above its share into one
warning (console and results.json's ``warnings``) with the count and one example, and records every count in
results.json's ``outcomes`` (engine/task_warnings.py ``report_outcomes``).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from proctor.core.model_requests import GenerateRequest, GenerateResult, LoglikelihoodResult, RollingLoglikelihoodResult
from proctor.runs.answer_forms import EXACT_METRICS, digits_joined, holds_reference, loose, scored_zero
from proctor.runs.reply_text import THINK, is_echo, is_refusal, is_stray

__all__ = ["Count", "Kind", "OutcomeTally", "is_echo"]

WARN_SHARE = 0.10  # an outcome in at least this share of its replies (or samples) is a warning
ALWAYS = 0.0  # an outcome that is a warning at any count (a judge's unreadable verdict: a number made up)


@dataclass(frozen=True)
class Kind:
    share: float  # the share of ``n`` from which it is a warning
    what: str  # the message's middle: "<count> of <n> <what>"
    why: str  # what it does to the number


KINDS: dict[str, Kind] = {
    "withheld": Kind(
        WARN_SHARE,
        "generations were withheld by the server (no answer: {example})",
        "they were scored as wrong answers: the number measures what the server held back, not the model",
    ),
    "empty": Kind(WARN_SHARE, "generations were empty", "they were scored as wrong answers"),
    "cut_short": Kind(
        WARN_SHARE,
        "generations ended with finish_reason 'length' after fewer tokens than the max_tokens asked for ({example})",
        "a limit other than the task's stopped them (the model's window, a server's own cap) or the reply miscounts; "
        "an answer cut short is scored as it is (see samples.jsonl 'generation')",
    ),
    "at_limit": Kind(
        0.9,  # some answers of any model run to the limit; nearly all of them is the budget, not the model
        "scored generations stopped at their max_tokens before a stop string or the end of the text ({example})",
        "their answers may be cut off: a task whose answer comes at the end (a chain of thought) needs a larger "
        "max_tokens",
    ),
    "echo": Kind(
        WARN_SHARE,
        "generations start with their own prompt ({example})",
        "the server echoed the prompt (or the model repeated it) before any answer, and the whole text was scored",
    ),
    "stray_characters": Kind(
        WARN_SHARE,
        "generations hold control, byte-order-mark, zero-width or bidirectional control characters ({example})",
        "invisible characters make exact comparisons fail (and a bidirectional override reorders what is shown)",
    ),
    "refusal_text": Kind(
        WARN_SHARE,
        "generations are refusals written as text ({example})",
        "the server flagged none of them (no refusal field or finish_reason), so each was scored as a wrong answer: "
        "the number measures what the model declined, not what it knows",
    ),
    "not_nfc": Kind(
        WARN_SHARE,
        "generations are not in Unicode form NFC ({example})",
        "a letter written in another form (a decomposed accent, a precomposed Devanagari nukta) differs from the "
        "references' letters in exact comparisons",
    ),
    "think_marker": Kind(
        WARN_SHARE,
        "generations hold a think marker ({example}) while no --think-end-token is set",
        "the reasoning trace was scored as part of the answer: set --think-end-token",
    ),
    "zero_logprobs": Kind(
        # a sure model's one-token answer can round to 0 (bf16), but of a question's exclusive choices only one can
        # be sure: past half of the requests it is the server, not certainty
        0.51,
        "log-likelihood requests have log-prob 0 for every token ({example})",
        "a probability of 1 for every text is no score: choices tie and a perplexity is exactly 1",
    ),
    "flat_logprobs": Kind(
        WARN_SHARE,
        "log-likelihood requests give every one of their tokens the same log-prob ({example})",
        "scores then count tokens, not likelihoods",
    ),
    "one_logprob": Kind(
        ALWAYS,
        "token log-probs of the task all have one value ({example})",
        "a real model's log-probs vary: the scores count tokens, not likelihoods",
    ),
    "tied_choices": Kind(
        WARN_SHARE,
        "samples' best choices tie exactly ({example})",
        "the pick is the tie-break's (the first of them), not the model's; probsem's distribution_acc counts a "
        "tie as right, as probsem does",
    ),
    "no_letter": Kind(
        WARN_SHARE,
        "replies ({rate}) named no option letter and were scored as wrong",
        "the accuracy measures the reply format as much as the model (see samples.jsonl 'generation')",
    ),
    "unread": Kind(
        0.5,  # a strict extraction misses some replies of any real model: only most of them is news
        "answers had no part the task's extraction could read ({example})",
        "they were scored as wrong: the number measures the reply format, not the answers",
    ),
    "ambiguous_letter": Kind(
        WARN_SHARE,
        "lettered replies name more than one option, or a letter and an option text that disagree ({example})",
        "each was read by kinds/letter_reading.py's order (an answer cue's letter, a leading letter, the option's "
        "text, the first other letter): the reply does not settle which option the model meant, so its score is "
        "the reader's guess (samples.jsonl 'ambiguous')",
    ),
    "one_letter": Kind(
        ALWAYS,
        "lettered replies all named option {example}",
        "constant replies: the accuracy is the share of rows whose answer sits at that letter",
    ),
    "near_miss": Kind(
        WARN_SHARE,
        "answers scored 0 by exact match equal a reference but for letter case, a letter's form or punctuation the "
        "metric's normalisation does not remove ({example})",
        "the metric keeps these differences (as its upstream definition does: '«Paris»', 'İstanbul', '巴黎。', "
        "'O’Hare'), so such answers score as wrong and the number measures typography as much as the model",
    ),
    "holds_reference": Kind(
        WARN_SHARE,
        "answers scored 0 by exact match hold a reference inside more text ({example})",
        "exact match compares the whole answer, so a right answer written in a sentence, after 'Answer:', in "
        "\\boxed{} or beside a chat marker scores 0 and the number measures the reply's form; an extraction step (a "
        "regex filter) or a containment metric reads the answer",
    ),
    "digits_joined": Kind(
        ALWAYS,
        "answers scored right by exact match write another number than their reference ({example})",
        "the metric's normalisation (SQuAD's) deletes the mark between digits, so '4.2' matches '42': they count as "
        "right though they are different numbers (a numeric metric or an extraction that keeps the point reads them)",
    ),
    "cut_wrong": Kind(
        0.25,
        "scored generations stopped at their max_tokens and scored 0 ({example})",
        "the answer may have been cut off before it was given: a larger max_tokens (or a stop string after the "
        "answer) lets it be written",
    ),
    "judge_errors": Kind(
        ALWAYS,
        "judge verdicts could not be read ({example})",
        "each counts as a loss (SEA-HELM's rule) or is left out (NaN: a sampled AISteer360 judge's, after its "
        "retries), so the judged metric is not the judge's view",
    ),
    "judge_clamped": Kind(
        ALWAYS,
        "judge verdicts were outside the metric's scale and clamped to it ({example})",
        "the judge rated on another scale than the rubric's; AISteer360 clamps such scores too, so the number is "
        "upstream's, but it is not the judge's view on the rubric's scale",
    ),
    "judge_not_yes_no": Kind(
        ALWAYS,
        "yes/no judge verdicts started with neither 'yes' nor 'no' ({example})",
        "each was scored 0 (not 'yes'), as AISteer360 reads them, so the rate counts the judge's reply format as "
        "much as the answers",
    ),
    "judge_constant": Kind(
        ALWAYS,
        "judge verdicts have one value over answers that differ ({example})",
        "a judge that gives every answer the same verdict tells none apart: the judged metric is that value, "
        "whatever the answers",
    ),
    "judge_flips": Kind(
        WARN_SHARE,
        "judged pairs changed their verdict when the answers swapped places",
        "the judge picks a position, not an answer (pure position bias gives a win rate of 50)",
    ),
}
NO_LETTER_SHARE = 0.10  # lettered generation: above this share (not at it) of unreadable replies, a warning


@dataclass
class Count:
    count: int = 0
    n: int = 0
    example: str | None = None

    def add(self, hit: bool, example: str | None = None) -> None:
        self.n += 1
        if hit:
            self.count += 1
            if self.example is None and example is not None:
                self.example = example


def _shown(text: str, width: int = 60) -> str:
    shown = json.dumps(text, ensure_ascii=True)  # escapes show the invisible characters
    return shown if len(shown) <= width else shown[: width - 4] + '..."'


class OutcomeTally:
    """Counts per outcome (``KINDS``) over one task's requests and samples."""

    def __init__(self, think_end_token: str | None = None) -> None:
        self.think_end_token = think_end_token
        self.counts: dict[str, Count] = {}
        self._values: set[float] = set()  # distinct token log-probs seen (at most two kept: one value is the news)
        self._tokens = 0

    def _count(self, key: str) -> Count:
        return self.counts.setdefault(key, Count())

    def add(self, requests: Sequence[object], results: Sequence[object]) -> None:
        for request, result in zip(requests, results):
            if isinstance(result, GenerateResult):
                self._generation(request, result)
            elif isinstance(result, (LoglikelihoodResult, RollingLoglikelihoodResult)):
                self._loglikelihood(result.logprob, result.n_tokens, result.token_logprobs)

    def _generation(self, request: object, result: GenerateResult) -> None:
        text = result.text or ""
        withheld = getattr(result, "withheld", None)
        self._count("withheld").add(withheld is not None, withheld)
        self._count("empty").add(withheld is None and not text.strip())
        asked = request.max_tokens if isinstance(request, GenerateRequest) else 0
        got = result.completion_tokens  # 0: the reply did not count them
        cut = result.finish_reason == "length" and 0 < got < asked
        self._count("cut_short").add(cut, f"{got} of {asked} tokens: {_shown(text)}")
        prompt = request.prompt if isinstance(request, GenerateRequest) else ""
        self._count("echo").add(is_echo(text, prompt), _shown(text))
        self._count("stray_characters").add(is_stray(text), _shown(text))
        self._count("refusal_text").add(is_refusal(text), _shown(text))
        self._count("not_nfc").add(not unicodedata.is_normalized("NFC", text), _shown(text))
        if self.think_end_token is None:
            self._count("think_marker").add(THINK.search(text) is not None, _shown(text))

    def _loglikelihood(self, logprob: float, n_tokens: int, tokens: Sequence[float]) -> None:
        if n_tokens <= 0:
            return
        shown = f"{n_tokens} token(s), log-probs {list(tokens)[:4]}" if tokens else f"log-prob {logprob}"
        zero = logprob == 0.0
        self._count("zero_logprobs").add(zero, shown)
        self._count("flat_logprobs").add(not zero and len(tokens) >= 2 and len(set(tokens)) == 1, shown)
        if len(self._values) < 2:
            self._values.update(tokens)
        self._tokens += len(tokens)

    def add_records(self, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            self._choices(record)
            self._judged(record)
            if record.get("mc_format") == "generate" and "extracted" in record:
                self._count("no_letter").add(record["extracted"] is None)
                ambiguous = record.get("ambiguous")
                text = record.get("generation")
                shown = f"{_shown(text) if isinstance(text, str) else ''}: {ambiguous}"
                self._count("ambiguous_letter").add(isinstance(ambiguous, str), shown)
                continue  # a lettered reply is read by kinds/letter_reading.py, whatever else it holds
            if isinstance(record.get("finish_reason"), str) and isinstance(record.get("generation"), str):
                cut = record["finish_reason"] == "length"
                self._count("at_limit").add(cut, _shown(record["generation"]))
                self._count("cut_wrong").add(cut and scored_zero(record), _shown(record["generation"]))
            self._answer_forms(record)
            if isinstance(record.get("parsed"), bool) and isinstance(text := record.get("generation"), str):
                self._count("unread").add(not record["parsed"] and bool(text.strip()), _shown(text))

    def _answer_forms(self, record: Mapping[str, Any]) -> None:
        """An exact-match answer against its references (runs/answer_forms.py): right but for typography, holding
        a reference inside more text, or scored right as another number."""
        scores = record.get("metrics")
        answer = record.get("extracted", record.get("generation"))
        target = record.get("target")
        refs = [target] if isinstance(target, str) else target if isinstance(target, list) else []
        if not isinstance(scores, Mapping) or not isinstance(answer, str) or not refs:
            return
        exact = [v for k, v in scores.items() if str(k).split(",")[0] in EXACT_METRICS and isinstance(v, (int, float))]
        if not exact:
            return
        shown = f"{_shown(answer)} for {_shown(str(refs[0]))}"
        flat = loose(answer)
        missed = exact[0] == 0 and bool(flat) and any(isinstance(r, str) and loose(r) == flat for r in refs)
        self._count("near_miss").add(missed, shown)
        self._count("holds_reference").add(exact[0] == 0 and not missed and holds_reference(answer, refs), shown)
        self._count("digits_joined").add(exact[0] == 1 and digits_joined(answer, refs), shown)

    def _choices(self, record: Mapping[str, Any]) -> None:
        scores = record.get("logprobs")
        if not isinstance(scores, list) or len(scores) < 2 or not all(isinstance(s, (int, float)) for s in scores):
            return
        top = max(scores)
        tied = sum(1 for s in scores if s == top) >= 2
        self._count("tied_choices").add(tied, f"sample {record.get('id')}: {scores[:4]}")

    def _judged(self, record: Mapping[str, Any]) -> None:
        judged = record.get("judgements")
        if not isinstance(judged, list):
            return
        for entry in judged:
            if not isinstance(entry, Mapping):
                continue
            verdicts = entry.get("verdicts")
            texts = entry.get("judgements") or []
            if isinstance(verdicts, list):  # pairwise: both orders, the second already mapped back
                for k, verdict in enumerate(verdicts):
                    text = texts[k] if k < len(texts) and isinstance(texts[k], str) else ""
                    self._count("judge_errors").add(verdict == "ERROR", f"sample {record.get('id')}: {_shown(text)}")
                if len(verdicts) == 2 and set(verdicts) == {"W", "L"}:
                    self._count("judge_flips").add(True)
                elif len(verdicts) == 2 and "ERROR" not in verdicts:
                    self._count("judge_flips").add(False)
            elif "classification" in entry:  # criteria judging: one verdict per criterion
                self._count("judge_errors").add(entry["classification"] == "ERROR", f"sample {record.get('id')}")

    def merge(self, counts: Mapping[str, Count]) -> None:
        """Counts kept elsewhere (an AISteer360 judge metric's verdicts, dialects/aisteer/verdicts.py) added to the
        task's: the first example kept."""
        for key, other in counts.items():
            mine = self._count(key)
            mine.count += other.count
            mine.n += other.n
            if mine.example is None:
                mine.example = other.example

    def lettered(self) -> Count | None:
        """Lettered generation's unreadable replies (results.json's ``unparsed``); None: no lettered replies."""
        found = self.counts.get("no_letter")
        return found if found is not None and found.n else None

    def one_letter(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Lettered replies that all name one option while the right answers vary (a constant reply)."""
        lettered = [r for r in records if r.get("mc_format") == "generate" and r.get("extracted") is not None]
        orders = [r.get("option_order") for r in lettered]
        if any(isinstance(order, list) and order != sorted(order) for order in orders):
            return  # --mc-shuffle: a constant letter lands on a random option, which is what shuffling is for
        targets = {str(r.get("target")) for r in lettered}
        letters = {str(r["extracted"]) for r in lettered}
        if len(lettered) >= 10 and len(letters) == 1 and len(targets) > 1:
            self.counts["one_letter"] = Count(len(lettered), len(lettered), next(iter(letters)))

    def finish(self) -> None:
        """Task-wide: every token log-prob one value (a constant, not a model), other than the 0 counted above."""
        if self._tokens >= 8 and len(self._values) == 1 and 0.0 not in self._values:
            self.counts["one_logprob"] = Count(self._tokens, self._tokens, f"{next(iter(self._values))}")

    def warned(self) -> list[tuple[str, Count, str]]:
        """(outcome, its count, the warning) for each outcome at or above its share."""
        out = []
        lettered = self.lettered() is not None  # an empty lettered reply names no letter: said once, there
        for key, count in self.counts.items():
            kind = KINDS[key]
            said = (key == "empty" and lettered) or (key == "flat_logprobs" and "one_logprob" in self.counts)
            if not count.count or not count.n or said:  # (one_logprob: the stronger statement of the same)
                continue
            rate = count.count / count.n
            over = rate > NO_LETTER_SHARE if key == "no_letter" else rate >= kind.share
            if not over:
                continue
            what = kind.what.format(example=count.example or "", rate=f"{rate:.0%}")
            out.append((key, count, f"{count.count} of {count.n} {what}; {kind.why}"))
        return out

    def as_json(self) -> dict[str, dict[str, object]]:
        """Every outcome seen at least once: results.json's ``outcomes``."""
        return {
            key: {"count": c.count, "n": c.n, **({"example": c.example} if c.example else {})}
            for key, c in self.counts.items()
            if c.count and key != "no_letter"  # lettered generation keeps its own ``unparsed``
        }
