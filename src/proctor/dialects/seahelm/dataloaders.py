"""proctor's equivalents of SEA-HELM's dataloaders (same constructor and hooks): the base class
``AbstractDataloader``, local files (``SeaHelmLocalDataloader``) and hub datasets read from mapped
local copies (``HuggingFaceDataloader`` and the pairwise MT-Bench loaders).

Datasets are lists of row dicts (``rows.py``; a plug-in may also assign a ``datasets.Dataset``; it is
read as rows). Hub datasets are never fetched implicitly: a local copy is mapped per dataset id
(``--seahelm-data <id>=<path>``), else loading fails with "dataset not available offline: <id>".
The judge dataloaders of SEA-HELM v1.2 are ``judge_dataloaders.py``; the task configuration they
all take is ``task_config.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from proctor.core.errors import ProctorError
from proctor.dialects.seahelm.rows import as_rows, read_rows
from proctor.dialects.seahelm.task_config import TaskConfig

log = logging.getLogger(__name__)


class AbstractDataloader:
    """Base dataloader: SEA-HELM's constructor, attributes and hooks."""

    def __init__(
        self,
        task_config: TaskConfig,
        default_num_in_context_examples: int = 0,
        is_base_model: bool = False,
        model_name: str = "",
        run_base_path: str = "",
        inference_file_type: str = "jsonl",
        num_workers: int = 1,
        **_: Any,
    ) -> None:
        self.task_config = task_config
        self.task_name = task_config.task_name
        self.lang = task_config.lang
        self.specific_task_config = task_config.config["languages"][self.lang]
        self.is_base_model = is_base_model
        self.model_name = model_name
        self.run_base_path = run_base_path
        self.inference_file_type = inference_file_type
        self.num_workers = num_workers
        counts = task_config.config.get("fewshot_num_examples") or {}
        value = counts.get("base" if is_base_model else "instruct") if isinstance(counts, dict) else None
        self.fewshot_num_examples = (
            int(value) if value is not None else (0 if counts else default_num_in_context_examples)
        )
        self.dataset: Any = None
        self.example_dataset: Any = None
        self.inference_df: Any = None
        self.conversations: list | None = None
        self.num_turns = None
        self.seed = None

    # ---------------------------------------------------------------- SEA-HELM's file layout
    def get_parent_folder(self) -> str:
        """Where SEA-HELM would write this task's inferences (created under ``run_base_path``)."""
        import os

        task = self.task_config.config.get("aggregation_group") or self.task_name
        parent = os.path.join(self.run_base_path or ".", "inferences", self.lang, task)
        os.makedirs(parent, exist_ok=True)
        return parent

    def get_inference_filepath(self, file_type: str = "jsonl") -> str:
        import os

        return os.path.join(
            self.get_parent_folder(), f"{os.path.basename(self.model_name)}_{self.task_name}_{self.lang}.{file_type}"
        )

    def read_inference_results_as_df(self) -> bool:
        return False  # proctor's run store caches generations; no inference file is read back

    def write_out_inference_results(self) -> None:
        self.prepare_inference_df_for_writing()  # proctor writes samples itself; the hook still runs

    def update_inference_df(self) -> None:
        import pandas as pd

        self.inference_df = pd.DataFrame(as_rows(self.dataset))
        if "conversations" not in self.inference_df and self.conversations is not None:
            self.inference_df["conversations"] = self.conversations

    def update_column(self, column: str, data: list, active_rows: list | None = None) -> None:
        """Append ``data`` (one value per active row) to each row's list in ``column``."""
        rows = [dict(r) for r in as_rows(self.dataset)]
        active = list(range(len(rows))) if active_rows is None else list(active_rows)
        for index, value in zip(active, data):
            current = rows[index].get(column)
            rows[index][column] = (list(current) if isinstance(current, list) else []) + [value]
        self.dataset = rows

    @staticmethod
    def update_conversation(conversations: list[dict], role: str, content: str) -> list[dict]:
        conversations.append({"role": role, "content": content})
        return conversations

    # SEA-HELM's metric classes read either name
    @property
    def dataframe(self):
        return self.inference_df

    @dataframe.setter
    def dataframe(self, value) -> None:
        self.inference_df = value

    def load_dataset(self, limit: int | None = None):
        raise NotImplementedError("Subclasses must implement this method")

    def load_example_dataset(self, limit: int | None = None):
        raise NotImplementedError("Subclasses must implement this method")

    def get_num_turns(self) -> int:
        rows = as_rows(self.dataset)
        return max((len(r.get("prompts") or [{}]) for r in rows), default=1)

    def rows(self) -> list[dict]:
        return as_rows(self.dataset)

    def example_rows(self) -> list[dict]:
        return as_rows(self.example_dataset)

    def generate_formatted_conversation(
        self, specific_task_config: dict, values: dict, fewshot_as_multiturn: bool = True
    ):
        """(roles, contents): few-shot turns, then the task prompt; the preamble opens the first message."""
        from proctor.dialects.seahelm.prompts import fewshot_turns, with_preamble

        template = specific_task_config["prompt_template"]
        roles, contents = [], []
        for role, content in fewshot_turns(template, self.example_rows()):
            roles.append(role)
            contents.append(content)
        roles.append("user")
        contents.append(template["task_template"].format(**values))
        contents[0] = with_preamble(template, contents[0])
        return roles, contents

    def prepare_conversations_for_inference(self, turn: int = 1, fewshot_as_multiturn: bool = True) -> list:
        """SEA-HELM's hook: one message list per row for ``turn`` (1-based), built from the row's ``prompts``
        and the ``prompt_template`` (earlier answers from the row's ``responses``). proctor builds these
        itself; a subclass that overrides this hook (HealthBench) has its ready-made conversations sent as they are."""
        from proctor.dialects.seahelm.prompts import conversation

        template = self.specific_task_config["prompt_template"]
        examples = self.example_rows()[: self.fewshot_num_examples] if self.fewshot_num_examples else []
        self.conversations = [
            conversation(template, r, turn, examples, r.get("responses") or [])
            for r in as_rows(self.dataset)
            if len(r.get("prompts") or [{}]) >= turn
        ]
        return self.conversations

    setattr(
        prepare_conversations_for_inference, "__proctor_template__", True
    )  # proctor's own: not a ready-made conversation

    def update_individual_scores(self, scores: list) -> None:
        if self.inference_df is not None:
            self.inference_df["individual_scores"] = scores

    def prepare_inference_df_for_writing(self) -> None:
        pass


def _limit(rows: list[dict], limit: int | None) -> list[dict]:
    return rows[:limit] if limit is not None else rows


class SeaHelmLocalDataloader(AbstractDataloader):
    """Local files in the SEA-HELM data format (``filepath``/``example_filepath``)."""

    def load_dataset(self, limit: int | None = None):
        if not self.dataset:
            self.dataset = _limit(read_rows(Path(self.specific_task_config["filepath"]), "eval", self.lang), limit)
        return self.dataset

    def load_example_dataset(self, limit: int | None = None):
        if not self.example_dataset:
            path = self.specific_task_config.get("example_filepath")
            if not path:
                self.example_dataset = []
                return self.example_dataset
            rows = read_rows(Path(path), "examples", self.lang)
            if limit is not None and len(rows) < limit:
                log.warning(
                    "%s/%s: %d few-shot examples asked, %d available", self.task_name, self.lang, limit, len(rows)
                )
            self.example_dataset = _limit(rows, limit)
        return self.example_dataset


class HuggingFaceDataloader(SeaHelmLocalDataloader):
    """Hub datasets (``load_dataset(id, lang, split="eval"|"examples")``) read from a mapped local copy.

    The dialect swaps a mapped id for its local path; an unmapped id fails offline.
    """

    def _check(self, reference: str) -> None:
        from proctor.dialects.seahelm.config import looks_like_hub_id

        if looks_like_hub_id(reference) and not Path(reference).exists():
            raise ProctorError(
                f"dataset not available offline: {reference} (map a local copy with --seahelm-data {reference}=PATH)"
            )

    def load_dataset(self, limit: int | None = None):
        self._check(str(self.specific_task_config["filepath"]))
        return super().load_dataset(limit)

    def load_example_dataset(self, limit: int | None = None):
        if self.specific_task_config.get("example_filepath"):
            self._check(str(self.specific_task_config["example_filepath"]))
        return super().load_example_dataset(limit)


class HuggingFacePairwiseDataloader(HuggingFaceDataloader):
    """MT-Bench style data: ``prompts`` per turn, ``baselines`` {model: [answer per turn]}, ``references``."""


class PairwiseDataloader(HuggingFacePairwiseDataloader):
    pass
