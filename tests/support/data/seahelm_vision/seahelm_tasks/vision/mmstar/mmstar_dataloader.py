# Written for proctor's tests in the shape of a SEA-HELM image task folder's dataloader: it imports
# SEA-HELM's names (src.*, datasets) exactly as a folder copied from SEA-HELM does.
from datasets import Image, load_dataset
from src.base_logger import get_logger
from src.dataloaders.huggingface_image_dataloader import HuggingFaceImageDataloader

logger = get_logger(__name__)


class MMStarDataloader(HuggingFaceImageDataloader):
    """Rows of an MMStar-format hub dataset (index, question, answer, image, l2_category, meta_info)."""

    def load_dataset(self, limit: int = None):
        if self.dataset:
            logger.info("rows already read")
            return
        rows = load_dataset(self.specific_task_config["filepath"], split="val")
        if limit is not None:
            rows = rows.select(range(limit))
        # keep the encoded bytes: the image dataloader decodes them itself
        rows = rows.cast_column("image", Image(decode=False))

        def to_seahelm_row(row):
            return {
                "id": row["index"],
                "label": row["answer"],
                "prompts": [{"question": row["question"]}],
                "images": [row["image"]["bytes"]],
                "metadata": {"language": "en", "l2_category": row["l2_category"], **row["meta_info"]},
            }

        self.dataset = rows.map(to_seahelm_row, num_proc=self.num_workers, remove_columns=rows.column_names)
