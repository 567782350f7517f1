"""GLM's datasets (``evaluation/dataset.py``) for a causal model.

Rows are read and tokenized as GLM reads them (``process_single_file`` / ``process_single_item``,
the same truncation rules and item fields), so a task's own dataset subclass that overrides those
runs unchanged. What ``__getitem__`` / ``collate_fn`` hand to the model differs: no [MASK] / [sop]
tokens, no 2-D positions or block attention, but the context and continuation token ids that a
causal model scores (see ``proctor.dialects.glm.model``).
"""

from __future__ import annotations

import math
import os
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path
from typing import List, Union

import numpy as np

from proctor.data.readers import json_values
from proctor.dialects.glm.tokenizer import get_tokenizer
from proctor.dialects.glm.utils import get_tokenized_input


class EvaluationDataset:
    def __init__(self, path: Union[str, List[str]], config) -> None:
        self.path = path if isinstance(path, list) else [path]
        self.config = config
        self.max_seq_length = self.config.max_seq_length
        self.dtype = np.int64
        self.tokenizer = get_tokenizer()
        self.mask_id = self.tokenizer.get_command("[MASK]")
        self.gmask_id = self.tokenizer.get_command("[gMASK]")
        self.data: list = []
        for p in self.path:
            self.process_single_file(p)

    @property
    def has_collate_fn(self) -> bool:
        return False

    def collate_fn(self, samples):
        return None

    def process_single_file(self, path):
        # GLM json.loads each line of the file; proctor's reader does, with its checks (a blank line skipped, a bad
        # one, a key given twice or bytes that are not UTF-8 an error naming the file and line), as the handler did
        for _, item in json_values(Path(path)):
            self.data.append(self.process_single_item(item))

    def process_single_item(self, item) -> dict:
        raise NotImplementedError

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


class GenerationTaskDataset(EvaluationDataset):
    def process_single_item(self, item):
        text, targets = get_tokenized_input(item, "inputs"), get_tokenized_input(item, "targets")
        if len(text) + self.config.max_gen_length + 2 > self.config.max_seq_length:
            text_length = self.config.max_seq_length - self.config.max_gen_length - 2
            text = text[len(text) - text_length :]
        return {"text": text, "targets": targets}

    @property
    def has_collate_fn(self) -> bool:
        return True

    def collate_fn(self, samples):
        return {
            "tokens": [list(s["text"]) for s in samples],
            "context_length": [len(s["text"]) for s in samples],
            "targets": [s["targets"] for s in samples],
            "max_gen_length": self.config.max_gen_length,
        }

    def __getitem__(self, idx):
        item = self.data[idx]
        return {"text": item["text"], "targets": [np.array(t, dtype=self.dtype) for t in item["targets"]]}


class MultiChoiceTaskDataset(EvaluationDataset):
    def __init__(self, path, config) -> None:
        self.is_single_token = True  # set to False in process_single_item, as GLM does
        super().__init__(path, config)

    @property
    def has_collate_fn(self) -> bool:
        return True

    def process_single_item(self, item):
        text, choices, label = get_tokenized_input(item, "inputs"), get_tokenized_input(item, "choices"), item["label"]
        tgt_seq_length = sum(len(choice) for choice in choices)
        if tgt_seq_length == len(choices):
            tgt_seq_length = 1  # single-token choices: GLM inserts one [sop]
        assert tgt_seq_length < self.config.max_seq_length
        if len(text) + tgt_seq_length + 2 > self.config.max_seq_length:
            text_length = self.config.max_seq_length - tgt_seq_length - 2
            text = text[len(text) - text_length :]
        assert not (
            self.mask_id in text and self.config.use_multitask_encoding
        ), "Unified multitask encoding don't support blank filling"
        if tgt_seq_length != 1:
            self.is_single_token = False
        return {"text": text, "choices": choices, "label": label}

    def __getitem__(self, idx):
        item = self.data[idx]
        choices = item["choices"]
        if self.is_single_token:  # GLM's batch holds the choice ids flattened: [c1, c2, ...]
            choices = np.array(choices, dtype=np.int64).squeeze().tolist()
        return {
            "text": list(item["text"]),
            "choices": choices,
            "choice_ids": [list(c) for c in item["choices"]],
            "label": item["label"],
        }

    def collate_fn(self, samples):
        return {
            "tokens": [s["text"] for s in samples],
            "choices": [s["choices"] for s in samples],
            "choice_target_ids": [s["choice_ids"] for s in samples],
            "is_single_token": self.is_single_token,
            "label": [s["label"] for s in samples],
        }


class LanguageModelTaskDataset(EvaluationDataset):
    left_weights: List[int]
    weights: List[int]

    def process_single_file(self, path):
        num_sequences = []
        with open(os.path.join(path), "r", encoding="utf-8") as file:
            raw_text = file.read()
            tokens = self.tokenizer.tokenize(raw_text)
            self.data.append(
                {
                    "raw_text": tokens,
                    "num_original_tokens": len(raw_text.strip().split(" ")),  # GLM's word count
                    "num_sequences": max(
                        math.ceil(
                            max(len(tokens) - (self.config.max_seq_length - 1), 0) / self.config.generation_length
                        )
                        + 1,
                        1,
                    ),
                }
            )
            num_sequences.append(self.data[-1]["num_sequences"])
        self.weights = list(accumulate(num_sequences))
        self.left_weights = [0] + self.weights[:-1]

    def process_single_item(self, item):
        pass

    def __len__(self):
        return self.data[0]["num_sequences"]

    def __getitem__(self, idx):
        """GLM's window ``idx``: tokens [idx * generation_length, + max_seq_length - 1); after the first
        window, the first ``max_seq_length - 1 - generation_length`` are unscored context."""
        document_idx = bisect_right(self.weights, idx)
        idx = idx - self.left_weights[document_idx]
        start = idx * self.config.generation_length
        tokens = list(self.data[document_idx]["raw_text"][start : start + self.config.max_seq_length - 1])
        if idx == 0 or self.config.unidirectional:
            prompt, text = [], tokens
        else:
            prompt_length = self.config.max_seq_length - 1 - self.config.generation_length
            prompt, text = tokens[:prompt_length], tokens[prompt_length:]
        return {"prompt": prompt, "text": text}
