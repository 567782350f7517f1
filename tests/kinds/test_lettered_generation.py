"""Multiple choice by lettered generation is reported honestly: unparsed replies counted (with a
warning above 10% recorded in results.json), the formulation shown in the table, results.json, the
report and compare, and the report shows the prompt sent and the raw reply, not one-hot
"probabilities" or a calibration plot."""

from __future__ import annotations

import json

import pytest

from proctor import evaluate
from proctor.core.model_requests import GenerateResult
from proctor.runs.compare import compare_runs
from proctor.runs.report import render_report
from tests.support.fakes import FakeModel, _unit, write_tasks


class LetterModel(FakeModel):
    """Answers 'B' to some prompts and nothing to the others (a chat server that often says nothing)."""

    supports_loglikelihood = False

    def __init__(self, *args, share: float = 0.5, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.share = share

    def generate(self, requests, progress=None):
        self._log("generate", len(requests))
        out = [GenerateResult("B" if _unit("letter", r.prompt) < self.share else "", "stop", 1, 1) for r in requests]
        if progress:
            progress(len(requests))
        return out


def records(run_dir, task):
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["task"] == task]


@pytest.mark.fast
def test_unparsed_replies_are_counted_warned_about_and_recorded(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=0)
    result = evaluate([tasks], LetterModel(share=0.5), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    task = result.tasks["mc_alpha"]
    rows = records(tmp_path / "run", "mc_alpha")
    empty = sum(r["generation"] == "" for r in rows)  # counted from the raw replies, independently
    assert 0 < empty < len(rows)
    assert task["mc_format"] == "generate"
    assert task["unparsed"] == {"count": empty, "n": 40, "rate": empty / 40}
    # an empty reply scores as wrong; 'B' is right exactly when the gold answer is choice 1 (no shuffle)
    answers = {f"m{i}": i % 4 for i in range(40)}
    expected_acc = sum(r["generation"] == "B" and answers[r["id"]] == 1 for r in rows) / 40
    assert task["metrics"]["acc"]["value"] == expected_acc
    # the unparsed replies' warning, and (the model answers only 'B') the constant replies' (runs/outcome_tally.py)
    unread = [w for w in task["warnings"] if "named no option letter" in w]
    assert empty / 40 > 0.10 and len(unread) == 1 and f"{empty} of 40 replies" in unread[0]
    assert any("lettered replies all named option B" in w for w in task["warnings"])
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert f"mc_alpha: {unread[0]}" in saved["warnings"]
    # the record keeps the lettered prompt that was sent and the raw reply
    first = rows[0]
    assert "A. " in first["prompt_sent"] and "Answer with the letter" in first["prompt_sent"]
    assert first["generation"] in ("B", "")


@pytest.mark.fast
def test_no_warning_at_or_below_ten_percent(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=40, n_gen=0)
    result = evaluate([tasks], LetterModel(share=1.0), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    assert result.tasks["mc_alpha"]["unparsed"] == {"count": 0, "n": 40, "rate": 0.0}
    said = result.tasks["mc_alpha"].get("warnings", [])
    assert not any("named no option letter" in w for w in said)  # (only the constant 'B' replies are news)


def test_report_shows_prompt_sent_and_reply_and_no_calibration_for_lettered_tasks(tmp_path):
    from selenium.webdriver.common.by import By

    from tests.support.browser import browser

    tasks = write_tasks(tmp_path / "tasks", n_mc=12, n_gen=0)
    evaluate([tasks], LetterModel(share=0.5), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    page = render_report(tmp_path / "run")
    rows = records(tmp_path / "run", "mc_alpha")
    assert 'class="chart calibration"' not in page  # no one-hot calibration plot (it would show ECE 1.0)
    assert "lettered generation: a letter is no probability" in page
    assert "lettered generation" in page and "unparsed" in page and "warning:" in page
    (tmp_path / "report.html").write_text(page)
    driver = browser()
    try:
        driver.get((tmp_path / "report.html").as_uri())
        cards = {c.get_attribute("data-id"): c for c in driver.find_elements(By.CSS_SELECTOR, "#sample-list .sample")}
        assert len(cards) == len(rows)
        for r in rows:
            card = cards[r["id"]]
            assert card.find_element(By.CSS_SELECTOR, "pre.prompt").text == r["prompt_sent"].strip()
            assert card.find_element(By.CSS_SELECTOR, "pre.generation").text == r["generation"].strip()
            assert {p.text for p in card.find_elements(By.CSS_SELECTOR, ".prob")} == {"—"}  # a letter is no probability
            # no letter read: unparsed, whatever the accuracy says
            assert card.get_attribute("data-status") == (
                "unparsed" if r["extracted"] is None else "correct" if r["metrics"]["acc"] == 1 else "incorrect"
            )
    finally:
        driver.quit()


def test_compare_flags_runs_whose_formulations_differ(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=12, n_gen=0)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "ll", select=["mc_alpha"], export=False)
    evaluate([tasks], LetterModel(), output_dir=tmp_path / "gen", select=["mc_alpha"], export=False)
    found = compare_runs([tmp_path / "ll", tmp_path / "gen"], n_boot=200)
    entry = found["comparisons"][0]["tasks"]["mc_alpha"]
    assert entry["mc_format"] == {"a": "loglikelihood", "b": "generate"} and entry["formulation_differs"] is True
    # a second log-likelihood run (a run compared with itself is refused)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "ll2", select=["mc_alpha"], export=False)
    same = compare_runs([tmp_path / "ll", tmp_path / "ll2"], n_boot=200)["comparisons"][0]["tasks"]["mc_alpha"]
    assert "formulation_differs" not in same


def test_cli_table_shows_the_formulation():
    from proctor.cli.display import formulation

    assert (
        formulation({"mc_format": "generate", "unparsed": {"count": 3, "n": 10, "rate": 0.3}})
        == "lettered generation (3/10 unparsed, 30%)"
    )
    assert formulation({"mc_format": "loglikelihood"}) == "log-likelihood"
    assert formulation({"kind": "generate"}) == ""


@pytest.mark.fast
def test_cli_compare_warns_when_formulations_differ(tmp_path, capsys):
    from proctor.cli import main

    tasks = write_tasks(tmp_path / "tasks", n_mc=12, n_gen=0)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "ll", select=["mc_alpha"], export=False)
    evaluate([tasks], LetterModel(), output_dir=tmp_path / "gen", select=["mc_alpha"], export=False)
    main(["compare", str(tmp_path / "ll"), str(tmp_path / "gen"), "--resamples", "200", "-o", str(tmp_path / "c.json")])
    err = " ".join(capsys.readouterr().err.split())
    assert "mc_alpha: scored by loglikelihood in A but generate in B" in err


class SentenceModel(FakeModel):
    """Always right, in a sentence: ``form`` with {L} the right letter (no shuffle: the answer is row i % 4),
    {W} a wrong one and {T} the right option's text."""

    supports_loglikelihood = False

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def generate(self, requests, progress=None):
        import re

        out = []
        for r in requests:
            i = int(re.search(r"number (\d+)\?", r.prompt).group(1))
            right, wrong = "ABCD"[i % 4], "ABCD"[(i + 1) % 4]
            text = re.search(rf"^{right}\. (.*)$", r.prompt, flags=re.M).group(1)
            out.append(GenerateResult(self.form.format(L=right, W=wrong, T=text), "stop", 8, 8))
        if progress:
            progress(len(requests))
        return out


@pytest.mark.fast
@pytest.mark.parametrize(
    "form",
    [
        "It is not {W}; the correct option is {L}.",  # 221: a negated letter first
        "{T} (not {W})",  # 228: the right option's text, then a negated letter
        "Between {W} and {L}, I choose {L}.",  # 229: the letters weighed before the pick
        "The answer is {L}, since {W} is wrong.",  # control 231
        "**{L}**",  # control 222
        "\\boxed{{{L}}}",  # control 223
    ],
)
def test_an_always_right_model_in_sentences_scores_one_and_stays_silent(form, tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=0)
    result = evaluate([tasks], SentenceModel(form), output_dir=tmp_path / "run", select=["mc_alpha"], export=False)
    task = result.tasks["mc_alpha"]
    assert task["metrics"]["acc"]["value"] == 1.0
    assert not task.get("warnings") and "ambiguous_letter" not in (task.get("outcomes") or {})


@pytest.mark.fast
def test_replies_naming_several_letters_are_counted_and_warned(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=0)
    result = evaluate([tasks], SentenceModel("{L} or {W}"), output_dir=tmp_path / "run", select=["mc_alpha"])
    task = result.tasks["mc_alpha"]
    assert task["outcomes"]["ambiguous_letter"]["count"] == 8 and task["outcomes"]["ambiguous_letter"]["n"] == 8
    said = [w for w in task["warnings"] if "8 of 8 lettered replies name more than one option" in w]
    assert len(said) == 1 and '"A or B": names A and B; read A' in said[0]
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert f"mc_alpha: {said[0]}" in saved["warnings"]
    assert records(tmp_path / "run", "mc_alpha")[1]["ambiguous"] == "names B and C; read B"


NUMBERS = ["1", "10", "100", "1000"]
CAPITALS = ["Milan", "Rome", "Turin", "Naples"]
NINE = CAPITALS + ["Xa", "Xb", "Xc", "Xd", "Xe"]


@pytest.mark.fast
@pytest.mark.parametrize(
    "reply, choices, position, ambiguous",
    [
        ("It is not C; the correct option is B.", CAPITALS, 1, None),  # 221
        ("Rome (not C)", CAPITALS, 1, None),  # 228
        ("Between A and B, I choose B.", CAPITALS, 1, None),  # 229
        ("I think B.", NINE, 1, None),  # 233: the pronoun, not option I
        ("I'd say C", NINE, 2, None),
        ("I", NINE, 8, None),  # option I itself
        ("A. Milan\nB. Rome\nC. Turin\nD. Naples\nAnswer: B", CAPITALS, 1, None),  # 234: the restated list
        ("A. Milan\nB. Rome\nC. Turin\nD. Naples", CAPITALS, None, None),  # the list alone names nothing
        ("B or C", CAPITALS, 1, "names B and C; read B"),  # 235: hedging is read, and marked
        ("100", NUMBERS, 2, None),  # 238: the longest option text, at a word boundary
        ("1000", NUMBERS, 3, None),
        ("1", NUMBERS, 0, None),
        ("It isn't C, it's B", CAPITALS, 1, None),
        ("B. Milan", CAPITALS, 1, "names A and B; read B"),  # the letter and its text disagree
        ("Rome (C)", CAPITALS, 1, "names B and C; read B"),
        ("The answer is (B).", CAPITALS, 1, None),
        ("Answer: B\nQuestion: next\nAnswer: C", CAPITALS, 1, "names B and C; read B"),  # a base model runs on
        ("the answer is (b).", CAPITALS, 1, None),  # a lower-case letter as a cue's whole answer
        ("the answer is a good one: B", CAPITALS, 1, None),  # never the article 'a'
    ],
)
def test_lettered_replies_are_read_by_their_cue_not_their_first_letter(reply, choices, position, ambiguous):
    from proctor.kinds.letter_reading import read_letter

    reading = read_letter(reply, len(choices), choices)
    assert (reading.position, reading.ambiguous) == (position, ambiguous)


def _many_choices(folder, n_choices: int):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"q": f"pick {i}", "options": [f"opt{i}x{k}" for k in range(n_choices)], "label": i} for i in range(3)]
    (folder / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "mc.yaml").write_text(
        'name: many\nkind: multiple_choice\ndata: {path: mc.jsonl}\nprompt: "{{ q }}"\n'
        'choices: "{{ options }}"\ntarget: "{{ label }}"\n'
    )
    return folder


@pytest.mark.fast
def test_more_choices_than_letters_is_a_user_error_before_any_request(tmp_path):
    from proctor.core.errors import TaskDefinitionError

    tasks = _many_choices(tmp_path / "tasks", 30)
    model = LetterModel()
    with pytest.raises(TaskDefinitionError) as raised:  # (was: internal error, ValueError, mid-run)
        evaluate([tasks], model, output_dir=tmp_path / "run", mc_format="generate", export=False)
    said = str(raised.value)
    assert "mc.jsonl, row 1, field 'choices'" in said and "task 'many'" in said
    assert "30 choices" in said and "at most 26 (A-Z)" in said and "--mc-format loglikelihood" in said
    assert model.calls == []  # said before the model was asked anything
    # a model that cannot score falls back to lettering on its own: the same error, not an internal one
    with pytest.raises(TaskDefinitionError, match="30 choices"):
        evaluate([tasks], LetterModel(), output_dir=tmp_path / "auto", export=False)
    # 26 choices still letter (A-Z)
    fits = _many_choices(tmp_path / "fits", 26)
    result = evaluate([fits], LetterModel(), output_dir=tmp_path / "ok", mc_format="generate", export=False)
    assert result.tasks["many"]["mc_format"] == "generate" and result.tasks["many"]["unparsed"]["n"] == 3


class BudgetModel(LetterModel):
    """Records the max_tokens each lettered request was sent with."""

    def __init__(self) -> None:
        super().__init__(share=1.0)
        self.sent: list[int] = []

    def generate(self, requests, progress=None):
        self.sent += [r.max_tokens for r in requests]
        return super().generate(requests, progress)


@pytest.mark.fast
@pytest.mark.parametrize("max_tokens, sent", [(None, 32), (8, 8)])
def test_lettered_replies_take_max_tokens_and_record_what_was_sent(max_tokens, sent, tmp_path):
    from proctor.core.run_overrides import RunOverrides

    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=0)
    model = BudgetModel()
    overrides = RunOverrides(gen_kwargs={"max_tokens": max_tokens} if max_tokens else {})
    result = evaluate(
        [tasks], model, output_dir=tmp_path / "run", select=["mc_alpha"], mc_format="generate", overrides=overrides
    )
    assert model.sent == [sent] * 4  # (--max-tokens 8 was refused: 'none of them generates text', 367)
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    generation = saved["tasks"]["mc_alpha"]["settings"]["generation"]
    assert generation["max_tokens"] == sent and generation["temperature"] == 0.0 and generation["stop"] == []
    assert result.tasks["mc_alpha"]["settings"]["generation"]["max_tokens"] == sent  # (recorded 64 while 32 went: 366)
