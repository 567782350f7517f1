"""A tiny random LLaVA (CLIP vision tower + Llama text model, SmolLM2 tokenizer with an ``<image>``
token) and a small image set in every form a data row may hold, both built at test time, offline.

Import the fixtures into a test module: ``from tests.support.vision_fixtures import tiny_vlm_dir, image_set``.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

# A LLaVA-style chat template that renders image content parts as the processor's placeholder.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

COLOURS = {"red": (220, 30, 30), "green": (30, 200, 60), "blue": (40, 60, 220), "yellow": (240, 220, 40)}


@pytest.fixture(scope="session")
def tiny_vlm_dir(smollm2_tokenizer_dir, tmp_path_factory) -> Path:
    """A 2-layer random LlavaForConditionalGeneration with a 2-layer 32x32 CLIP tower (16 image tokens)."""
    pytest.importorskip("PIL")
    import torch
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        image_token="<image>",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    torch.manual_seed(0)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
            projection_dim=32,
        ),
        text_config=LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            tie_word_embeddings=False,
        ),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        projector_hidden_act="gelu",
    )
    config.tie_word_embeddings = False
    model = LlavaForConditionalGeneration(config)
    with torch.no_grad():  # peaked predictions (stable greedy text), and images that change them
        model.lm_head.weight.mul_(20.0)
        for p in model.model.multi_modal_projector.parameters():
            p.mul_(30.0)
    folder = tmp_path_factory.mktemp("tiny-llava")
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    return folder


def png_bytes(colour: tuple[int, int, int], size=(40, 30), fmt="PNG") -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, colour)
    ImageDraw.Draw(image).rectangle([4, 4, 14, 14], fill=(255 - colour[0], 255 - colour[1], 255 - colour[2]))
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def image_set(tmp_path_factory) -> Path:
    """Four coloured images as PNG/JPEG files, and the same rows as jsonl (paths, base64 strings, data URIs),
    parquet (bytes, and HF Image-feature structs) and an Arrow ``save_to_disk`` folder."""
    pytest.importorskip("PIL")
    folder = tmp_path_factory.mktemp("images")
    (folder / "img").mkdir()
    rows = []
    for k, (name, colour) in enumerate(COLOURS.items()):
        fmt = "PNG" if k % 2 == 0 else "JPEG"
        data = png_bytes(colour, fmt=fmt)
        path = folder / "img" / f"{name}.{fmt.lower()}"
        path.write_bytes(data)
        choices = list(COLOURS)
        rows.append(
            {
                "id": name,
                "question": "What colour is this picture?",
                "choices": choices,
                "answer": k,
                "path": f"img/{path.name}",
                "b64": base64.b64encode(data).decode(),
                "uri": f"data:image/{fmt.lower()};base64," + base64.b64encode(data).decode(),
                "raw": data,
            }
        )
    with (folder / "paths.jsonl").open("w") as handle:
        for r in rows:
            handle.write(json.dumps({k: v for k, v in r.items() if k != "raw"}) + "\n")
    import pandas as pd

    frame = pd.DataFrame(
        [
            {
                "id": r["id"],
                "question": r["question"],
                "choices": r["choices"],
                "answer": r["answer"],
                "image": r["raw"],
                "picture": {"bytes": r["raw"], "path": None},
            }
            for r in rows
        ]
    )
    frame.to_parquet(folder / "bytes.parquet")
    from datasets import Dataset, Features, Image, Sequence, Value

    features = Features(
        {
            "id": Value("string"),
            "question": Value("string"),
            "choices": Sequence(Value("string")),
            "answer": Value("int64"),
            "image": Image(),
        }
    )
    Dataset.from_list(
        [
            {
                "id": r["id"],
                "question": r["question"],
                "choices": r["choices"],
                "answer": r["answer"],
                "image": {"bytes": r["raw"], "path": None},
            }
            for r in rows
        ],
        features=features,
    ).save_to_disk(str(folder / "arrow"))
    return folder


@pytest.fixture
def image_set_as_data(image_set, monkeypatch):
    """The image set as the user's data folder (``PROCTOR_DATA``): task files written elsewhere may read it
    (a task reads files only in its folder or a data folder the user gave, docs/trust.md)."""
    monkeypatch.setenv("PROCTOR_DATA", str(image_set))
    return image_set
