"""Malformed image inputs and native task files for tests/cross_cutting/test_malformed_inputs.py (ids ``img2-``,
``native2-``): image values that are no image or not one still picture, data URIs that do not say or decode an
image, images on a model known to be a text model before it loads, sample ids that are no ids, YAML booleans
where a number belongs, and field names in the wrong case."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

from tests.support.malformed_cases import ROWS, Case, jsonl, native
from tests.support.malformed_cases_more import IMAGE_TASK, image_rows, png

IMAGES: list[Case] = []
RUN = ["run", "task.yaml", "-o", "out"]
WITH_ID = {"    data: data.jsonl": "    data:\n      path: data.jsonl\n      id: id"}


def add(id, args, expect, files=None, before_model=True, setup=None, code=None):
    IMAGES.append(Case(id, list(args), list(expect), dict(files or {}), before_model, setup, code))


def image_case(id, second, expect, extra=None, setup=None, **kwargs):
    """The image task whose second row's image is ``second`` (the first's is a good PNG)."""
    files = {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows(second), "red.png": png(), **(extra or {})}
    add(id, RUN, ["data.jsonl", "row 2", "'image'", *expect], files, setup=setup, **kwargs)


def _tiff_pages() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 0, 0)).save(
        buffer, format="TIFF", save_all=True, append_images=[Image.new("RGB", (8, 8), (0, 0, 255))]
    )
    return buffer.getvalue()


def _bad_struct_parquet(folder: Path) -> None:
    import pandas as pd

    pd.DataFrame(
        [
            {**ROWS[0], "image": {"bytes": png(), "path": "a.png"}},
            {**ROWS[1], "image": {"bytes": b"\x00\x01garbage", "path": "b.png"}},
        ]
    ).to_parquet(folder / "data.parquet")


PNG_B64 = base64.b64encode(png((5, 5))).decode()
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4" fill="red"/></svg>'
HEIC = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64

# --- images: what the value is, said plainly (not Pillow's "cannot identify image file <_io.BytesIO ...>") -----
image_case("img2-data-uri-text-mime", "data:text/plain;base64," + PNG_B64, ["text/plain", "not an image type"])
image_case("img2-data-uri-bad-padding", "data:image/png;base64," + PNG_B64.rstrip("=")[:-1], ["padding"])
image_case("img2-svg-file", "pic.svg", ["pic.svg", "SVG"], {"pic.svg": SVG})
image_case("img2-heic-file", "pic.heic", ["pic.heic", "HEIC"], {"pic.heic": HEIC})
image_case(
    "img2-symlink-to-text-file",
    "link.png",
    ["link.png", "text file", "hello"],
    {"notes.txt": "hello there"},
    setup=lambda f: os.symlink("notes.txt", f / "link.png"),
)
add(
    "img2-parquet-image-struct-bad-bytes",
    RUN,
    ["data.parquet", "row 2", "'image'", "no image format"],
    {"task.yaml": IMAGE_TASK.replace("data.jsonl", "data.parquet")},
    setup=_bad_struct_parquet,
)
image_case("img2-multipage-tiff", "pages.tiff", ["pages.tiff", "2-page TIFF"], {"pages.tiff": _tiff_pages()})

# --- images on a model whose folder says it is a text model: refused before it loads ------------------------
add(
    "img2-on-text-model-folder",
    RUN + ["-m", "{model}"],
    ["task.yaml:9", "'images'", "tiny-llama", "takes none"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("red.png"), "red.png": png()},
)
add(
    "img2-on-default-model",
    RUN,
    ["task.yaml:9", "'images'", "smollm2", "takes none"],
    {"task.yaml": IMAGE_TASK, "data.jsonl": image_rows("red.png"), "red.png": png()},
)

# --- native: ids that are no ids, YAML booleans as numbers, field names in the wrong case ------------------
add(
    "native2-id-null-in-one-row",
    RUN,
    ["data.jsonl", "row 2", "'id'", "null"],
    {"task.yaml": native(**WITH_ID), "data.jsonl": jsonl([ROWS[0], {**ROWS[1], "id": None}, ROWS[2]])},
)
add(
    "native2-id-list",
    RUN,
    ["data.jsonl", "row 3", "'id'", "list"],
    {"task.yaml": native(**WITH_ID), "data.jsonl": jsonl([ROWS[0], ROWS[1], {**ROWS[2], "id": ["c", 1]}])},
)
add(
    "native2-limit-yes",
    RUN,
    ["task.yaml:9", "'limit'", "true"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    limit: yes"})},
)
add(
    "native2-fewshot-count-on",
    RUN,
    ["task.yaml:9", "fewshot.count", "true"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    fewshot: {count: on}"})},
)
add(
    "native2-key-wrong-case-required",
    RUN,
    ["task.yaml:3", "'Kind'", "did you mean 'kind'"],
    {"task.yaml": native(**{"kind:": "Kind:"})},
)
add(
    "native2-key-wrong-case-optional",
    RUN,
    ["task.yaml:8", "'Metrics'", "did you mean 'metrics'"],
    {"task.yaml": native(**{"metrics:": "Metrics:"})},
)
add(
    "native2-breakdown-by-a-list-field",
    RUN,
    ["data.jsonl", "row 1", "'breakdown'", "list"],
    {"task.yaml": native(**{"metrics: [acc]": "metrics: [acc]\n    breakdown: choices"})},
)
