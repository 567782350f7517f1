"""Pull the answer out of generated text: by regex, by an answer tag, or both."""

from __future__ import annotations

from proctor.core.bounded_regex import BoundedPattern
from proctor.core.task_spec import ExtractionSpec


class AnswerExtractor:
    """``extract(text)`` returns (answer, parsed). Unparsed answers count toward ``null_count``.

    - answer tag only: the text after the tag's last occurrence, up to the end of that line;
    - regex only: the regex group, searched in the whole text;
    - tag and regex: the regex searched in the text after the tag's last occurrence;
    - neither: the whole text (parsed when not empty).
    """

    def __init__(self, spec: ExtractionSpec | None) -> None:
        self.spec = spec or ExtractionSpec()
        # searched with a time bound: a pattern that backtracks without end raises RegexTooSlow, not a hang
        self._regex = BoundedPattern(self.spec.regex, self.spec.ignore_case) if self.spec.regex else None
        self._tag = self.spec.answer_tag

    def _find(self, text: str) -> str | None:
        candidate = text
        if self._tag:
            haystack, tag = (text.lower(), self._tag.lower()) if self.spec.ignore_case else (text, self._tag)
            position = haystack.rfind(tag)
            if position < 0:
                return None
            candidate = text[position + len(tag) :]
            if self._regex is None:
                candidate = candidate.split("\n", 1)[0]
        if self._regex is not None:
            match = self._regex.search(candidate)
            return match.group(self.spec.group) if match else None
        return candidate if candidate.strip() else None

    def extract(self, text: str) -> tuple[str | None, bool]:
        found = self._find(text)
        if found is None:
            if self.spec.fallback == "full":
                return (text.strip() if self.spec.strip else text), False
            return None, False
        return (found.strip() if self.spec.strip else found), True
