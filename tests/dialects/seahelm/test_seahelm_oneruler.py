"""ONERULER-shaped tasks (NIAH): no ``filepath``; the task-folder dataloader builds its rows from files in the
repository (books, vocabulary), opened by paths relative to SEA-HELM's root, sized with the evaluated model's
tokenizer (``AutoTokenizer.from_pretrained(model_name)``) and made with ``Dataset.from_dict(...).map(num_proc=32)``,
as upstream's niah_dataloader.py does. The files below are written in that shape (upstream's code is not copied)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import pytest

from proctor.api import evaluate, load_tasks
from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import GenerateResult
from proctor.models.base import Model
from tests.conftest import TEST_DATA
from tests.support.oneruler_inputs import WORDS_METRIC

CONFIG = """\
niah_single_1k:
  metadata:
    version: 1
  name: niah_single_1k
  competency: long-context
  dataloader_file: seahelm_tasks/long_context/oneruler/niah/niah_dataloader.py
  dataloader_class: NIAHDataloader
  metric_file: seahelm_tasks/long_context/oneruler/niah/niah_metric.py
  metric_class: NIAHMetric
  metric: normalized_strict_accuracy
  aggregation_group: oneruler
  random_seed: 9472347
  num_samples: 3
  min_num_keys: 1
  num_values: 1
  num_queries:
  context_size: 300
  languages:
    en:
      filepath:
      example_filepath:
      max_tokens: 32
      prompt_template:
        preamble: |-
          Please read and memorize the text below. I will ask you about it later.
        task_template: |-
          <text>
          {text}
          </text>

          <Question>What special magic numbers associated with {needle_text} are mentioned in the provided text?</Question>

          Please provide your answer in the following format:
          <Answer>List all numbers here</Answer>
        answer_template:
        answer_tag: <Answer>
"""  # noqa: E501 (a file's text, line for line)

LOADER = """\
import glob
import random
import re

import pandas as pd
from datasets import Dataset
from transformers import AutoTokenizer

from src.base_logger import get_logger
from src.dataloaders.base_dataloader import AbstractDataloader
from src.task_config import TaskConfig

logger = get_logger(__name__)


class NIAHDataloader(AbstractDataloader):
    def __init__(self, task_config: TaskConfig, default_num_in_context_examples: int, is_base_model: bool = False,
                 model_name: str = "", run_base_path: str = "", inference_file_type: str = "jsonl", num_workers: int = 16):
        super().__init__(task_config, default_num_in_context_examples, is_base_model=is_base_model, model_name=model_name,
                         run_base_path=run_base_path, inference_file_type=inference_file_type, num_workers=num_workers)
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.random_seed = self.task_config.config.random_seed
        self.num_samples = self.task_config.config.num_samples
        self.context_size = self.task_config.config.context_size
        vocab_df = pd.read_csv("seahelm_tasks/long_context/oneruler/niah/vocab/100_noun_list_translated.tsv", sep="\\t")
        self.vocab_list = [word.strip() for word in vocab_df[self.lang].tolist()]
        self.empty_needle = 'The special magic number for "{needle}" is: {value}. '

    def load_dataset(self, limit: int = None):
        num_samples = min(limit, self.num_samples) if limit is not None else self.num_samples
        filepaths = sorted(glob.glob(f"seahelm_tasks/long_context/oneruler/niah/books/{self.lang}/*.txt"))
        books = "\\n\\n".join(open(f, "r", encoding="utf-8").read() for f in filepaths)
        tokens = self.tokenizer(books, add_special_tokens=False)["input_ids"][: self.context_size]
        self.text = self.tokenizer.decode(tokens)
        self.sentences = [s for s in re.split(r"(?<=[.!?])\\s+", self.text) if s.strip()]
        seeds = random.Random(self.random_seed).sample(range(2**31 - 1), num_samples)
        data = Dataset.from_dict({"seed": seeds})
        data = data.map(lambda row: self.generate_single_instance(seed=row["seed"]), num_proc=32)
        self.dataset = data

    def generate_single_instance(self, seed: int = 0):
        rng = random.Random(seed)
        needle = rng.choice(self.vocab_list)
        value = str(rng.randint(0, 2**31 - 1))
        point = rng.choice(self.sentences)
        text = self.text.replace(point, self.empty_needle.format(needle=needle, value=value) + point, 1)
        return {"prompts": [{"text": text, "needle_text": f'"{needle}"'}], "label": [value], "metadata": {"num_values": 1}}

    def prepare_conversations_for_inference(self, turn: int, fewshot_as_multiturn: bool = False):
        self.dataset = self.dataset.map(self.get_prompt_formatter(turn, fewshot_as_multiturn), num_proc=self.num_workers)
        return self.dataset["conversations"]

    def get_num_turns(self) -> int:
        return 1

    def get_prompt_formatter(self, turn: int, fewshot_as_multiturn: bool = False):
        def _prompt_formatter(row):
            conversations = []
            roles, contents = self.generate_formatted_conversation(self.specific_task_config, row["prompts"][turn - 1],
                                                                   fewshot_as_multiturn=fewshot_as_multiturn)
            for role, content in zip(roles, contents, strict=True):
                conversations.append({"role": role, "content": content})
            row["conversations"] = conversations
            return row

        return _prompt_formatter
"""  # noqa: E501 (a file's text, line for line)

METRIC = WORDS_METRIC.format(name="NIAHMetric")  # share of the references in the <Answer>, strict: all

BOOK = " ".join(f"Sentence number {i} tells of the little women and their long winter." for i in range(120))


def _tree(tmp_path: Path) -> Path:
    folder = tmp_path / "SEA-HELM" / "seahelm_tasks" / "long_context" / "oneruler" / "niah"
    (folder / "books" / "en").mkdir(parents=True)
    (folder / "vocab").mkdir()
    (folder / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (folder / "niah_dataloader.py").write_text(LOADER, encoding="utf-8")
    (folder / "niah_metric.py").write_text(METRIC, encoding="utf-8")
    (folder / "books" / "en" / "little_women.txt").write_text(BOOK, encoding="utf-8")
    (folder / "vocab" / "100_noun_list_translated.tsv").write_text(
        "en\tzh\napple\t苹果\nriver\t河\nstone\t石头\n", encoding="utf-8"
    )
    return tmp_path / "SEA-HELM" / "seahelm_tasks"


class Oracle(Model):
    """Reads the asked needle's number from the haystack; answers "0" when that number is odd."""

    name = "oracle"
    has_chat_template = True

    @property
    def fingerprint(self) -> dict:
        return {"backend": "oracle"}

    def apply_chat_template(self, messages) -> str:
        return "".join(m["content"] for m in messages)

    def generate(self, requests, progress=None):
        out = []
        for r in requests:
            needle = re.search(r"associated with \"(.+?)\"", r.prompt).group(1)
            value = re.search(rf'magic number for "{re.escape(needle)}" is: (\d+)', r.prompt).group(1)
            out.append(GenerateResult(f"<Answer>{value if int(value) % 2 == 0 else '0'}</Answer>", "stop", 1, 1))
        return out

    def loglikelihood(self, requests: Sequence, progress=None):
        raise NotImplementedError

    def rolling_loglikelihood(self, requests: Sequence, progress=None):
        raise NotImplementedError


def test_niah_builds_its_rows_from_repository_files(tmp_path, smollm2_tokenizer_dir):
    tasks = _tree(tmp_path)
    assert [t.name for t in load_tasks([tasks])] == ["niah_single_1k/en"]  # listed, not dropped for a missing filepath
    options = {"trust_task_code": True, "seahelm_model_name": str(smollm2_tokenizer_dir)}
    result = evaluate([tasks], Oracle(), output_dir=tmp_path / "run", export=False, dialect_options=options)
    from proctor.runs.run_exports import iter_samples

    records = [r for r in iter_samples(result.run_dir) if r["task"] == "niah_single_1k/en"]
    assert len(records) == 3  # num_samples rows, each a haystack with its needle
    strict = []
    for record in records:
        reference = record["references"][0]
        assert len(reference) == 1 and reference[0].isdigit()
        completion = record["completion"]
        # NIAHMetric's rule written out: the text between <Answer> and "</", split on commas, all references found
        predicted = {
            p.strip().lower() for p in re.search(r"(?<=<Answer>)([\s\S]*)(?=</)", completion).group(1).split(",")
        }
        strict.append(1 if set(reference) <= predicted else 0)
    assert result.metric("niah_single_1k/en", "normalized_strict_accuracy") == pytest.approx(
        100 * sum(strict) / len(strict)
    )
    assert strict == [int(r["references"][0][0]) % 2 == 0 for r in records]  # the oracle found every needle


def test_niah_without_a_local_tokenizer_is_a_clear_error(tmp_path):
    tasks = _tree(tmp_path)
    with pytest.raises(Exception, match="evaluated model's tokenizer"):
        evaluate(
            [tasks], Oracle(), output_dir=tmp_path / "run", export=False, dialect_options={"trust_task_code": True}
        )


def test_niah_needs_the_trust_flag(tmp_path):
    tasks = _tree(tmp_path)
    with pytest.raises(TaskDefinitionError, match="--trust-task-code"):
        evaluate([tasks], Oracle(), output_dir=tmp_path / "run", export=False)


# ---------------------------------------------------------------- rows equal SEA-HELM's own generator's
RECORDED = TEST_DATA / "seahelm_oneruler" / "upstream_rows.json"


def test_oneruler_rows_equal_seahelm_generators(tiny_model_dir, tmp_path):
    """NIAH (single, multi-key, multi-value, multi-query, none; en and zh) and CWE (vi) rows made by `proctor run`
    equal SEA-HELM's own, row by row: the same labels and the same prompt (SHA-256 of the user message).

    Expected rows: recorded once from SEA-HELM itself (aisingapore/SEA-HELM 6844e6c, its `src` and its
    `niah_dataloader.py` / `cwe_dataloader.py`, transformers 5.12.0 as it pins, tokenizers 0.22.2, datasets 5.2.0)
    with `python tests/support/data/seahelm_oneruler/record_upstream.py SEAHELM_CHECKOUT TOKENIZER_DIR OUT.json`, on the
    files of `oneruler_inputs.py` (seed 9472347) and the SmolLM2 tokenizer the tiny model carries (conftest's
    `smollm2_tokenizer_dir`). proctor ran SEA-HELM's two dataloaders on the same tree (`--trust-task-code`) and
    gave the recorded rows, all 33; this test runs the written-out generators (`oneruler_inputs.NIAH_LOADER` /
    `CWE_LOADER`, SEA-HELM's algorithm in its dataloader format: SEA-HELM's code is not in this project) through
    the same machinery: working directory, the model's tokenizer, `TaskConfig`, `Dataset.map`, the prompt template."""
    import hashlib
    import json
    import os
    import subprocess
    import sys

    from proctor.runs.run_exports import iter_samples
    from tests.conftest import REPO
    from tests.support.oneruler_inputs import write_tree

    tasks = write_tree(tmp_path / "SEA-HELM")
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "proctor.cli",
        "run",
        str(tasks),
        "--model",
        str(tiny_model_dir),
        "--trust-task-code",
        "--seahelm-tasks",
        "all",
        "-o",
        str(run_dir),
        "--quiet",
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO / "src")}
    )
    assert done.returncode == 0, done.stderr
    rows: dict[str, list[dict]] = {}
    for record in iter_samples(run_dir):
        rows.setdefault(record["task"], []).append(record)
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert set(rows) == set(recorded) and len(recorded) == 11
    for task, expected in recorded.items():
        assert len(rows[task]) == len(expected), task
        for k, (mine, theirs) in enumerate(zip(rows[task], expected)):
            assert theirs["roles"] == ["user"]
            assert mine["references"] == [theirs["label"]], (task, k)
            assert len(mine["prompt"]) == theirs["chars"], (task, k)
            assert hashlib.sha256(mine["prompt"].encode()).hexdigest() == theirs["sha256"], (task, k)
