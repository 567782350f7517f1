"""probsem suites run unmodified: discovery, probsem's formula (checked against a direct transformers
computation), the CSV, unscored contexts, multi-line queries and bad suites."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from proctor import TaskDefinitionError
from proctor.api import evaluate, load_tasks
from proctor.engine.prepare import prepare_task
from tests.conftest import REPO, shared_path
from tests.support.probsem_cogsci import COGSCI_PROMPT, COGSCI_SUITE


@pytest.fixture
def inputs(tmp_path) -> Path:
    """A copy of probsem's own inputs/ (test.txt, test_A.json, test_B.json), byte for byte."""
    folder = tmp_path / "inputs"
    shutil.copytree(shared_path("examples", "probsem", "inputs"), folder)
    return folder


def probsem_reference(
    model_dir: Path, prompt: str, suite: dict, *, norm: bool, temp: float, add_bos: bool
) -> list[dict]:
    """probsem's scoring, written directly on transformers (reference §1), with the query's tokens
    counted in the joint tokenisation (no BOS off-by-one)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()

    def ids(text: str) -> list[int]:
        out = tokenizer(text, add_special_tokens=False).input_ids
        return [tokenizer.bos_token_id] + out if add_bos else out

    results = []
    for example in suite["context"]:
        weights, counts = [], []
        for query in suite["queries"]:
            sample = "\n".join(p for p in [suite["pretext"], example["text"], suite["posttext"], query] if p != "")
            text = sample[: len(sample) - len(query)].rstrip("\n")
            full_text = "\n".join([prompt, text, query])
            full = ids(full_text)
            prefix = ids(full_text[: len(full_text) - len(query)])
            assert full[: len(prefix)] == prefix  # the query starts on a token boundary
            n = len(full) - len(prefix)
            with torch.no_grad():
                logits = model(torch.tensor([full])).logits[0].float()
            token_lp = torch.log_softmax(logits[:-1], dim=-1).gather(1, torch.tensor(full[1:])[:, None])[:, 0]
            logp = float(token_lp[-n:].sum())
            if norm:
                logp /= n
            weights.append(logp / temp)
            counts.append(n)
        total = sum(math.exp(w) for w in weights)
        results.append({"weights": weights, "scores": [math.exp(w) / total for w in weights], "n": counts})
    return results


def records_by_task(run_dir: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        record = json.loads(line)
        out.setdefault(record["task"], []).append(record)
    return out


@pytest.mark.fast
def test_discovery_by_probsem_naming(inputs):
    assert [t.name for t in load_tasks([inputs])] == ["test_A", "test_B"]
    assert [t.name for t in load_tasks([inputs / "test.txt"])] == ["test_A", "test_B"]
    assert [t.name for t in load_tasks([inputs / "test_B.json"])] == ["test_B"]
    assert {t.dialect for t in load_tasks([inputs])} == {"probsem"}
    # a folder and a file inside it name the same suite once
    assert [t.name for t in load_tasks([inputs, inputs / "test_A.json"])] == ["test_A", "test_B"]


@pytest.mark.fast
def test_prompts_join_as_probsem_does(inputs):
    (task_a, _) = load_tasks([inputs])
    prepared = prepare_task(task_a, {})
    prompt = (inputs / "test.txt").read_text(encoding="utf-8")
    suite = json.loads((inputs / "test_A.json").read_text())
    first = prepared.samples[0]
    assert (
        first.prompt.text
        == "\n".join([prompt, suite["pretext"], suite["context"][0]["text"], suite["posttext"]]) + "\n"
    )
    assert first.choices == ("True", "False") and first.gold == (0,)
    (_, task_b) = load_tasks([inputs])
    assert prepare_task(task_b, {}).samples[0].gold == ()  # expected = -1: no ground truth


@pytest.mark.fast
def test_a_prompt_file_saved_with_windows_line_ends_is_the_same_prompt(inputs):
    """probsem reads its prompt file with open() (universal newlines): one saved with CRLF line ends is the same
    text, with no carriage return scored as part of it (red team 13, 143)."""
    (plain,) = [p.prompt.text for p in prepare_task(load_tasks([inputs])[0], {}).samples[:1]]
    prompt = inputs / "test.txt"
    prompt.write_bytes(prompt.read_bytes().replace(b"\n", b"\r\n"))
    (crlf,) = [p.prompt.text for p in prepare_task(load_tasks([inputs])[0], {}).samples[:1]]
    assert b"\r" in prompt.read_bytes() and crlf == plain and "\r" not in crlf
    # a byte-order mark (Notepad's): probsem's open(encoding='utf-8') keeps it, so its scored texts start with it
    prompt.write_bytes(b"\xef\xbb\xbf" + prompt.read_bytes())
    (marked,) = [p.prompt.text for p in prepare_task(load_tasks([inputs])[0], {}).samples[:1]]
    assert marked == "\ufeff" + plain  # red team 13, 144


@pytest.mark.parametrize(
    "norm,temp,add_bos", [(False, 1.0, False), (True, 1.0, False), (True, 0.5, True), (False, 2.0, True)]
)
def test_distribution_matches_direct_transformers(inputs, tiny_model_dir, tmp_path, norm, temp, add_bos):
    from proctor.models.hf.model import HFModel

    model = HFModel(tiny_model_dir, batch_size=3, name="tiny-llama", add_bos=add_bos)
    result = evaluate(
        [inputs], model, output_dir=tmp_path / "run", dialect_options={"probsem_norm": norm, "probsem_temp": temp}
    )
    records = records_by_task(result.run_dir)
    prompt = (inputs / "test.txt").read_text(encoding="utf-8")
    for name in ("test_A", "test_B"):
        suite = json.loads((inputs / f"{name}.json").read_text())
        expected = probsem_reference(tiny_model_dir, prompt, suite, norm=norm, temp=temp, add_bos=add_bos)
        assert len(records[name]) == len(expected)
        for record, reference in zip(records[name], expected):
            assert record["n_tokens"] == reference["n"]
            assert record["distribution"] == pytest.approx(reference["scores"], abs=1e-4)
            # and the CSV's logp column is the softmax input (after norm and temperature)
        rows = list(csv.DictReader((result.run_dir / f"{name}_tiny-llama_results.csv").open(encoding="utf-8")))
        assert [r["query"] for r in rows] == [q for _ in suite["context"] for q in suite["queries"]]
        assert [float(r["logp"]) for r in rows] == pytest.approx(
            [w for ref in expected for w in ref["weights"]], abs=1e-4
        )
        assert [float(r["score"]) for r in rows] == pytest.approx(
            [s for ref in expected for s in ref["scores"]], abs=1e-4
        )
        assert rows[0]["text"] == "\n".join([suite["pretext"], suite["context"][0]["text"], suite["posttext"]])


def test_accuracy_counts_unscored_contexts(inputs, tiny_model, tmp_path):
    result = evaluate([inputs], tiny_model, output_dir=tmp_path / "run")
    a = result.tasks["test_A"]["metrics"]["distribution_acc"]
    b = result.tasks["test_B"]["metrics"]["distribution_acc"]
    records = records_by_task(result.run_dir)
    passed = [r["correct"] for r in records["test_A"]]
    assert a["value"] == pytest.approx(sum(passed) / 2) and "n_unscored" not in a
    assert b["value"] != b["value"] and b["n_scored"] == 0 and b["n_unscored"] == 1  # NaN, but counted
    assert records["test_B"][0]["correct"] is None and records["test_B"][0]["target"] is None
    assert result.tasks["test_A"]["exports"] == ["test_A_tiny-llama_results.csv"]
    saved = json.loads((result.run_dir / "results.json").read_text())
    assert saved["tasks"]["test_B"]["metrics"]["distribution_acc"] == {
        "value": None,
        "stderr": None,
        "n_scored": 0,
        "n_unscored": 1,
    }


@pytest.mark.fast
def test_ties_count_as_correct():
    from proctor.scoring.metrics import get_metric
    from proctor.scoring.outcomes import ChoiceOutcome

    metric = get_metric("distribution_acc", "multiple_choice")
    tie = ChoiceOutcome((-1.0, -1.0), (1, 1), (1, 1), (1,), (False, False), (0.5, 0.5))
    assert metric.compute(tie) == 1.0
    assert metric.compute(ChoiceOutcome((-1.0, -2.0), (1, 1), (1, 1), (1,), (False, False), (0.7, 0.3))) == 0.0
    assert metric.compute(ChoiceOutcome((-1.0, -2.0), (1, 1), (1, 1), (), (False, False), (0.7, 0.3))) is None


def test_multiline_query_is_scored_whole(tmp_path, tiny_model_dir):
    from proctor.models.hf.model import HFModel

    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "p.txt").write_text("Pick the program.", encoding="utf-8")
    suite = {
        "pretext": "",
        "context": [{"text": "Add one to x.", "expected": 1}],
        "posttext": "Program:",
        "queries": ["(define y\n  (- x 1))", "(define y\n  (+ x 1))"],
    }
    (folder / "p_code.json").write_text(json.dumps(suite), encoding="utf-8")
    model = HFModel(tiny_model_dir, batch_size=2, name="tiny-llama")
    result = evaluate([folder], model, output_dir=tmp_path / "run")
    (record,) = records_by_task(result.run_dir)["p_code"]
    reference = probsem_reference(tiny_model_dir, "Pick the program.", suite, norm=False, temp=1.0, add_bos=False)[0]
    whole = [len(model.encode(q)) for q in suite["queries"]]
    assert record["n_tokens"] == reference["n"] and min(record["n_tokens"]) >= min(whole) > len(
        model.encode("  (+ x 1))")
    )
    assert record["distribution"] == pytest.approx(reference["scores"], abs=1e-4)


BAD_SUITES = [
    (
        {"pretext": "", "context": [{"text": "q", "expected": 0}], "posttext": ""},
        "queries",
        "missing required key 'queries'",
    ),
    (
        {"pretext": "", "context": [{"text": "q", "expected": 2}], "posttext": "", "queries": ["a", "b"]},
        "context[0].expected",
        "out of range",
    ),
    (
        {"pretext": "", "context": [{"text": "q", "expected": -2}], "posttext": "", "queries": ["a"]},
        "context[0].expected",
        "out of range",
    ),
    ({"pretext": "", "context": [{"text": "q", "expected": 0}], "posttext": "", "queries": []}, "queries", "non-empty"),
    (
        {"pretext": "", "context": [{"text": "q", "expected": 0}], "posttext": "", "queries": ["a", ""]},
        "queries[1]",
        "empty",
    ),
    ({"pretext": "", "context": [], "posttext": "", "queries": ["a"]}, "context", "non-empty"),
    (
        {"pretext": "", "context": [{"text": "q"}], "posttext": "", "queries": ["a"]},
        "context[0].expected",
        "missing 'expected'",
    ),
    (
        {"pretext": "", "context": [{"text": "q", "expected": True}], "posttext": "", "queries": ["a"]},
        "context[0].expected",
        "integer",
    ),
    (
        {"pretext": None, "context": [{"text": "q", "expected": 0}], "posttext": "", "queries": ["a"]},
        "pretext",
        "string",
    ),
    (
        {"premise": "x", "context": [{"text": ";; c", "expected": 0}], "query": ";; q", "programs": ["(a)"]},
        "premise",
        "starting with ';;'",
    ),
    (
        {"premise": ";;", "context": [{"text": ";; c", "expected": 0}], "query": ";; q", "programs": ["a"]},
        "programs[0]",
        "(...)",
    ),
    (
        {"premise": ";;", "context": [{"text": "c", "expected": 0}], "query": ";; q", "programs": ["(a)"]},
        "context[0].text",
        "';;'",
    ),
    (
        {"premise": ";;", "context": [{"text": ";; c", "expected": 3}], "query": ";; q", "programs": ["(a)"]},
        "context[0].expected",
        "index",
    ),
    (
        {"premise": ";;", "context": [{"text": ";; c", "expected": 0}], "programs": ["(a)"]},
        "query",
        "missing required key 'query'",
    ),
]


@pytest.mark.fast
@pytest.mark.parametrize("suite,field,words", BAD_SUITES, ids=[b[2] for b in BAD_SUITES])
def test_bad_suite_names_file_and_field(tmp_path, suite, field, words):
    (tmp_path / "p.txt").write_text("prompt", encoding="utf-8")
    path = tmp_path / "p_bad.json"
    path.write_text(json.dumps(suite, indent=2), encoding="utf-8")
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([tmp_path])
    assert info.value.field == field and words in info.value.detail
    assert str(path) in str(info.value)


@pytest.mark.fast
def test_non_json_suite_names_file_and_line(tmp_path):
    (tmp_path / "p.txt").write_text("prompt", encoding="utf-8")
    path = tmp_path / "p_bad.json"
    path.write_text('{\n  "pretext": "",\n  "context": [,]\n}', encoding="utf-8")
    with pytest.raises(TaskDefinitionError) as info:
        load_tasks([path])
    assert "not valid JSON" in str(info.value) and info.value.line == 3 and str(path) in str(info.value)


@pytest.mark.fast
def test_suite_without_prompt_and_prompt_without_suites(tmp_path):
    orphan = tmp_path / "x_y.json"
    orphan.write_text("{}", encoding="utf-8")
    with pytest.raises(TaskDefinitionError, match="<prompt>_<suite>.json"):
        load_tasks([orphan])
    lonely = tmp_path / "alone.txt"
    lonely.write_text("prompt", encoding="utf-8")
    with pytest.raises(TaskDefinitionError, match="alone_<suite>.json"):
        load_tasks([lonely])


@pytest.mark.fast
def test_longest_prompt_prefix_owns_a_suite(tmp_path):
    good = {"pretext": "", "context": [{"text": "t", "expected": 0}], "posttext": "", "queries": ["a"]}
    for name in ("a.txt", "a_b.txt"):
        (tmp_path / name).write_text(name, encoding="utf-8")
    for name in ("a_x.json", "a_b_y.json"):
        (tmp_path / name).write_text(json.dumps(good), encoding="utf-8")
    assert [t.name for t in load_tasks([tmp_path / "a.txt"])] == ["a_x"]
    assert [t.name for t in load_tasks([tmp_path / "a_b.txt"])] == ["a_b_y"]


def test_cli_runs_the_folder_with_norm_and_temp(inputs, tiny_model_dir, tmp_path):
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "proctor.cli",
        "run",
        str(inputs),
        "--model",
        str(tiny_model_dir),
        "--norm",
        "--temp",
        "0.5",
        "--output",
        str(run_dir),
        "--quiet",
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    spec = (run_dir / "tasks" / "test_A.yaml").read_text()
    assert "choice_normalization: tokens" in spec and "choice_temperature: 0.5" in spec
    assert sorted(p.name for p in run_dir.glob("*_results.csv")) == [
        f"test_A_{tiny_model_dir.name}_results.csv",
        f"test_B_{tiny_model_dir.name}_results.csv",
    ]
    bad_command = [
        sys.executable,
        "-m",
        "proctor.cli",
        "run",
        str(inputs),
        "--model",
        str(tiny_model_dir),
        "--temp",
        "0",
        "--quiet",
    ]
    bad = subprocess.run(
        bad_command,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert bad.returncode == 2 and "temperature must be > 0" in bad.stderr


# ---------------------------------------------------------------- the CogSci2023 branch's format
def branch_encoding(model_dir: Path):
    """text -> token ids as the CogSci2023 branch gets them under its pinned transformers 4.23.1:
    ``AutoTokenizer.from_pretrained(id, add_prefix_space=True)`` gives GPT2TokenizerFast, whose
    ``__init__`` rewrites the backend's ByteLevel pre-tokenizer with ``add_prefix_space=True``; the branch's
    ``utils.tokenize`` words then go through ``encode_batch(..., is_pretokenized=True)``, so the
    pre-tokenizer puts a space before every word. Rebuilt here on the ``tokenizers`` library alone."""
    import json as json_module

    from nltk.tokenize.treebank import TreebankWordTokenizer
    from tokenizers import Tokenizer, pre_tokenizers

    backend = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    state = json_module.loads(backend.pre_tokenizer.__getstate__())
    assert state.pop("type") == "ByteLevel"  # the tiny model's tokenizer, like CodeGen's, is plain byte-level BPE
    state["add_prefix_space"] = True
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(**state)

    def encode(text: str) -> list[int]:
        text = text.replace("\n", " NEWLINE ").replace("'", " ` ")
        tokens = [t.replace("NEWLINE", "\n").replace("`", "'") for t in TreebankWordTokenizer().tokenize(text)]
        return backend.encode(tokens, is_pretokenized=True).ids

    return encode


def cogsci2023_reference(model_dir: Path, prompt: str, suite: dict) -> list[list[float]]:
    """The CogSci2023 branch's ProbSem.run, written out: samples, Treebank words encoded as 4.23.1 encodes
    them (``branch_encoding``), masked cross-entropy over the last len(encode(program)) tokens,
    logp / sqrt(n) (Model.score's default normalize=True), then np.exp(w) / sum(np.exp(w))."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    encode_ids = branch_encoding(model_dir)

    def encode(text):
        ids = torch.tensor([encode_ids(text)])
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    out = []
    for example in suite["context"]:
        weights = []
        for program in suite["programs"]:
            sample = "\n".join(p for p in [suite["premise"], example["text"], suite["query"], program] if p != ";;")
            text, last = "\n".join(sample.split("\n")[:-1]), sample.split("\n")[-1]
            inputs = encode("\n".join([prompt, text, last]))
            num_eval = encode(last)["input_ids"].shape[1]
            tokens, mask = inputs["input_ids"], inputs["attention_mask"]
            with torch.no_grad():
                logits = model(input_ids=tokens, attention_mask=mask).logits
            loss = (
                torch.nn.CrossEntropyLoss(reduction="none")(
                    logits[..., :-1, :].reshape(-1, logits.size(-1)), tokens[..., 1:].reshape(-1)
                ).view(1, -1)
                * mask[..., 1:]
            )
            logp = -loss[:, -num_eval:].sum(dim=1).item()
            weights.append(logp / np.sqrt(num_eval))
        weights = np.array(weights)
        out.append(list(np.exp(weights) / np.sum(np.exp(weights))))
    return out


def test_cogsci2023_suite_runs_as_that_branch_scores_it(tiny_model_dir, tmp_path):
    """`proctor run` in a fresh process gives the branch's distributions, its words encoded with the
    leading space that its pinned transformers 4.23.1 puts before each (which transformers 5 would drop)."""
    from transformers import AutoTokenizer

    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "tug-of-war.txt").write_text(COGSCI_PROMPT, encoding="utf-8")
    (folder / "tug-of-war_AV-1a.json").write_text(json.dumps(COGSCI_SUITE, indent=4), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "proctor.cli",
        "run",
        str(folder),
        "--model",
        str(tiny_model_dir),
        "-o",
        str(tmp_path / "run"),
        "--quiet",
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr
    rows = records_by_task(tmp_path / "run")["tug-of-war_AV-1a"]
    expected = cogsci2023_reference(tiny_model_dir, COGSCI_PROMPT, COGSCI_SUITE)
    assert len(rows) == 3
    for row, reference in zip(rows, expected):
        assert row["distribution"] == pytest.approx(reference, abs=1e-5)
    # suite accuracy over the contexts with an expected program (ties count as correct)
    hits = [
        r["distribution"][c["expected"]] == max(r["distribution"])
        for r, c in zip(rows, COGSCI_SUITE["context"])
        if c["expected"] >= 0
    ]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["tasks"]["tug-of-war_AV-1a"]["metrics"]["distribution_acc"]["value"] == pytest.approx(
        sum(hits) / len(hits)
    )
    assert rows[2]["target"] is None and rows[2]["correct"] is None
    # the leading spaces matter: the installed transformers, asked for add_prefix_space, encodes otherwise
    program = "(> (strength 'jack) 70)"
    installed = AutoTokenizer.from_pretrained(tiny_model_dir, add_prefix_space=True)
    from proctor.dialects.probsem.cogsci import words

    assert branch_encoding(tiny_model_dir)(program) != list(
        installed(words(program), is_split_into_words=True).input_ids
    )


def test_cogsci2023_encoding_is_the_branch_s(tiny_model_dir):
    """proctor's encoder gives 4.23.1's ids on the branch's texts: newlines, protected apostrophes, parentheses."""
    from proctor.dialects.probsem.cogsci import CogSci2023Task
    from proctor.models.hf.model import HFModel

    model = HFModel(tiny_model_dir, batch_size=2, name="tiny-llama")
    encode = CogSci2023Task._encoder(None, model)
    reference = branch_encoding(tiny_model_dir)
    for text in [
        COGSCI_PROMPT,
        ";; Jack isn't very weak.\n;; Query: how strong is Jack?\n(> (strength 'jack) 50)",
        "(PROGRAM1)",
        "a\n\nb",
    ]:
        assert encode(text) == reference(text)


def test_cogsci2023_suite_has_a_spec_of_its_own_and_the_engine_keeps_its_limit(tmp_path):
    """The suite's parts are its handler's options (no templates, no data constants standing in for them); the
    handler gives each context its texts as the templates did, and the engine keeps the first --limit contexts (a
    count or a fraction) while the data's n_rows counts them all, as before (issue 48)."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    (tmp_path / "tug-of-war.txt").write_text(COGSCI_PROMPT, encoding="utf-8")
    (tmp_path / "tug-of-war_AV-1a.json").write_text(json.dumps(COGSCI_SUITE), encoding="utf-8")
    (task,) = load_tasks([tmp_path])
    spec = task.spec
    assert (spec.prompt, spec.choices, spec.target, spec.data[0].constants) == (None, None, None, {})
    options = spec.handler.options
    assert (options.prompt, options.premise, options.query) == (COGSCI_PROMPT, ";;", ";; Query: how strong is Jack?")
    assert options.programs == tuple(COGSCI_SUITE["programs"])
    for limit, kept in ((None, 3), (2, 2), (0.5, 2), (0.2, 1)):
        prepared = prepare_task(task, {}, limit=limit)
        assert (len(prepared.samples), prepared.data["n_rows"]) == (kept, 3), limit
    prepared = prepare_task(task, {})
    for sample, context in zip(prepared.samples, COGSCI_SUITE["context"]):
        assert sample.prompt.text == COGSCI_PROMPT + "\n" + context["text"]
        assert sample.choices == tuple(COGSCI_SUITE["programs"])
        assert sample.gold == ((context["expected"],) if context["expected"] >= 0 else ())


def test_suite_has_a_spec_of_its_own_and_its_rows_can_be_picked(inputs, tmp_path):
    """probsem's own format: the suite's prompt, pretext, posttext and queries are its handler's options (no
    templates, no data constants standing in for them); the handler gives each context its texts as probsem joins
    them (an empty part left out), the engine keeps the first --limit contexts while n_rows counts them all, and
    --sample-id picks a context, its numbers those of the run over all (issue 48)."""
    from proctor.engine.sample_selection import select_samples
    from tests.support.fakes import FakeModel

    suite = {
        "pretext": "",
        "posttext": "Verdict:",
        "queries": [" true", " false"],
        "context": [
            {"text": "Water is wet.", "expected": 0},
            {"text": "", "expected": 1},
            {"text": "Ice.", "expected": -1},
        ],
    }
    (inputs / "claims.txt").write_text("Judge.\n", encoding="utf-8")
    (inputs / "claims_facts.json").write_text(json.dumps(suite), encoding="utf-8")
    (task,) = load_tasks([inputs / "claims_facts.json"])
    spec = task.spec
    assert (spec.prompt, spec.choices, spec.target, spec.data[0].constants) == (None, None, None, {})
    assert spec.handler.name == "probsem.suite"
    options = spec.handler.options
    assert (options.prompt, options.pretext, options.posttext, options.queries) == (
        "Judge.\n",
        "",
        "Verdict:",
        (" true", " false"),
    )
    prepared = prepare_task(task, {})
    assert [s.prompt.text for s in prepared.samples] == [
        "Judge.\n\nWater is wet.\nVerdict:\n",  # the prompt file's text, a newline, the suite's text
        "Judge.\n\nVerdict:\n",
        "Judge.\n\nIce.\nVerdict:\n",
    ]
    assert [(s.choices, s.gold) for s in prepared.samples] == [((" true", " false"), g) for g in [(0,), (1,), ()]]
    for limit, kept in ((None, 3), (2, 2), (0.5, 2), (0.2, 1)):
        cut = prepare_task(task, {}, limit=limit)
        assert (len(cut.samples), cut.data["n_rows"]) == (kept, 3), limit
    # the rows are the engine's to select: --sample-id is not refused as for a dialect that runs its own rows
    (picked,), left_out = select_samples([prepared], ["1"])
    assert left_out == [] and [s.sample.id for s in picked.samples] == ["1"]
    full = evaluate([inputs], FakeModel(), output_dir=tmp_path / "full")
    chosen = evaluate([inputs], FakeModel(), output_dir=tmp_path / "chosen", sample_ids=["1"])
    assert chosen.tasks["claims_facts"]["data"]["n_rows"] == 3
    by_task = records_by_task(chosen.run_dir)
    assert [r["id"] for r in by_task["claims_facts"]] == ["1"]
    assert (
        by_task["claims_facts"][0]["distribution"] == records_by_task(full.run_dir)["claims_facts"][1]["distribution"]
    )
