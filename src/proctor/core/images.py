"""An image attached to a request: its bytes, read once, identified by their digest.

Requests compare and hash images by digest only, so deduplication, the run store's request
hash, the shared cache and the resume check all see the image content, never a file name.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import PIL.Image


@dataclass(frozen=True)
class ImageInput:
    digest: str  # "sha256:<hex>" of ``data``
    data: bytes = field(compare=False, repr=False)  # the encoded image file (PNG, JPEG, ...), as read
    mime: str = field(default="image/png", compare=False)
    width: int = field(default=0, compare=False)
    height: int = field(default=0, compare=False)
    thumbnail: str = field(default="", compare=False, repr=False)  # small data URI for reports

    def data_uri(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def record(self) -> dict[str, str | int]:
        """What a sample record keeps of the image (no full bytes)."""
        return {
            "digest": self.digest,
            "mime": self.mime,
            "width": self.width,
            "height": self.height,
            "thumbnail": self.thumbnail,
        }

    def pil(self) -> PIL.Image.Image:
        """The decoded image (RGB), for backends that feed pixels to a processor: as ``rgb`` makes it."""
        import io

        from PIL import Image

        with Image.open(io.BytesIO(self.data)) as image:
            return rgb(image)


def rgb(image: PIL.Image.Image) -> PIL.Image.Image:
    """A PIL image as the Hugging Face stack shows it to a model: turned upright by its EXIF orientation (as
    ``datasets`` decodes an ``Image`` feature and transformers' ``load_image`` reads a file), and transparency
    composited onto white (transformers' ``convert_to_rgb``), not dropped to whatever colour lies under it."""
    from PIL import Image, ImageOps

    upright = ImageOps.exif_transpose(image) or image
    if "A" in upright.getbands() or upright.info.get("transparency") is not None:
        with_alpha = upright.convert("RGBA")
        background = Image.new("RGBA", with_alpha.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, with_alpha).convert("RGB")
    return upright.convert("RGB")
