"""SEA-HELM v1.2's judge dataloaders (its ``src/dataloaders/judges/``): the ``JudgeDataloader`` mixin, whose
loader builds the judge conversations and names SEA-HELM's judge batch files, and the criteria loaders
(one judge conversation per criterion).

Kept apart from ``dataloaders.py`` because they are the judge step's side of a dataloader (judge
prompts, verdict files), mixed into the plain loaders there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from proctor.core.errors import TaskDefinitionError
from proctor.dialects.seahelm.dataloaders import HuggingFaceDataloader, SeaHelmLocalDataloader
from proctor.dialects.seahelm.rows import as_rows
from proctor.dialects.seahelm.task_config import TaskConfig

if TYPE_CHECKING:
    from proctor.dialects.seahelm.metrics import SeaHelmMetric


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

    def prepare_conversations_for_judgements(self, metric: SeaHelmMetric) -> tuple[list, list]:
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
                    file=self.specific_task_config.get("filepath"),
                    row=index + 1,
                    field=str(missing),
                ) from None
            conversations.extend(formatted["conversations"])
            custom_ids.extend(formatted["custom_ids"])
        return conversations, custom_ids

    def get_judge_prompt_formatter(self, metric: SeaHelmMetric):
        raise NotImplementedError(f"{type(self).__name__} must implement get_judge_prompt_formatter")


class CriteriaDataloader(JudgeDataloader):
    """Single-turn criteria judging (SEA-HELM's ``criteria_dataloader``): one judge conversation per
    criterion, ``criteria_prompt`` filled with ``prompt``, ``response``, ``keyPointText`` and
    ``reference_text_block`` (``reference_prompt`` with the row's ``label`` when ``include_reference``)."""

    def get_judge_prompt_formatter(self, metric: SeaHelmMetric):
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
                    prompt=task_template.format(**first),
                    response=row["responses"][0],
                    keyPointText=criterion["criterion"].format(**first),
                    reference_text_block=block,
                )
                conversations.append(
                    [{"role": "system", "content": prompts["system_prompt"]}, {"role": "user", "content": user}]
                )
                custom_ids.append(f"{row['id']}_criteria{i}")
            return {"conversations": conversations, "custom_ids": custom_ids}

        return formatter


class SeaHelmLocalCriteriaDataloader(SeaHelmLocalDataloader, CriteriaDataloader):
    pass


class HuggingFaceCriteriaDataloader(HuggingFaceDataloader, CriteriaDataloader):
    pass
