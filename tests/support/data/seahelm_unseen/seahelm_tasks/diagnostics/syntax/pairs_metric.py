# A task-folder metric subclassing SEA-HELM's F1AccMetric: it reads labels from the postprocessed column
# through dataloader.dataframe and returns a nested per-difficulty breakdown with numpy values.
from sklearn.metrics import balanced_accuracy_score
from src.base_logger import get_logger
from src.metrics.f1_acc_metric import F1AccMetric

logger = get_logger(__name__)


class PairsMetric(F1AccMetric):
    def calculate_metrics(self):
        predictions = self.dataloader.dataframe[self.postprocessed_response_column]
        references = self.dataloader.dataframe[self.label_column]
        accuracy = balanced_accuracy_score(y_true=references, y_pred=predictions)
        self.dataloader.update_individual_scores([{"normalized_accuracy": x} for x in predictions.eq(references).astype(int)])
        levels = self.dataloader.dataframe["metadata"].apply(lambda m: m.get("difficulty", "unknown"))
        by_level = {}
        for level in levels.unique():
            mask = levels == level
            by_level[level] = {"accuracy": balanced_accuracy_score(references[mask], predictions[mask])}
        logger.info("%s: %.2f", self.task, accuracy)
        return {
            "accuracy": 100 * accuracy,
            "normalized_accuracy": 100 * self.normalize_score(accuracy, 1 / len(self.label_map), 1),
            "null_count": sum(predictions == self.null_label),
            "difficulty": by_level,
        }
