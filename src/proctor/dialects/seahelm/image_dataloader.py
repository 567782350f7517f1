"""SEA-HELM's ``HuggingFaceImageDataloader`` (``src.dataloaders.huggingface_image_dataloader``) and the
image plumbing of SEA-HELM tasks.

SEA-HELM's vision task folders (``seahelm_tasks/vision/*``) subclass the image dataloader and fill each
row's ``images`` with encoded image bytes (``Image(decode=False)``'s ``bytes``). Here those values are
read once, checked with Pillow when the samples load (a bad one is an error naming the data, row and
field, before a model loads) and sent with the row's prompt: as ``{"type": "image"}`` parts of its user
message in chat form (the backend turns them into its processor's image tokens, or OpenAI ``image_url``
parts), or behind the model's image placeholders for a base model's plain prompt.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from proctor.core.errors import ProctorError
from proctor.data.images import read_images
from proctor.dialects.seahelm.dataloaders import AbstractDataloader
from proctor.dialects.seahelm.task_config import TaskConfig
from proctor.prompts.builder import Prompt

if TYPE_CHECKING:
    from proctor.models.base import Model

IMAGE_COLUMN = "images"


class HuggingFaceImageDataloader(AbstractDataloader):
    """SEA-HELM's image dataloader: subclasses implement ``load_dataset`` (rows with ``prompts``,
    ``label`` and ``images``) and, for few-shot tasks, ``load_example_dataset``."""

    def __init__(
        self,
        task_config: TaskConfig,
        default_num_in_context_examples: int = 0,
        is_base_model: bool = False,
        model_name: str = "",
        run_base_path: str = "",
        inference_file_type: str = "jsonl",
        num_workers: int = 1,
        dropped_columns: Sequence[str] = (IMAGE_COLUMN,),
        **kwargs: Any,
    ) -> None:
        super().__init__(
            task_config,
            default_num_in_context_examples,
            is_base_model,
            model_name,
            run_base_path,
            inference_file_type,
            num_workers,
            **kwargs,
        )
        self.dropped_columns = list(dropped_columns)

    def get_num_turns(self) -> int:
        return 1

    @staticmethod
    def update_conversation(
        conversations: list, role: str, text_content: str, images: Sequence[Any] | None = None
    ) -> list:
        """SEA-HELM's multimodal message: a text part, then (user turns) each image as a JPEG data URI part."""
        content: list[dict] = [{"type": "text", "text": text_content}]
        for image in (images or ()) if role == "user" else ():
            if hasattr(image, "save"):  # a PIL image
                buffer = io.BytesIO()
                image.convert("RGB").save(buffer, format="JPEG")
                image = buffer.getvalue()
            if isinstance(image, str):
                image = image.encode()
            if isinstance(image, (bytes, bytearray)):
                url = "data:image/jpeg;base64," + base64.b64encode(bytes(image)).decode("ascii")
                content.append({"type": "image_url", "image_url": {"url": url}})
        conversations.append({"role": role, "content": content})
        return conversations

    def prepare_dataframe_for_writing(self) -> None:
        """SEA-HELM drops the image columns before writing inferences (proctor keeps digests and thumbnails)."""
        frame = self.dataframe
        if frame is not None and hasattr(frame, "drop"):
            self.dataframe = frame.drop(columns=self.dropped_columns, errors="ignore")


def row_images(rows: Sequence[dict], source: str | None) -> list[tuple]:
    """Each row's images (from its ``images`` column), read and validated now; a path is relative to the
    data's folder and stays in it."""
    folder = Path(source) if source and Path(source).is_dir() else Path(source).parent if source else None
    bases = [folder] if folder is not None else []
    out = []
    for index, row in enumerate(rows):
        value = row.get(IMAGE_COLUMN) if isinstance(row, dict) else None
        out.append(
            read_images(value, bases=bases, file=str(source) if source else None, row=index + 1, field=IMAGE_COLUMN)
            if value is not None
            else ()
        )
    return out


def check_model(model: Model, images: Sequence[tuple], task: str) -> None:
    if any(images) and not getattr(model, "supports_images", False):
        raise ProctorError(
            f"SEA-HELM task '{task}' shows images, and model '{getattr(model, 'name', model)}' takes none: "
            "run it on a vision-language model (hf-vision:<folder>, or openai:<name> on a server that takes images)"
        )


def render_with_images(model: Model, messages: Sequence[dict], images: tuple, is_base: bool, render) -> str:
    """The prompt text for ``messages`` with ``images`` attached to the last user turn."""
    if not images:
        return render(model, messages, is_base)
    if is_base:
        return model.image_prompt(render(model, messages, True), len(images))
    return Prompt(messages=tuple((m["role"], m["content"]) for m in messages), images=images).render(model)
