# A task-folder dataloader written in SEA-HELM's style: it calls datasets.load_dataset on the hub id
# itself, filters and maps rows with datasets' own methods.
import datasets
from src.base_logger import get_logger
from src.dataloaders.huggingface_dataloader import HuggingFaceDataloader

logger = get_logger(__name__)


class PragLoader(HuggingFaceDataloader):
    def load_dataset(self, limit=None):
        if self.dataset is not None:
            return self.dataset
        cfg = self.task_config.config.languages[self.lang]  # attribute access, as on OmegaConf configs
        raw = datasets.load_dataset(cfg.filepath, cfg["dataset_subset"], split="test")
        raw = raw.filter(lambda r: r["kind"] == cfg.kind)
        if limit is not None:
            raw = raw.select(range(limit))

        def to_row(r, i):
            return {"id": f"{cfg.kind}-{i}", "label": r["gold"], "prompts": [{"text": r["statement"]}],
                    "metadata": {"language": self.lang, "linguistic_phenomenon": r["phenomenon"]}}

        self.dataset = raw.map(to_row, with_indices=True, num_proc=self.num_workers, remove_columns=raw.column_names)
        logger.info("loaded %d rows for %s", len(self.dataset), self.task_name)
        return self.dataset

    def load_example_dataset(self, limit=None):
        self.example_dataset = None

    def get_num_turns(self):
        return 1
