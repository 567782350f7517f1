# A task-folder metric in SEA-HELM's style: answers mapped to labels in extract_response, per-phenomenon
# (correct, total) counts returned under "subcategories" and no top-level score.
from src.dataloaders.base_dataloader import AbstractDataloader
from src.metrics.seahelm_metric import SeaHelmMetric
from src.task_config import TaskConfig


class PragMetric(SeaHelmMetric):
    def __init__(self, dataloader: AbstractDataloader, task_config: TaskConfig, null_label: str = "null"):
        super().__init__(dataloader=dataloader, task_config=task_config)
        self.null_label = null_label
        labels = set(self.dataloader.dataframe[self.label_column].to_list())
        self.label_map = {label.lower(): label for label in labels}
        tag = task_config.config["languages"][self.lang]["prompt_template"]["answer_tag"]
        self.regex_string = tag + r"[\s\*]*(" + "|".join(labels) + ")*"

    def extract_response(self, response):
        text = super().extract_response(response)
        return self.label_map.get(self.normalize_answer(text), self.null_label)

    def postprocess_responses(self):
        df = self.dataloader.dataframe
        df[self.postprocessed_response_column] = df[self.response_column].apply(self.extract_response)
        df["phenomenon"] = [m["linguistic_phenomenon"] for m in df["metadata"]]

    def calculate_metrics(self):
        df = self.dataloader.dataframe
        out = {"subcategories": {}}
        for phenomenon in df["phenomenon"].unique():
            part = df[df["phenomenon"] == phenomenon]
            correct = (part[self.postprocessed_response_column] == part[self.label_column]).sum()  # a numpy int
            out["subcategories"][phenomenon] = (correct, len(part))
        hits = df[self.postprocessed_response_column].eq(df[self.label_column]).astype(int)
        self.dataloader.update_individual_scores([{"normalized_accuracy": x} for x in hits])
        return out
