"""Image values in data rows → validated ``ImageInput``s, read once, before any model loads.

A row's image may be a file path (relative to the data file's folder, then to the task file's; it must
lie in one of the task's roots, ``data/paths.py``),
raw bytes (a parquet / Arrow binary column), a Hugging Face ``Image`` feature value
(``{"bytes": ..., "path": ...}``), a base64 string (optionally a ``data:image/...;base64,`` URI),
or a PIL image. Each is decoded with Pillow once to check it; a missing or unreadable image is a
``TaskDefinitionError`` naming the file, row and field.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence, TypedDict

from proctor.core.errors import TaskDefinitionError, require
from proctor.core.images import ImageInput, rgb
from proctor.data.paths import check_inside

THUMBNAIL_PIXELS = 96  # longest side of the report thumbnail
ANIMATED_FORMATS = ("GIF", "PNG", "WEBP")  # formats whose frames are an animation (an MPO's are not: one photo)
PAGED_FORMATS = ("TIFF",)  # formats whose frames are pages: only the first would be shown


class _Where(TypedDict):
    """What an image error names (``TaskDefinitionError``'s keywords)."""

    file: str | None
    row: int | None
    field: str


def _pillow() -> ModuleType:
    """Pillow's ``Image`` module (importing ``PIL`` alone does not import it)."""
    image: ModuleType = require("PIL.Image", "vision", "Reading images")
    return image


def _looks_like_path(text: str) -> bool:
    return len(text) < 1024 and ("/" in text or "\\" in text or "." in text[-6:])


def _raw_bytes(
    value: Any, bases: Sequence[Path], where: _Where, roots: Sequence[Path] = ()
) -> tuple[bytes, str | None]:
    """The image's encoded bytes, and the file they were read from (as the row wrote it), if any."""
    Image = _pillow()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), None
    if isinstance(value, Image.Image):
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return buffer.getvalue(), None
    if isinstance(value, dict):  # a Hugging Face Image feature value
        if value.get("bytes"):
            return _raw_bytes(value["bytes"], bases, where, roots)
        if value.get("path"):
            return _raw_bytes(str(value["path"]), bases, where, roots)
        raise TaskDefinitionError("image value is a mapping with neither 'bytes' nor 'path'", **where)
    if isinstance(value, (str, Path)):
        text = str(value).strip()
        if not text:
            raise TaskDefinitionError("image value is empty", **where)
        if text.startswith("data:"):
            head, _, payload = text.partition(",")
            if ";base64" not in head:
                raise TaskDefinitionError(f"image data URI is not base64 ({head[:40]!r})", **where)
            media = head[len("data:") :].split(";")[0].strip().lower()
            if media and not media.startswith("image/"):  # text/plain, application/pdf: not what the row meant
                raise TaskDefinitionError(
                    f"image data URI says its content is {media!r}, not an image type (image/png, image/jpeg, ...)",
                    **where,
                )
            return _b64(payload, where), None
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
            raise TaskDefinitionError(
                f"image value is a URL ({text[:60]}): images are read from files, never fetched; download it into "
                "the task's folder and give its path",
                **where,
            )
        given = Path(text).expanduser()
        candidates = [given] if given.is_absolute() else [base / given for base in bases]
        for path in candidates:
            if path.is_file():
                check_inside(path, [*bases, *roots], written=text, **where)  # never read a file outside
                try:
                    return path.read_bytes(), text
                except OSError as exc:
                    raise TaskDefinitionError(f"cannot read image file {path}: {exc.strerror}", **where) from None
        try:  # not a file: a bare base64 string (its alphabet has no '.', so file names never decode)
            return base64.b64decode("".join(text.split()), validate=True), None
        except (binascii.Error, ValueError):
            pass
        if _looks_like_path(text):
            looked = ", ".join(str(p) for p in candidates) or "no folder: the row has no data file"
            raise TaskDefinitionError(f"image file not found: {text} (looked in {looked})", **where)
        raise TaskDefinitionError(
            f"image value is neither an existing file nor valid base64 ({text[:40]!r}...)", **where
        )
    raise TaskDefinitionError(f"an image must be a path, bytes or a base64 string, got {type(value).__name__}", **where)


def _b64(text: str, where: _Where) -> bytes:
    """A data URI's base64 payload; one that does not decode says why."""
    payload = "".join(text.split())
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        why = (
            f"its length, {len(payload)} characters, is not a whole number of base64 blocks (the text is cut "
            "short or lost its '=' padding)"
            if "padding" in str(exc).lower() or "number of data characters" in str(exc).lower()
            else str(exc)
        )
        raise TaskDefinitionError(f"the image data URI's base64 payload does not decode: {why}", **where) from None


def _not_an_image(data: bytes) -> str:
    """What bytes Pillow recognises no image format in are, as far as their first bytes tell."""
    head = data[:512].lstrip()
    if b"<svg" in head[:512] and head.startswith((b"<svg", b"<?xml", b"<!DOCTYPE", b"<!--")):
        return "an SVG (vector) image: Pillow reads raster images only; convert it to PNG"
    if data[4:8] == b"ftyp" and data[8:12] in (b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1"):
        return "a HEIC/HEIF image: Pillow cannot read it (no HEIF plug-in); convert it to PNG or JPEG"
    if data.startswith(b"%PDF"):
        return "a PDF document, not an image"
    try:
        text = data[:200].decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if not text or not all(c.isprintable() or c.isspace() for c in text):
        return f"no image format Pillow knows (it starts {data[:8]!r})"
    return f"a text file, not an image (it starts {text[:40]!r})"


def image_input(data: bytes, where: _Where, source: str | None = None) -> ImageInput:
    """Check that ``data`` decodes as an image; its digest, size, MIME type and a thumbnail. ``source``: the
    file it was read from, named in the error."""
    named = f"image file {source}: " if source else ""
    Image = _pillow()
    try:
        with warnings.catch_warnings():
            # over Pillow's pixel limit is a bomb, even below twice the limit (where Pillow only warns)
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image.load()  # decodes fully: a truncated file fails here, not inside a model call
                fmt = image.format or "PNG"
                width, height = image.size
                frames = getattr(image, "n_frames", 1) if fmt in (*ANIMATED_FORMATS, *PAGED_FORMATS) else 1
                thumb = rgb(image)
    except Image.UnidentifiedImageError:
        what = _not_an_image(data) if data else "an empty file"
        raise TaskDefinitionError(f"{named}not a readable image ({len(data)} bytes): {what}", **where) from None
    except (
        OSError,
        SyntaxError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ) as exc:  # bombs: Pillow's pixel limit
        raise TaskDefinitionError(f"{named}not a readable image ({len(data)} bytes): {exc}", **where) from None
    if frames > 1 and fmt in PAGED_FORMATS:  # the first page alone would be a silent choice
        raise TaskDefinitionError(
            f"{named}a {frames}-page {fmt} image: a model is given one still image; save the page meant as its own PNG",
            **where,
        )
    if frames > 1:  # a model is given one still image: the first frame alone would be a silent choice
        raise TaskDefinitionError(
            f"{named}an animated {fmt} image ({frames} frames): a model is given one still image; save the frame meant "
            "as its own PNG or JPEG",
            **where,
        )
    thumb.thumbnail((THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))
    buffer = io.BytesIO()
    thumb.save(buffer, format="JPEG", quality=80)
    thumbnail = "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    mime = Image.MIME.get(fmt.upper(), "image/png")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return ImageInput(digest, data, mime, width, height, thumbnail)


def read_images(
    value: Any,
    *,
    bases: Sequence[Path] = (),
    roots: Sequence[Path] = (),
    file: str | None = None,
    row: int | None = None,
    field: str = "images",
) -> tuple[ImageInput, ...]:
    """One row's images from a value or a list of values (``None`` / empty list: no image). A path is
    relative to ``bases`` and must lie in one of ``bases`` or ``roots``."""
    values = list(value) if isinstance(value, (list, tuple)) else ([] if value is None else [value])
    out = []
    for k, item in enumerate(values):
        where: _Where = {"file": file, "row": row, "field": field if len(values) == 1 else f"{field}[{k}]"}
        data, source = _raw_bytes(item, bases, where, roots)
        out.append(image_input(data, where, source))
    return tuple(out)
