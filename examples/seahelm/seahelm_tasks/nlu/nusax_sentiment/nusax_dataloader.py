"""Reads NusaX sentiment CSVs (id,text,label) into SEA-HELM rows: label, prompts, metadata."""

import csv

from src.dataloaders.seahelm_local_dataloader import SeaHelmLocalDataloader

LABELS = {"positive": "Positive", "negative": "Negative", "neutral": "Neutral"}


class NusaXDataloader(SeaHelmLocalDataloader):
    def _read(self, path, limit=None):
        with open(path, encoding="utf-8", newline="") as handle:
            rows = [
                {"id": f"{self.lang}-{r['id']}", "label": LABELS[r["label"]], "prompts": [{"text": r["text"]}],
                 "metadata": {"language": self.lang}}
                for r in csv.DictReader(handle)
            ]
        return rows[:limit] if limit is not None else rows

    def load_dataset(self, limit=None):
        if not self.dataset:
            self.dataset = self._read(self.specific_task_config["filepath"], limit)

    def load_example_dataset(self, limit=None):
        if not self.example_dataset:
            self.example_dataset = self._read(self.specific_task_config["example_filepath"], limit)
