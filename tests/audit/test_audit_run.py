"""The audit through ``proctor run`` in a fresh interpreter, on the tiny model: a task with a duplicated choice
runs, its number is the one the rows give (computed here with transformers directly), and the finding reaches
the console (before the model loads) and results.json (the task's ``audit`` list and its warnings); the report
lists it too. ``--strict`` stops the same run before any model loads."""

from __future__ import annotations

import pytest

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor, results, run_in_process, run_proctor, write
from tests.support.hf_reference import direct_loglikelihood, reference  # noqa: F401  (fixture)

DUPLICATED = [*QUESTIONS[:4], {"id": "x", "question": "Sky?", "choices": ["blue", "Blue", "red"], "label": 2}]


def accuracy(reference, rows) -> float:  # noqa: F811
    hits = 0
    for row in rows:
        scores = [direct_loglikelihood(*reference, f"Q: {row['question']}\nA:", " " + c)[0] for c in row["choices"]]
        hits += max(range(len(scores)), key=scores.__getitem__) == row["label"]
    return hits / len(rows)


def test_run_records_a_finding_and_the_number_stays_the_rows(tiny_model_dir, reference, tmp_path):  # noqa: F811
    jsonl(tmp_path / "quiz" / "data.jsonl", DUPLICATED)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    done = proctor("run", "quiz", "--model", str(tiny_model_dir), "-o", "run", cwd=tmp_path)
    console = done.stdout + done.stderr
    assert "audit [choices.duplicate]" in console and "row 5, field 'choices'" in console
    task = results(tmp_path / "run")["tasks"]["quiz"]
    assert task["metrics"]["acc"]["value"] == pytest.approx(accuracy(reference, DUPLICATED))
    (finding,) = task["audit"]
    assert finding["rule"] == "choices.duplicate" and finding["severity"] == "warning"
    assert (finding["row"], finding["field"], finding["sample"], finding["count"]) == (5, "choices", "x", 1)
    assert finding["file"].endswith("data.jsonl")
    assert any(w.startswith("audit [choices.duplicate]") for w in task["warnings"])
    assert any("quiz: audit [choices.duplicate]" in w for w in results(tmp_path / "run")["warnings"])
    proctor("report", "run", cwd=tmp_path)
    assert "choices.duplicate" in (tmp_path / "run" / "report.html").read_text()


def test_strict_stops_the_run_before_the_model_loads(tmp_path):
    jsonl(tmp_path / "quiz" / "data.jsonl", DUPLICATED)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    # a model folder that does not exist: the run must stop at the audit, before the model is looked at
    done = run_proctor("run", "quiz", "--model", str(tmp_path / "no-model"), "-o", "run", "--strict", cwd=tmp_path)
    message = done.stdout + done.stderr
    assert done.returncode == 2, message
    assert "[choices.duplicate]" in message and "row 5, field 'choices'" in message
    assert "no-model" not in message and not (tmp_path / "run" / "results.json").exists()


# ---------------------------------------------------------------- the model stage: what only the loaded model tells
# the reply starts on a new line: no delimiter before the choices (chat.delimiter)
CHAT_QUIZ = QUIZ + 'chat: {enabled: true}\ntarget_delimiter: ""\n'


def test_a_chat_template_on_a_base_model_is_found_once_the_model_loads(tiny_base_model_dir, tmp_path):
    """The tiny base model's tokenizer carries SmolLM2's chat template (a reply ends with '<|im_end|>') while the
    model ends sequences with '<|endoftext|>': a run with the task's chat on says so, on the console and in
    results.json, naming the task file's ``chat`` line; the numbers are the run's own either way (a silenced
    rule changes none of them)."""
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", CHAT_QUIZ)
    done = proctor("run", "quiz", "--model", str(tiny_base_model_dir), "-o", "run", cwd=tmp_path)
    console = done.stdout + done.stderr
    assert "audit [chat.base-model]" in console and "'<|im_end|>'" in console and "'<|endoftext|>'" in console
    task = results(tmp_path / "run")["tasks"]["quiz"]
    (finding,) = task["audit"]
    assert (finding["rule"], finding["severity"], finding["field"], finding["line"]) == (
        "chat.base-model",
        "warning",
        "chat",
        CHAT_QUIZ.splitlines().index("chat: {enabled: true}") + 1,
    )
    assert finding["file"].endswith("task.yaml")
    assert any(w.startswith("audit [chat.base-model]") for w in task["warnings"])

    silenced = CHAT_QUIZ + "audit: {silence: [{rule: chat.base-model, reason: 'a base model asked as a chat one'}]}\n"
    write(tmp_path / "quiz" / "task.yaml", silenced)
    code, output = run_in_process(
        ["run", str(tmp_path / "quiz"), "-m", str(tiny_base_model_dir), "-o", str(tmp_path / "s")]
    )
    assert code == 0 and "chat.base-model" not in output, output
    quiet = results(tmp_path / "s")["tasks"]["quiz"]
    assert quiet["audit"][0]["silenced"] == "a base model asked as a chat one"
    assert not any("chat.base-model" in w for w in quiet.get("warnings") or [])
    assert quiet["metrics"] == task["metrics"]  # the audit reports; it changes no number


def test_strict_stops_a_chat_run_on_a_base_model_and_a_chat_model_passes(tiny_base_model_dir, tiny_model_dir, tmp_path):
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", QUIZ + 'target_delimiter: ""\n')
    task = str(tmp_path / "quiz")
    code, output = run_in_process(
        ["run", task, "-m", str(tiny_base_model_dir), "-o", str(tmp_path / "b"), "--chat-template", "on", "--strict"]
    )
    assert code == 2, output
    assert "[chat.base-model]" in output and "field '--chat-template'" in output and "internal error" not in output
    # the tiny chat model ends its sequences with '<|im_end|>', where the template closes a reply: nothing found
    code, output = run_in_process(
        ["run", task, "-m", str(tiny_model_dir), "-o", str(tmp_path / "c"), "--chat-template", "on", "--strict"]
    )
    assert code == 0, output
    assert results(tmp_path / "c")["tasks"]["quiz"].get("audit") in (None, [])


def test_a_space_before_each_choice_under_a_chat_template_is_found_once_the_model_loads(tiny_model_dir, tmp_path):
    """SmolLM2's template opens the reply with 'assistant' and a line break: a multiple-choice task run under it
    with the default target_delimiter ' ' scores each choice as a reply starting with a space. Named with the
    task file's chat line in results.json; with target_delimiter "" nothing is found."""
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    spaced = QUIZ + "chat: {enabled: true}\n"
    write(tmp_path / "quiz" / "task.yaml", spaced)
    code, output = run_in_process(["run", str(tmp_path / "quiz"), "-m", str(tiny_model_dir), "-o", str(tmp_path / "a")])
    assert code == 0 and "audit [chat.delimiter]" in output, output
    (finding,) = results(tmp_path / "a")["tasks"]["quiz"]["audit"]
    assert (finding["rule"], finding["field"]) == ("chat.delimiter", "target_delimiter")
    assert finding["line"] == spaced.splitlines().index("chat: {enabled: true}") + 1
    write(tmp_path / "quiz" / "task.yaml", CHAT_QUIZ)
    code, output = run_in_process(["run", str(tmp_path / "quiz"), "-m", str(tiny_model_dir), "-o", str(tmp_path / "b")])
    assert code == 0 and results(tmp_path / "b")["tasks"]["quiz"].get("audit") in (None, []), output


def test_a_special_token_in_a_row_is_found_once_the_model_loads(tiny_model_dir, tmp_path):
    """'<|endoftext|>' inside a question is one token for SmolLM2's tokenizer, not the text: found at its row. The
    same token written by the template into every prompt (a chat format by hand) is the template's own."""
    rows = [dict(q) for q in QUESTIONS]
    rows[2]["question"] = "Which animal barks?<|endoftext|>Ignore that."
    jsonl(tmp_path / "quiz" / "data.jsonl", rows)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    code, output = run_in_process(["run", str(tmp_path / "quiz"), "-m", str(tiny_model_dir), "-o", str(tmp_path / "a")])
    assert code == 0, output
    (finding,) = [f for f in results(tmp_path / "a")["tasks"]["quiz"]["audit"] if f["rule"] == "text.special-tokens"]
    assert (finding["row"], finding["field"], finding["sample"]) == (3, "prompt", "c")
    assert "'<|endoftext|>'" in finding["message"] and "audit [text.special-tokens]" in output
    by_hand = QUIZ.replace(
        'prompt: "Q: {{ question }}\\nA:"', 'prompt: "<|im_start|>user\\nQ: {{ question }}<|im_end|>\\nA:"'
    )
    assert by_hand != QUIZ
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", by_hand)
    code, output = run_in_process(["run", str(tmp_path / "quiz"), "-m", str(tiny_model_dir), "-o", str(tmp_path / "b")])
    assert code == 0 and "special-tokens" not in output, output


GROUPED = """\
tasks:
  - {name: mc, kind: multiple_choice, data: data.jsonl, prompt: "Q: {{ question }}\\nA:", choices: "{{ choices }}",
     target: "{{ label }}", group: suite}
  - {name: ge, kind: generate, data: gen.jsonl, prompt: "Q: {{ question }}\\nA:", target: "{{ answer }}",
     generation: {max_tokens: 4, stop: ["\\n"]}, group: suite}
"""


def test_a_group_whose_tasks_share_no_metric_says_why_it_has_no_number(tiny_model_dir, tmp_path):
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    jsonl(
        tmp_path / "gen.jsonl",
        [{"id": q["id"], "question": q["question"], "answer": q["choices"][q["label"]]} for q in QUESTIONS],
    )
    write(tmp_path / "t.yaml", GROUPED)
    code, output = run_in_process(
        ["run", str(tmp_path / "t.yaml"), "-m", str(tiny_model_dir), "-o", str(tmp_path / "r")]
    )
    assert code == 0, output
    saved = results(tmp_path / "r")
    assert saved["groups"]["suite"]["metrics"] == {}  # acc and exact_match: nothing to average
    said = "group 'suite': its tasks (mc, ge) share no metric"
    assert any(w.startswith(said) for w in saved["warnings"]) and said in output


def test_a_chat_template_that_leaves_out_the_system_message_is_found_once_the_model_loads(tiny_model_dir, tmp_path):
    """A template that skips the system role: --system-prompt never reaches the model, though the run records it.
    SmolLM2's own template renders every message: nothing found (red team 12, 117)."""
    import shutil

    skipping = tmp_path / "skips-system"
    shutil.copytree(tiny_model_dir, skipping)
    (skipping / "chat_template.jinja").write_text(
        "{% for m in messages %}{% if m['role'] != 'system' %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] "
        "+ '<|im_end|>\\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
        "{% endif %}"
    )
    config = skipping / "tokenizer_config.json"
    if config.exists():  # the template file is the one the tokenizer reads
        settings = __import__("json").loads(config.read_text())
        settings.pop("chat_template", None)
        config.write_text(__import__("json").dumps(settings))
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", CHAT_QUIZ)
    flags = ["--chat-template", "on", "--system-prompt", "Answer with one word."]
    for model, out in ((skipping, "a"), (tiny_model_dir, "b")):
        code, output = run_in_process(
            ["run", str(tmp_path / "quiz"), "-m", str(model), "-o", str(tmp_path / out), *flags]
        )
        assert code == 0, output
        found = [
            f for f in results(tmp_path / out)["tasks"]["quiz"].get("audit") or [] if f["rule"] == "chat.drops-messages"
        ]
        if model is skipping:
            assert found and found[0]["field"] == "system_prompt" and "leaves out the system message" in output, output
            assert "'Answer with one word.'" in found[0]["message"]
        else:
            assert not found, found


def test_a_perplexity_window_past_the_models_is_found_once_the_model_loads(tiny_model_dir, tmp_path):
    """The tiny model reads 512 tokens at once: a task naming a window of 4096 is scored in windows of 512, which
    the run says (perplexity.window-capped); the default window, which the task does not name, is silent."""
    jsonl(tmp_path / "ppl" / "data.jsonl", [{"text": f"The river {i} runs to the sea."} for i in range(4)])
    task = 'name: ppl\nkind: perplexity\ndata: data.jsonl\ntext: "{{ text }}"\n'
    found = {}
    for name, extra in (("named", "perplexity: {window: 4096}\n"), ("default", "")):
        write(tmp_path / "ppl" / "task.yaml", task + extra)
        code, output = run_in_process(
            ["run", str(tmp_path / "ppl"), "-m", str(tiny_model_dir), "-o", str(tmp_path / name)]
        )
        assert code == 0, output
        audit = results(tmp_path / name)["tasks"]["ppl"].get("audit") or []
        found[name] = [f for f in audit if f["rule"] == "perplexity.window-capped"]
    (finding,) = found["named"]
    assert finding["field"] == "perplexity.window" and "windows of 512 tokens" in finding["message"]
    assert found["default"] == []
