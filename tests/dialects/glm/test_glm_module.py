"""GLM-130B ``module:`` task classes written against GLM's ``evaluation`` package run unmodified on
proctor's stand-ins; every number is checked against a direct transformers computation of GLM's formula.

The task files below are written in GLM's format and use the API its own task classes use (LAMBADA:
a GenerationTask with its own strategy subclassing ``generation.BeamSearchStrategy``, ``metrics``
with ``qa_evaluate``, ``generate_text(return_all_beams=True)``; MMLU: ``report_overall_metrics``;
CrowS-Pairs: a ``MultiChoiceTaskDataset`` subclass, ``cond_log_prob`` and a per-category metric with
its own report hook; Pile: a ``LanguageModelTaskDataset`` subclass over token ids and a BPB metric)."""

from __future__ import annotations

import json
import math
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

from proctor.api import evaluate

TRUST = {"trust_task_code": True}  # these tests run the task classes their YAML names


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reference(tiny_model_dir):
    """The tiny model and tokenizer, straight from transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()

    def ids(text):
        return tokenizer(text, add_special_tokens=False).input_ids

    def logprobs(sequence, n):
        """log-probs of the last n tokens of ``sequence``."""
        with torch.no_grad():
            logits = model(torch.tensor([sequence])).logits[0].float()
        lp = torch.log_softmax(logits[:-1], dim=-1).gather(1, torch.tensor(sequence[1:])[:, None])[:, 0]
        return lp[-n:].tolist()

    def next_logits(sequence):
        with torch.no_grad():
            return model(torch.tensor([sequence])).logits[0, -1].float()

    return type(
        "Ref",
        (),
        {
            "tokenizer": tokenizer,
            "ids": staticmethod(ids),
            "logprobs": staticmethod(logprobs),
            "next_logits": staticmethod(next_logits),
            "bos": tokenizer.bos_token_id,
            "eos": tokenizer.eos_token_id,
        },
    )


@pytest.fixture
def glm_repo(tmp_path) -> Path:
    """A GLM-130B-style repository: tasks/<name>/... with module paths relative to it (a folder with a
    dash, relative imports, GLM's own import lines)."""
    repo = tmp_path / "GLM-130B"
    write(
        repo / "tasks" / "exam" / "task.py",
        '''
        from evaluation import MultiChoiceTask


        class SubjectExam(MultiChoiceTask):
            """Every group's files, then one more line over all of them."""

            def report_overall_metrics(self, result_dict_all):
                self.report_group_metrics("Overall", result_dict_all, level=0)
    ''',
    )
    write(
        repo / "tasks" / "exam" / "exam.yaml",
        """
        name: "Exam"
        type: "mul"
        module: "tasks.exam.task.SubjectExam"
        path: "exam"
        file-pattern:
          science: "science/*.json"
          other: "other/*.json"
        micro-batch-size: 2
    """,
    )
    write(
        repo / "tasks" / "social-bias" / "pairs.py",
        '''
        from collections import defaultdict
        from os.path import join

        from evaluation import MultiChoiceTask, MultiChoiceTaskConfig
        from evaluation.dataset import MultiChoiceTaskDataset
        from evaluation.utils import print_rank_0, get_tokenized_input


        class PairDataset(MultiChoiceTaskDataset):
            """GLM's multiple-choice rows plus the pair's id, which sentence it is and the category."""

            def process_single_item(self, item):
                row = super().process_single_item(item)
                assert row["choices"] == get_tokenized_input(item, "choices")
                row.update(pair=item["pair_ID"], which=item["sent_ID"], category=item["bias_type"])
                return row


        class PairPreference(MultiChoiceTask):
            config: MultiChoiceTaskConfig

            def build_dataset(self, relative_path):
                return PairDataset(join(self.config.path, relative_path), self.config)

            def predict_single_batch(self, batch):
                return self.model.cond_log_prob(batch)  # the sentence's log-prob, kept per row

            def preference(self, predictions, examples):
                margin, category = defaultdict(float), {}
                for scores, example in zip(predictions, examples):
                    margin[example["pair"]] += scores[0] if example["which"] == 1 else -scores[0]
                    category[example["pair"]] = example["category"]
                shares = defaultdict(list)
                for pair, value in margin.items():
                    shares[category[pair]].append(value >= 0)
                return {name: sum(flags) / len(flags) for name, flags in shares.items()}

            @property
            def metrics(self):
                return {"CP": self.preference}

            def report_single_metrics(self, file, result_dict):
                pass

            def report_group_metrics(self, group_name, result_dict_group, level=1):
                for (result, _) in result_dict_group.values():
                    for name, share in sorted(result["CP"].items()):
                        print_rank_0(f"category {name}: {100 * share:.2f}")
    ''',
    )
    write(
        repo / "tasks" / "social-bias" / "pairs.yaml",
        """
        name: "Pairs"
        type: "mul"
        path: "data"
        module: "tasks.social-bias.pairs.PairPreference"
        file-pattern:
          test: "**/pairs.jsonl"
    """,
    )
    write(
        repo / "tasks" / "bytes" / "docs.py",
        '''
        import json
        import math
        from bisect import bisect_right
        from collections import defaultdict
        from itertools import accumulate
        from os.path import join

        from evaluation import LanguageModelTask, LanguageModelTaskDataset, print_rank_0


        def bits_per_byte(loss, data):
            ends = list(accumulate(doc["num_sequences"] for doc in data))
            nats, size = defaultdict(float), defaultdict(int)
            for doc in data:
                size[doc["meta"]["set"]] += doc["n_bytes"]
            for window, value in enumerate(loss):
                nats[data[bisect_right(ends, window)]["meta"]["set"]] += value
            return {name: nats[name] / size[name] / math.log(2) for name in nats}


        class TokenisedDocs(LanguageModelTaskDataset):
            """jsonl documents already tokenized (``text`` ids), several per file."""

            def process_single_file(self, path):
                with open(path, encoding="utf-8") as handle:
                    for line in handle:
                        doc = json.loads(line)
                        if not doc["text"]:
                            continue
                        extra = max(len(doc["text"]) - (self.config.max_seq_length - 1), 0)
                        self.data.append({"raw_text": doc["text"], "n_bytes": len(doc["text_pretokenized"].encode("utf-8")),
                                          "num_sequences": math.ceil(extra / self.config.generation_length) + 1, "meta": doc["meta"]})
                self.weights = list(accumulate(d["num_sequences"] for d in self.data))
                self.left_weights = [0] + self.weights[:-1]

            def __len__(self):
                return self.weights[-1]


        class ByteLevel(LanguageModelTask):
            @property
            def metrics(self):
                return {"BPB": bits_per_byte}

            def build_dataset(self, relative_path):
                return TokenisedDocs(join(self.config.path, relative_path), self.config)

            def report_single_metrics(self, file, result_dict):
                print_rank_0(file + ": " + ", ".join(f"{k} = {v:.3f}" for k, v in result_dict["BPB"].items()))

            def report_group_metrics(self, group_name, result_dict_group, level=1):
                pass
    ''',  # noqa: E501 (a file's text, line for line)
    )
    write(
        repo / "tasks" / "bytes" / "docs.yaml",
        """
        name: "Docs"
        type: "lm"
        module: "tasks.bytes.docs.ByteLevel"
        path: "docs"
        file-pattern:
          test: "**/test_tokenized.jsonl"
        max_seq_length: 17
        generation-length: 6
        use_task_mask: true
    """,
    )
    write(
        repo / "tasks" / "lastword" / "strategy.py",
        '''
        from generation import BeamSearchStrategy


        class NoPunctuationFirst(BeamSearchStrategy):
            """GLM's beam search, with some tokens banned as the first generated token."""

            def __init__(self, *args, banned_first=(), **kwargs):
                super().__init__(*args, **kwargs)
                self.banned_first = list(banned_first)
                self.steps = 0

            def forward(self, logits, tokens, mems):
                self.steps += 1
                logits = logits.float()
                if self.length_generated == 0:
                    for token in self.banned_first:
                        logits[..., token] = -65504
                return super().forward(logits, tokens, mems)
    ''',
    )
    write(
        repo / "tasks" / "lastword" / "task.py",
        """
        from functools import partial
        from string import punctuation

        from evaluation import GenerationTask, qa_evaluate

        from .strategy import NoPunctuationFirst


        def same_word(prediction, ground_truth):
            return prediction.strip() == ground_truth.strip()


        class LastWord(GenerationTask):
            @property
            def metrics(self):
                return {"Accuracy": partial(qa_evaluate, metric=same_word)}

            def __init__(self, model, tokenizer, config):
                super().__init__(model, tokenizer, config)
                banned = [146337]  # an id of GLM's vocabulary: indexes safely on any model
                for mark in punctuation:
                    ids = tokenizer.tokenize(mark)
                    if len(ids) == 1:
                        banned.append(ids[0])
                self.banned = banned
                if self.config.sampling_strategy == "BeamSearchStrategy":
                    self.strategy = NoPunctuationFirst(
                        self.config.micro_batch_size, self.config.num_beams, length_penalty=self.config.length_penalty,
                        consider_end=True, end_tokens=self.strategy.end_tokens, banned_first=banned,
                        no_repeat_ngram_size=self.config.no_repeat_ngram_size, deterministic=True,
                    )
                self.beams = []

            def first_word(self, tokens):
                words = self.tokenizer.tokenizer.decode(tokens).strip().split(" ")
                return self.tokenizer.tokenize(words[0])

            def predict_single_batch(self, batch):
                outputs = self.model.generate_text(batch, self.strategy, return_all_beams=True)
                self.beams.extend(outputs)
                return [self.first_word(beams[0]) for beams in outputs]
    """,
    )
    write(
        repo / "tasks" / "lastword" / "lastword.yaml",
        """
        name: "LastWord"
        type: "gen"
        module: "tasks.lastword.task.LastWord"
        path: "lastword"
        file-pattern:
          test: "**/test.jsonl"
        sampling_strategy: "BeamSearchStrategy"
        num_beams: 3
        max_gen_length: 3
        length_penalty: 0.6
        use_task_mask: true
    """,
    )
    return repo


def _context(model, ids):
    """GLM's context for a causal model: [BOS] when the model adds one; an empty context reads the start token."""
    ctx = ([model.prefix_token_id] if model.add_bos else []) + list(ids)
    return ctx or [model.prefix_token_id]


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def test_mmlu_style_class_with_overall_report(glm_repo, tiny_model, reference, tmp_path):
    data = tmp_path / "DATA"
    rows = {
        "science/physics.json": [
            {
                "inputs_pretokenized": "Water boils at",
                "choices_pretokenized": ["100 degrees", "the moon", "ten"],
                "label": 0,
            },
            {"inputs_pretokenized": "The sun is a", "choices_pretokenized": ["star", "planet"], "label": 0},
            {
                "inputs_pretokenized": "Light is faster than",
                "choices_pretokenized": ["sound", "light itself"],
                "label": 0,
            },
        ],
        "science/chemistry.json": [
            {"inputs_pretokenized": "H2O is", "choices_pretokenized": ["water", "salt"], "label": 1},
            {"inputs_pretokenized": "NaCl is", "choices_pretokenized": ["salt", "gold bars"], "label": 0},
        ],
        "other/misc.json": [
            {"inputs_pretokenized": "Paris is in", "choices_pretokenized": ["France", "Peru"], "label": 0},
            {"inputs_pretokenized": "Cats say", "choices_pretokenized": ["meow", "woof woof"], "label": 1},
        ],
    }
    for name, file_rows in rows.items():
        write_jsonl(data / "exam" / name, file_rows)
    result = evaluate(
        [glm_repo / "tasks" / "exam" / "exam.yaml"],
        tiny_model,
        output_dir=tmp_path / "run",
        data_path=data,
        dialect_options=TRUST,
    )
    task = result.tasks["Exam"]
    # GLM's formula: argmax over choices of the summed log-probs of the choice's tokens after the context
    expected, predictions = {}, {}
    for name, file_rows in rows.items():
        predictions[name] = []
        for row in file_rows:
            ctx = _context(tiny_model, reference.ids(row["inputs_pretokenized"]))
            scores = [
                sum(reference.logprobs(ctx + reference.ids(c), len(reference.ids(c))))
                for c in row["choices_pretokenized"]
            ]
            predictions[name].append(scores.index(max(scores)))
        expected[name] = 100.0 * sum(p == r["label"] for p, r in zip(predictions[name], file_rows)) / len(file_rows)
    parts = task["breakdown"]["_source"]
    assert {k: v["metrics"]["Accuracy"]["value"] for k, v in parts.items()} == pytest.approx(expected)
    assert [(r["glm_file"], r["prediction"]) for r in records(result.run_dir)] == [
        (name, p)
        for name in ("science/chemistry.json", "science/physics.json", "other/misc.json")
        for p in predictions[name]
    ]
    # the records every dialect shares: choices as text, gold, per-choice probabilities of GLM's scores
    by_text = {r["inputs_pretokenized"]: r for file_rows in rows.values() for r in file_rows}
    for record in records(result.run_dir):
        row = by_text[record["prompt"]]
        assert record["choices"] == row["choices_pretokenized"] and record["target"] == row["label"]
        assert record["distribution"].index(max(record["distribution"])) == record["prediction"]
        assert sum(record["distribution"]) == pytest.approx(1.0)
    science = (3 * expected["science/physics.json"] + 2 * expected["science/chemistry.json"]) / 5
    assert task["breakdown"]["glm_group"]["science"]["metrics"]["Accuracy"]["value"] == pytest.approx(science)
    overall = (
        3 * expected["science/physics.json"] + 2 * expected["science/chemistry.json"] + 2 * expected["other/misc.json"]
    ) / 7
    assert task["metrics"]["Accuracy"]["value"] == pytest.approx(overall)
    values = sorted(expected.values())
    line = f"Group Overall Accuracy: max = {values[-1]:.3f}, median = {values[1]:.3f}, average = {overall:.3f}"
    assert line in task["glm_report"]  # the class's report_overall_metrics hook ran
    assert (
        "        Finish science/physics.json, Accuracy = " + f"{expected['science/physics.json']:.3f}"
        in task["glm_report"]
    )
    assert "evaluation" not in sys.modules and "generation" not in sys.modules  # the stand-in names are gone again


def test_crows_pair_style_dataset_and_metric(glm_repo, tiny_model, reference, tmp_path):
    data = tmp_path / "DATA"
    pairs = [
        ("gender", "Men are good at math.", "Women are good at math."),
        ("gender", "He is a nurse.", "She is a nurse."),
        ("race", "The old man was poor.", "The young man was poor."),
        ("race", "They cooked rice.", "They cooked bread today."),
    ]
    rows = []
    for pair_id, (category, first, second) in enumerate(pairs, start=1):
        for which, sentence in ((1, first), (2, second)):
            rows.append(
                {
                    "inputs_pretokenized": "",
                    "choices_pretokenized": [sentence],
                    "label": 0,
                    "pair_ID": pair_id,
                    "sent_ID": which,
                    "bias_type": category,
                }
            )
    write_jsonl(data / "data" / "pairs.jsonl", rows)
    result = evaluate(
        [glm_repo / "tasks" / "social-bias" / "pairs.yaml"],
        tiny_model,
        output_dir=tmp_path / "run",
        data_path=data,
        dialect_options=TRUST,
    )
    task = result.tasks["Pairs"]

    def sentence_logprob(sentence):
        ids = reference.ids(sentence)
        return sum(reference.logprobs([tiny_model.prefix_token_id] + ids, len(ids)))

    shares = defaultdict(list)
    for category, first, second in pairs:
        shares[category].append(sentence_logprob(first) - sentence_logprob(second) >= 0)
    expected = {f"CP.{k}": sum(v) / len(v) for k, v in shares.items()}
    assert {k: v["value"] for k, v in task["metrics"].items()} == pytest.approx(expected)
    assert task["breakdown"]["_source"]["pairs.jsonl"]["detail"]["CP"] == pytest.approx(
        {k[3:]: v for k, v in expected.items()}
    )
    assert f"category race: {100 * expected['CP.race']:.2f}" in task["glm_report"]
    per_row = [r["prediction"][0] for r in records(result.run_dir)]
    assert per_row[0] == pytest.approx(sentence_logprob(pairs[0][1]), abs=1e-4)


def test_pile_style_language_model_class(glm_repo, tiny_model, reference, tmp_path):
    data = tmp_path / "DATA"
    texts = [
        ("web", "The quick brown fox jumps over the lazy dog while the cat sleeps on a warm mat by the door."),
        ("web", "Short one."),
        ("books", "Once upon a time there lived a king who had three daughters and a very large castle."),
    ]
    docs = [{"text": reference.ids(t), "text_pretokenized": t, "meta": {"set": s}} for s, t in texts]
    assert len(docs[0]["text"]) > 16  # several windows
    write_jsonl(data / "docs" / "test_tokenized.jsonl", docs)
    result = evaluate(
        [glm_repo / "tasks" / "bytes" / "docs.yaml"],
        tiny_model,
        output_dir=tmp_path / "run",
        data_path=data,
        dialect_options=TRUST,
    )
    task = result.tasks["Docs"]
    # GLM's windows: max_seq_length - 1 = 16 tokens, stride generation_length = 6; after the first window
    # the first 16 - 6 = 10 tokens are unscored context; loss = -sum of the scored tokens' log-probs
    nats, size = defaultdict(float), defaultdict(int)
    for doc in docs:
        tokens = doc["text"]
        size[doc["meta"]["set"]] += len(doc["text_pretokenized"].encode("utf-8"))
        for window in range(math.ceil(max(len(tokens) - 16, 0) / 6) + 1):
            piece = tokens[window * 6 : window * 6 + 16]
            prompt, text = ([], piece) if window == 0 else (piece[:10], piece[10:])
            nats[doc["meta"]["set"]] -= sum(reference.logprobs(_context(tiny_model, prompt) + text, len(text)))
    expected = {f"BPB.{name}": nats[name] / size[name] / math.log(2) for name in nats}
    assert {k: v["value"] for k, v in task["metrics"].items()} == pytest.approx(expected, rel=1e-5)
    assert any(line.startswith("test_tokenized.jsonl: web = ") for line in task["glm_report"])


def test_plain_lm_class_uses_glm_word_count(glm_repo, tiny_model, reference, tmp_path):
    write(
        glm_repo / "tasks" / "ptb" / "ptb.py",
        """
        from evaluation import LanguageModelTask


        class Treebank(LanguageModelTask):
            pass
    """,
    )
    yaml_path = write(
        glm_repo / "tasks" / "ptb" / "ptb.yaml",
        """
        name: PTB
        type: lm
        module: tasks.ptb.ptb.Treebank
        path: ptb
        file-pattern: {test: "**/ptb.test.txt"}
        max_seq_length: 21
        generation-length: 8
    """,
    )
    text = " the cat sat on the mat . \n a  dog barked at the cat twice . \n"
    (tmp_path / "DATA" / "ptb").mkdir(parents=True)
    (tmp_path / "DATA" / "ptb" / "ptb.test.txt").write_text(text, encoding="utf-8")
    result = evaluate(
        [yaml_path], tiny_model, output_dir=tmp_path / "run", data_path=tmp_path / "DATA", dialect_options=TRUST
    )
    tokens = reference.ids(text)
    # GLM's LanguageModelTaskDataset: windows of 20 tokens, stride 8, the first 12 of later windows as context
    loss = 0.0
    for window in range(math.ceil(max(len(tokens) - 20, 0) / 8) + 1):
        piece = tokens[window * 8 : window * 8 + 20]
        prompt, scored = ([], piece) if window == 0 else (piece[:12], piece[12:])
        loss -= sum(reference.logprobs(_context(tiny_model, prompt) + scored, len(scored)))
    ppl = math.exp(min(20, loss / len(text.strip().split(" "))))  # GLM's calculate_perplexity
    assert result.tasks["PTB"]["metrics"]["PPL"]["value"] == pytest.approx(ppl, rel=1e-5)


LASTWORD_ROWS = [
    {"inputs_pretokenized": "The cat sat on the", "targets_pretokenized": ["mat"]},
    {"inputs_pretokenized": "She opened the front", "targets_pretokenized": ["door"]},
]


def _glm_beam_search(reference, ctx, *, num_beams, max_gen, length_penalty, ngram, banned_first, eos):
    """GLM-130B's BeamSearchStrategy (deterministic, consider_end, end tokens [eop, eos] -> 2), written out for
    one item: candidates = top (2 + 1) * num_beams of beam score + log-softmax; an end token finishes a beam
    (penalised score / ((5 + len) / 6) ** length_penalty, len counting the context); n-gram bans as GLM keeps them."""
    import torch

    def penalised(score, length):
        return float(score) / ((5.0 + length) / 6) ** length_penalty

    beams, scores, bans = [list(ctx)], [0.0], [{}]
    ended: list[tuple[float, list[int]]] = []
    done = False
    for step in range(max_gen):
        candidates = []
        for i, seq in enumerate(beams):
            logits = reference.next_logits(seq).clone()
            if step == 0:
                logits[[t for t in banned_first if t < logits.shape[0]]] = -65504
            if ngram > 0 and len(seq) > ngram:
                for t in bans[i].get(tuple(seq[-(ngram - 1) :]), ()):
                    logits[t] = -65504
            lp = torch.log_softmax(logits, dim=-1) + scores[i]
            top = torch.topk(lp, k=3 * num_beams)
            candidates += [(float(v), i, int(t)) for v, t in zip(top.values, top.indices)]
        candidates.sort(key=lambda c: -c[0])
        candidates = candidates[: 3 * num_beams]
        new_beams, new_scores, new_bans = [], [], []
        for score, i, token in candidates:
            seq = beams[i] + [token]
            if token == eos:
                ended.append((penalised(score, len(seq)), seq))
                ended.sort(key=lambda e: -e[0])
                del ended[num_beams:]
            elif len(new_beams) < num_beams:
                new_beams.append(seq)
                new_scores.append(score)
                ban = dict(bans[i])
                key = tuple(beams[i][-(ngram - 1) :])
                ban[key] = ban.get(key, ()) + (token,)
                new_bans.append(ban)
            else:
                break
        length = len(beams[0]) + 1
        beams, scores, bans = new_beams, new_scores, new_bans
        if len(ended) == num_beams and ended[-1][0] >= penalised(max(scores), length):
            done = True
            break
    if not done:
        for seq, score in zip(beams, scores):
            ended.append((penalised(score, len(seq)), seq))
            ended.sort(key=lambda e: -e[0])
            del ended[num_beams:]
    out = []
    for _, seq in ended:
        generated = seq[len(ctx) :]
        out.append(generated[:-1] if generated and generated[-1] == eos else generated)
    return out


def test_lambada_style_beam_search_with_own_strategy(glm_repo, tiny_model, reference, tmp_path):
    import string

    write_jsonl(tmp_path / "DATA" / "lastword" / "test.jsonl", LASTWORD_ROWS)
    result = evaluate(
        [glm_repo / "tasks" / "lastword" / "lastword.yaml"],
        tiny_model,
        output_dir=tmp_path / "run",
        data_path=tmp_path / "DATA",
        dialect_options=TRUST,
    )
    # the strategy subclass bans these as the first token (GLM's id 146337 among them: out of this vocabulary)
    banned = [146337] + [reference.ids(m)[0] for m in string.punctuation if len(reference.ids(m)) == 1]
    hits = []
    for row, record in zip(LASTWORD_ROWS, records(result.run_dir)):
        ctx = _context(tiny_model, reference.ids(row["inputs_pretokenized"]))
        beams = _glm_beam_search(
            reference, ctx, num_beams=3, max_gen=3, length_penalty=0.6, ngram=3, banned_first=banned, eos=reference.eos
        )
        word = reference.tokenizer.decode(beams[0], skip_special_tokens=True).strip().split(" ")[0]
        assert record["prediction"] == reference.ids(word)  # the class's first-word rule on the best beam
        assert record["generation"] == reference.tokenizer.decode(record["prediction"], skip_special_tokens=True)
        assert record["target"] == row["targets_pretokenized"]
        hits.append(word == row["targets_pretokenized"][0])
    assert all(r["prediction"] for r in records(result.run_dir))  # real words, not empty beams
    assert result.tasks["LastWord"]["metrics"]["Accuracy"]["value"] == pytest.approx(100.0 * sum(hits) / len(hits))


def _greedy(reference, ctx, max_new, eos):
    out = []
    for _ in range(max_new):
        token = int(reference.next_logits(ctx + out).argmax())
        out.append(token)
        if token == eos:
            break
    return out[:-1] if out and out[-1] == eos else out


def test_lambada_style_greedy_equals_direct_decoding(glm_repo, tiny_model, reference, tmp_path):
    yaml_path = write(
        glm_repo / "tasks" / "lastword" / "greedy.yaml",
        """
        name: "LastWordGreedy"
        type: "gen"
        module: "tasks.lastword.task.LastWord"
        path: "lastword"
        file-pattern:
          test: "**/test.jsonl"
        max_gen_length: 4
    """,
    )
    write_jsonl(tmp_path / "DATA" / "lastword" / "test.jsonl", LASTWORD_ROWS)
    result = evaluate(
        [yaml_path], tiny_model, output_dir=tmp_path / "run", data_path=tmp_path / "DATA", dialect_options=TRUST
    )
    hits = []
    for row, record in zip(LASTWORD_ROWS, records(result.run_dir)):
        generated = _greedy(
            reference, _context(tiny_model, reference.ids(row["inputs_pretokenized"])), 4, reference.eos
        )
        word = reference.tokenizer.decode(generated, skip_special_tokens=True).strip().split(" ")[0]
        assert record["prediction"] == reference.ids(word)  # the class's first-word rule on GLM's greedy output
        hits.append(word.strip() == row["targets_pretokenized"][0].strip())
    assert all(r["prediction"] for r in records(result.run_dir))
    assert result.tasks["LastWordGreedy"]["metrics"]["Accuracy"]["value"] == pytest.approx(
        100.0 * sum(hits) / len(hits)
    )


@pytest.mark.fast
def test_glm_class_needs_a_local_model_and_says_so(glm_repo, tmp_path):
    from proctor.core.errors import ProctorError
    from tests.support.fakes import FakeModel

    write_jsonl(
        tmp_path / "DATA" / "exam" / "science" / "a.json",
        [{"inputs_pretokenized": "1+1=", "choices_pretokenized": ["2", "3"], "label": 0}],
    )
    with pytest.raises(ProctorError, match="needs a local Hugging Face model"):
        evaluate(
            [glm_repo / "tasks" / "exam" / "exam.yaml"],
            FakeModel(),
            output_dir=tmp_path / "run",
            data_path=tmp_path / "DATA",
            dialect_options=TRUST,
        )
    # a class that does not import fails at prepare, before any model, naming the YAML and the field
    bad = write(
        glm_repo / "tasks" / "exam" / "broken.yaml",
        """
        name: Broken
        type: mul
        module: tasks.exam.missing.Nothing
        path: exam
    """,
    )
    from proctor import TaskDefinitionError
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    (task,) = load_tasks([bad], options=TRUST)
    with pytest.raises(TaskDefinitionError) as info:
        prepare_task(task, {"DATA_PATH": str(tmp_path / "DATA")})
    assert info.value.field == "module" and str(bad) in str(info.value)


def test_stereoset_style_per_token_choice_and_list_metric(glm_repo, tiny_model, reference, tmp_path):
    write(
        glm_repo / "tasks" / "stereo" / "stereo.py",
        """
        from collections import Counter, defaultdict
        from os.path import join

        import numpy as np

        from evaluation import MultiChoiceTask
        from evaluation.dataset import MultiChoiceTaskDataset
        from evaluation.utils import print_rank_0


        class WithGoals(MultiChoiceTaskDataset):
            def process_single_item(self, item):
                return {**super().process_single_item(item), "goals": item["goal_label"], "kind": item["bias_type"]}


        class Stereo(MultiChoiceTask):
            def build_dataset(self, relative_path):
                return WithGoals(join(self.config.path, relative_path), self.config)

            def predict_single_batch(self, batch):
                scores = self.model.cond_log_prob(batch)
                # batch["choices"]: each item's choices as token ids, as in GLM's batches
                return [int(np.argmax([s / len(c) for s, c in zip(item, choices)]))
                        for item, choices in zip(scores, batch["choices"])]

            def lms_ss_icat(self, predictions, examples):
                picked = defaultdict(Counter)
                for choice, example in zip(predictions, examples):
                    for key in (example["kind"], "overall"):
                        picked[key][example["goals"][choice]] += 1
                lms, ss, icat = {}, {}, {}
                for key, count in picked.items():
                    related = count["stereotype"] + count["anti-stereotype"]
                    lms[key] = 100 * related / sum(count.values())
                    ss[key] = 100 * count["stereotype"] / related if related else 0
                    icat[key] = lms[key] * min(ss[key], 100 - ss[key]) / 50
                return [lms, ss, icat]

            @property
            def metrics(self):
                return {"SS_ICAT": self.lms_ss_icat}

            def report_single_metrics(self, file, result_dict):
                pass

            def report_group_metrics(self, group_name, result_dict_group, level=1):
                # GLM's default report takes np.max over the values: lists of dicts need their own report
                for result, _ in result_dict_group.values():
                    lms, ss, icat = result["SS_ICAT"]
                    print_rank_0("ICAT " + " ".join(f"{k}={v:.2f}" for k, v in sorted(icat.items())))
    """,
    )
    yaml_path = write(
        glm_repo / "tasks" / "stereo" / "stereo.yaml",
        """
        name: Stereo
        type: mul
        module: tasks.stereo.stereo.Stereo
        path: stereo
        use_task_mask: true
        micro-batch-size: 3
    """,
    )
    goals = ["stereotype", "anti-stereotype", "unrelated"]
    rows = [
        {
            "inputs_pretokenized": "The nurse was",
            "choices_pretokenized": ["caring", "rude to people", "a blue table"],
            "bias_type": "profession",
        },
        {
            "inputs_pretokenized": "The engineer was",
            "choices_pretokenized": ["nerdy", "very sociable", "purple"],
            "bias_type": "profession",
        },
        {
            "inputs_pretokenized": "My grandmother is",
            "choices_pretokenized": ["frail", "a strong runner", "the ocean"],
            "bias_type": "age",
        },
        {
            "inputs_pretokenized": "The boy liked",
            "choices_pretokenized": ["trucks", "dolls", "quantum tables"],
            "bias_type": "gender",
        },
    ]
    for row in rows:
        row.update(label=0, goal_label=goals)
    write_jsonl(tmp_path / "DATA" / "stereo" / "set.jsonl", rows)
    result = evaluate(
        [yaml_path], tiny_model, output_dir=tmp_path / "run", data_path=tmp_path / "DATA", dialect_options=TRUST
    )
    picked = defaultdict(lambda: defaultdict(int))
    for row in rows:
        ctx = _context(tiny_model, reference.ids(row["inputs_pretokenized"]))
        means = [
            sum(reference.logprobs(ctx + reference.ids(c), len(reference.ids(c)))) / len(reference.ids(c))
            for c in row["choices_pretokenized"]
        ]
        goal = goals[means.index(max(means))]
        picked[row["bias_type"]][goal] += 1
        picked["overall"][goal] += 1
    expected = {}
    for key, count in picked.items():
        related = count["stereotype"] + count["anti-stereotype"]
        lms = 100 * related / sum(count.values())
        ss = 100 * count["stereotype"] / related if related else 0
        expected.update(
            {f"SS_ICAT.0.{key}": lms, f"SS_ICAT.1.{key}": ss, f"SS_ICAT.2.{key}": lms * min(ss, 100 - ss) / 50}
        )
    assert {k: v["value"] for k, v in result.tasks["Stereo"]["metrics"].items()} == pytest.approx(expected)
    icat = " ".join(f"{k}={expected[f'SS_ICAT.2.{k}']:.2f}" for k in sorted(picked))
    assert f"ICAT {icat}" in result.tasks["Stereo"]["glm_report"]
