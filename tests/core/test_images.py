"""``ImageInput.pil``: the pixels a processor is given are those the Hugging Face stack would give it."""

from __future__ import annotations

import io

import pytest

from proctor.core.images import ImageInput

pytestmark = pytest.mark.fast

PIL = pytest.importorskip("PIL")


def _encoded(image, fmt="PNG", **save) -> ImageInput:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **save)
    return ImageInput("sha256:x", buffer.getvalue())


def test_an_exif_rotated_jpeg_is_turned_upright_as_transformers_loads_it(tmp_path):
    from PIL import Image
    from transformers.image_utils import load_image

    image = Image.new("RGB", (16, 8), (255, 0, 0))
    image.paste((0, 0, 255), (0, 0, 4, 8))  # a blue stripe on the left tells the orientation
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to view"
    given = _encoded(image, "JPEG", exif=exif.tobytes())
    (tmp_path / "r.jpg").write_bytes(given.data)
    upstream = load_image(str(tmp_path / "r.jpg"))
    ours = given.pil()
    assert ours.size == upstream.size == (8, 16)
    assert ours.tobytes() == upstream.tobytes()


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P"])
def test_transparency_is_composited_onto_white_as_convert_to_rgb_does(mode):
    import numpy as np
    from PIL import Image
    from transformers.image_transforms import convert_to_rgb

    if mode == "P":
        image = Image.new("P", (6, 6), 0)
        image.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
        image.putpixel((1, 1), 1)
        given = _encoded(image, transparency=0)
    else:
        image = Image.new(mode, (6, 6), (200, 0, 0, 0) if mode == "RGBA" else (90, 0))
        image.putpixel((1, 1), (200, 0, 0, 255) if mode == "RGBA" else (90, 255))
        given = _encoded(image)
    with Image.open(io.BytesIO(given.data)) as opened:
        upstream = convert_to_rgb(opened, return_numpy=True)
    ours = np.array(given.pil())
    assert (ours == upstream).all()
    assert tuple(ours[0, 0]) == (255, 255, 255)  # transparent: white, not the colour under it


@pytest.mark.parametrize("mode", ["RGB", "L", "CMYK", "P"])
def test_opaque_images_keep_their_pixels(mode):
    from PIL import Image

    image = Image.new(mode, (5, 4), {"RGB": (10, 20, 30), "L": 77, "CMYK": (0, 255, 255, 0), "P": 3}[mode])
    given = _encoded(image, "JPEG" if mode == "CMYK" else "PNG")
    with Image.open(io.BytesIO(given.data)) as opened:
        before = opened.convert("RGB")
    assert given.pil().tobytes() == before.tobytes()
