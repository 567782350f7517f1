"""proctor's equivalents of SEA-HELM's dataloaders (same constructor and hooks).

Datasets are lists of row dicts (a plug-in may also assign a ``datasets.Dataset``; it is read as rows).
Hub datasets are never fetched implicitly: a local copy is mapped per dataset id
(``--seahelm-data <id>=<path>``), else loading fails with "dataset not available offline: <id>".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable

from proctor.core.errors import ProctorError, TaskDefinitionError

log = logging.getLogger(__name__)


class ConfigDict(dict):
    """A config mapping that also reads as attributes (``task_config.config.judge.get(...)``), as
    SEA-HELM's OmegaConf configs do; nested mappings are ConfigDicts too."""

    def __init__(self, data: Any = (), **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        for key, value in self.items():
            super().__setitem__(key, _wrap(value))

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, _wrap(value))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"config has no key '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


def _wrap(value: Any) -> Any:
    if isinstance(value, dict) and not isinstance(value, ConfigDict):
        return ConfigDict(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class TaskConfig:
    """One task in one language: ``task_name``, ``lang`` and the task's resolved ``config`` dict."""

    def __init__(self, task_name: str, lang: str, config: dict, **extra: Any) -> None:
        self.task_name = task_name
        self.lang = lang
        self.config = ConfigDict(config)
        for key, value in extra.items():
            setattr(self, key, value)


def candidate_files(split: str | None, lang: str | None) -> list[str]:
    """The files a data folder is searched for, in order (then a ``save_to_disk`` copy)."""
    names = []
    for stem in ([f"{lang}/{split}", f"{lang}_{split}", f"{split}/{lang}", split, lang] if split else [lang]):
        if stem:
            names += [f"{stem}{s}" for s in (".jsonl", ".json", ".parquet", ".csv")]
    return names


def folder_lacks(path: Path, split: str, lang: str) -> str | None:
    """Why ``read_rows(path, split, lang)`` would find nothing (None: it finds a file, or ``path`` is a file
    or a ``save_to_disk`` copy, whose rows are filtered by language when read)."""
    path = Path(path)
    if not path.is_dir() or any((path / marker).is_file() for marker in ("dataset_dict.json", "state.json", "dataset_info.json")):
        return None
    names = candidate_files(split, lang)
    if any((path / name).is_file() for name in names):
        return None
    return f"{path} has no '{split}' data for language '{lang}' (looked for {', '.join(names[:3])}, ...)"


def read_rows(path: Path, split: str | None = None, lang: str | None = None) -> list[dict]:
    """Rows of a local SEA-HELM data file (jsonl/json/csv/parquet) or folder (``<lang>/<split>.*``,
    ``<lang>_<split>.*``, ``<split>.*``, or a ``datasets.save_to_disk`` folder)."""
    path = Path(path)
    if path.is_dir():
        names = candidate_files(split, lang)
        for name in names:
            if (path / name).is_file():
                return read_rows(path / name)
        try:
            from datasets import load_from_disk

            data = load_from_disk(str(path))
            if hasattr(data, "keys"):  # DatasetDict
                data = data[split] if split in data else data[list(data.keys())[0]]
            rows = data.to_list()
            return [r for r in rows if not lang or (r.get("metadata") or {}).get("language", lang) == lang]
        except Exception:
            raise ProctorError(f"no '{split}' data for language '{lang}' in {path} (looked for {', '.join(names[:4])}, ...)") from None
    suffix = path.suffix
    if suffix == ".jsonl":
        from proctor.data.readers import decode_utf8, json_lines

        lines = decode_utf8(path).split("\n")  # decode_utf8 names the line of a byte that is not UTF-8
        return [row for _, row in json_lines(lines, lambda n, exc: TaskDefinitionError(f"invalid JSON: {exc.msg}", file=path, row=n))]
    if suffix == ".json":
        from proctor.data.readers import decode_utf8

        try:
            data = json.loads(decode_utf8(path))
        except json.JSONDecodeError as exc:
            raise TaskDefinitionError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno) from None
        return data if isinstance(data, list) else data.get("data", [])
    import pandas as pd

    frame = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path)
    return frame.to_dict("records")


class RowList(list):
    """Rows as proctor holds them, also read by column as a ``datasets.Dataset`` is
    (``self.dataset["conversations"]`` in task-folder code): a missing column names the row without it."""

    def __getitem__(self, key):
        if isinstance(key, str):
            for index, row in enumerate(self):
                if key not in row:
                    raise KeyError(f"{key} (row {index + 1} has no '{key}')")
            return [row[key] for row in self]
        return super().__getitem__(key)

    @property
    def column_names(self) -> list[str]:
        return list(dict.fromkeys(k for row in self for k in row))

    def map(self, function, *args: Any, **kwargs: Any) -> "RowList":
        """``Dataset.map(fn)`` for a row function (task-folder code such as ONERULER's formatters), in-process."""
        return RowList({**row, **(function(dict(row)) or {})} for row in self)


def as_rows(dataset: Any) -> list[dict]:
    if dataset is None:
        return []
    if isinstance(dataset, list):
        return dataset
    if hasattr(dataset, "to_list"):
        return dataset.to_list()
    if hasattr(dataset, "to_dict"):
        return dataset.to_dict("records")
    return list(dataset)


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
        self.fewshot_num_examples = int(value) if value is not None else (0 if counts else default_num_in_context_examples)
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

        return os.path.join(self.get_parent_folder(), f"{os.path.basename(self.model_name)}_{self.task_name}_{self.lang}.{file_type}")

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

    def generate_formatted_conversation(self, specific_task_config: dict, values: dict, fewshot_as_multiturn: bool = True):
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
        self.conversations = [conversation(template, r, turn, examples, r.get("responses") or [])
                              for r in as_rows(self.dataset) if len(r.get("prompts") or [{}]) >= turn]
        return self.conversations

    setattr(prepare_conversations_for_inference, "__proctor_template__", True)  # proctor's own: not a ready-made conversation

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
                log.warning("%s/%s: %d few-shot examples asked, %d available", self.task_name, self.lang, limit, len(rows))
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


class JudgeDataloader:
    """SEA-HELM v1.2's judge mixin: a subclass's ``get_judge_prompt_formatter(metric)`` returns
    ``f(row, idx) -> {"conversations": [...], "custom_ids": [...]}``; proctor sends those conversations to
    the judge model and writes ``{"custom_ids", "responses"}`` lines to ``get_judge_batch_response_filepath()``
    before the metric runs (rows carry the model's ``responses``)."""

    # what the dataloader it is mixed into (AbstractDataloader) provides
    task_config: TaskConfig
    task_name: str
    lang: str
    specific_task_config: dict
    dataset: Any
    get_parent_folder: Callable[[], str]

    def _judge_folder(self) -> str:
        import os
        import tempfile

        if getattr(self, "run_base_path", ""):
            return self.get_parent_folder()
        folder = getattr(self, "_proctor_judge_dir", None)
        if folder is None:  # no SEA-HELM run folder: a private scratch folder, never the working directory
            folder = self._proctor_judge_dir = tempfile.mkdtemp(prefix="proctor-seahelm-judge-")
        os.makedirs(folder, exist_ok=True)
        return folder

    def _judge_file(self, kind: str, turn: int, file_type: str) -> str:
        import os

        model = os.path.basename(getattr(self, "model_name", "") or "model")
        return os.path.join(self._judge_folder(), f"{model}_{self.task_name}_{self.lang}_{kind}_turn{turn}.{file_type}")

    def get_judge_batch_filepath(self, turn: int = 1, file_type: str = "jsonl") -> str:
        return self._judge_file("judge_batch", turn, file_type)

    def get_judge_batch_response_filepath(self, turn: int = 1, file_type: str = "jsonl") -> str:
        return self._judge_file("judge_batch_response", turn, file_type)

    def prepare_conversations_for_judgements(self, metric: Any) -> tuple[list, list]:
        formatter = self.get_judge_prompt_formatter(metric)
        conversations: list = []
        custom_ids: list = []
        for index, row in enumerate(as_rows(self.dataset)):
            try:
                formatted = formatter(row, index)
            except (KeyError, IndexError) as exc:  # a row without a field the judge prompt needs
                missing = exc.args[0] if exc.args else exc
                raise TaskDefinitionError(
                    f"{self.task_name}/{self.lang}: row {row.get('id', index)!r} cannot be judged: "
                    f"{type(exc).__name__} {missing!r} while building the judge prompt",
                    file=self.specific_task_config.get("filepath"), row=index + 1, field=str(missing),
                ) from None
            conversations.extend(formatted["conversations"])
            custom_ids.extend(formatted["custom_ids"])
        return conversations, custom_ids

    def get_judge_prompt_formatter(self, metric: Any):
        raise NotImplementedError(f"{type(self).__name__} must implement get_judge_prompt_formatter")


class CriteriaDataloader(JudgeDataloader):
    """Single-turn criteria judging (SEA-HELM's ``criteria_dataloader``): one judge conversation per
    criterion, ``criteria_prompt`` filled with ``prompt``, ``response``, ``keyPointText`` and
    ``reference_text_block`` (``reference_prompt`` with the row's ``label`` when ``include_reference``)."""

    def get_judge_prompt_formatter(self, metric: Any):
        prompts = self.task_config.config["judge"]["judge_prompts"]
        task_template = self.task_config.config["languages"][self.lang]["prompt_template"]["task_template"]

        def formatter(row: dict, idx: int) -> dict:
            first = row["prompts"][0]
            conversations, custom_ids = [], []
            for i, criterion in enumerate(row["criteria"]):
                block = ""
                if criterion.get("include_reference", False):
                    block = "\n" + prompts["reference_prompt"].format(reference=row["label"]) + "\n"
                user = prompts["criteria_prompt"].format(
                    prompt=task_template.format(**first), response=row["responses"][0],
                    keyPointText=criterion["criterion"].format(**first), reference_text_block=block)
                conversations.append([{"role": "system", "content": prompts["system_prompt"]}, {"role": "user", "content": user}])
                custom_ids.append(f"{row['id']}_criteria{i}")
            return {"conversations": conversations, "custom_ids": custom_ids}

        return formatter


class SeaHelmLocalCriteriaDataloader(SeaHelmLocalDataloader, CriteriaDataloader):
    pass


class HuggingFaceCriteriaDataloader(HuggingFaceDataloader, CriteriaDataloader):
    pass
