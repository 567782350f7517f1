"""lm-eval's chat-template options on lm-eval task files, against lm-evaluation-harness 0.4.13 itself:
``apply_chat_template`` with the model's template (SmolLM2's), ``fewshot_as_multiturn``, a
``system_instruction`` and ``num_fewshot=2`` there; ``--chat-template on``, ``--fewshot-as-multiturn``,
``--system-prompt`` and ``--num-fewshot 2`` here. Every request text must be byte-identical,
log-likelihoods within 1e-4, greedy outputs and scores identical."""

from __future__ import annotations

import json

import pytest

from tests.support.lmeval_parity import run_lm_eval, workspace

pytest.importorskip("lm_eval")

TASKS = ["arc_easy", "winogrande", "gsm8k_short"]  # multiple choice, multiple inputs (a context per choice), generation
LIMIT = 3  # GSM8K has three test rows here
SYSTEM = "You are a careful assistant. Answer briefly."


@pytest.fixture(scope="module")
def chat_runs(smollm2_tokenizer_dir, tmp_path_factory):
    from proctor.api import evaluate
    from proctor.core.run_overrides import RunOverrides
    from proctor.models.hf.model import HFModel

    space = workspace(smollm2_tokenizer_dir, tmp_path_factory)
    theirs = run_lm_eval(
        space.model,
        TASKS,
        space.rows,
        limit=LIMIT,
        include=space.tasks,
        apply_chat_template=True,
        fewshot_as_multiturn=True,
        system_instruction=SYSTEM,
        num_fewshot=2,
        bootstrap_iters=1000,
    )
    model = HFModel(space.model, batch_size=4, name="tiny-llama")
    options = {"lmeval_data": space.mapping, "lmeval_include": [str(space.tasks)], "lmeval_bootstrap_iters": 1000}
    overrides = RunOverrides(num_fewshot=2, system_prompt=SYSTEM, fewshot_as_multiturn=True)
    run = space.folder / "chat-run"
    result = evaluate(
        [f"lm_eval:{t}" for t in TASKS],
        model,
        output_dir=run,
        limit=LIMIT,
        chat=True,
        overrides=overrides,
        dialect_options=options,
    )
    samples: dict[str, dict] = {}
    for line in (run / "samples.jsonl").read_text().splitlines():
        record = json.loads(line)
        samples.setdefault(record["task"], {})[record["doc_id"]] = record
    return theirs, result, samples, model, options


@pytest.mark.parametrize("task", TASKS)
def test_chat_prompts_and_scores_match_lm_eval(chat_runs, task):
    theirs, result, samples, _, _ = chat_runs
    logged = theirs["samples"][task]
    mine = samples[task]
    assert len(mine) == LIMIT == len({s["doc_id"] for s in logged})
    for sample in logged:
        record = mine[sample["doc_id"]]
        # byte-identical requests: the chat-rendered contexts, continuations, generation kwargs
        assert json.loads(json.dumps(sample["arguments"])) == record["arguments"], (task, sample["doc_id"])
        context = record["arguments"][0][0]
        assert context.startswith("<|im_start|>system\n" + SYSTEM), context[:80]  # the system turn, SmolLM2's template
        assert context.count("<|im_start|>assistant") == 3  # two shots as turns, and the answer's turn
        assert record["rendered_prompt"] == context and record["prompt"][0] == {"role": "system", "content": SYSTEM}
        for their_resps, our_resps in zip(sample["resps"], record["resps"], strict=True):
            for a, b in zip(their_resps, our_resps, strict=True):
                if isinstance(a, (list, tuple)):
                    assert abs(a[0] - b[0]) <= 1e-4, (task, sample["doc_id"], a, b)
                    assert bool(a[1]) == bool(b[1])
                else:
                    assert a == b, (task, sample["doc_id"])
        for metric in sample["metrics"]:
            assert sample[metric] == record["lmeval_metrics"][f"{metric},{sample['filter']}"], (task, metric)
    ours = result.results["tasks"][task]["metrics"]
    for key, value in theirs["results"][task].items():
        if "," not in key or not isinstance(value, (int, float)):
            continue
        entry = ours[key.replace("_stderr,", ",")]
        assert (entry["stderr"] if "_stderr," in key else entry["value"]) == pytest.approx(value, abs=1e-12), (
            task,
            key,
        )


def test_chat_options_are_recorded_and_enter_the_resume_check(chat_runs):
    from proctor.api import evaluate
    from proctor.core.run_overrides import RunOverrides
    from proctor.runs.manifest import RunMismatchError

    _, result, _, model, dialect_options = chat_runs
    run = result.run_dir
    recorded = json.loads((run / "results.json").read_text())
    assert recorded["overrides"] == {"num_fewshot": 2, "system_prompt": SYSTEM, "fewshot_as_multiturn": True}
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["options"]["overrides"] == recorded["overrides"] and manifest["options"]["chat"] is True
    options = dict(limit=LIMIT, dialect_options=dialect_options)
    changed = RunOverrides(num_fewshot=2, system_prompt="Another system prompt.", fewshot_as_multiturn=True)
    with pytest.raises(RunMismatchError, match="system_prompt"):
        evaluate([f"lm_eval:{t}" for t in TASKS], model, output_dir=run, chat=True, overrides=changed, **options)
    one_turn = RunOverrides(num_fewshot=2, system_prompt=SYSTEM, fewshot_as_multiturn=False)
    with pytest.raises(RunMismatchError, match="fewshot_as_multiturn"):
        evaluate([f"lm_eval:{t}" for t in TASKS], model, output_dir=run, chat=True, overrides=one_turn, **options)
    with pytest.raises(RunMismatchError, match="chat"):
        evaluate(
            [f"lm_eval:{t}" for t in TASKS],
            model,
            output_dir=run,
            chat=False,
            overrides=RunOverrides(num_fewshot=2, system_prompt=SYSTEM),
            **options,
        )
