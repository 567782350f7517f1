"""A vision task folder in SEA-HELM's MMStar format (tests/support/data/seahelm_vision), run on the tiny random
LLaVA: its dataloader imports ``src.dataloaders.huggingface_image_dataloader`` (proctor's) and reads a local
MMStar-format copy made with Pillow; generations equal transformers' own on SEA-HELM's prompt and image,
and the accuracy is SEA-HELM's normalised accuracy of the extracted letters, recomputed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PIL")
pytest.importorskip("datasets")

from proctor.api import evaluate  # noqa: E402
from proctor.core.errors import ProctorError, TaskDefinitionError  # noqa: E402
from tests.conftest import TEST_DATA  # noqa: E402
from tests.support.vision_fixtures import COLOURS, png_bytes, tiny_vlm_dir  # noqa: E402,F401

TREE = TEST_DATA / "seahelm_vision" / "seahelm_tasks"
MAX_TOKENS = 6


def mmstar_copy(folder: Path, broken_row: int | None = None) -> Path:
    """Four rows in MMStar's hub format (index, question, answer, image struct, l2_category, meta_info)."""
    import pandas as pd

    rows = []
    for k, (name, colour) in enumerate(COLOURS.items()):
        data = png_bytes(colour)
        if broken_row == k:
            data = data[:40]  # a truncated PNG
        rows.append(
            {
                "index": k,
                "question": "Which colour is the picture?\nOptions: A: red, B: green, C: blue, D: yellow",
                "answer": "ABCD"[k],
                "image": {"bytes": data, "path": f"{name}.png"},
                "category": "perception",
                "l2_category": "colour",
                "meta_info": {"source": "test", "split": "val"},
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(folder / "val.parquet")
    return folder


def options(data: Path) -> dict:
    return {"seahelm_data": {"Lin-Chen/MMStar": str(data)}, "trust_task_code": True, "seahelm_max_tokens": MAX_TOKENS}


@pytest.fixture(scope="module")
def vlm(tiny_vlm_dir):
    from proctor.models.hf.vision import HFVisionModel

    return HFVisionModel(tiny_vlm_dir, name="tiny-llava")


def test_mmstar_folder_runs_and_equals_transformers(vlm, tiny_vlm_dir, tmp_path):
    import io
    import re

    import torch
    import yaml
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    data = mmstar_copy(tmp_path / "mmstar")
    result = evaluate([TREE], vlm, output_dir=tmp_path / "run", dialect_options=options(data), export=False)
    assert set(result.tasks) == {"mmstar/en"}
    records = [json.loads(line) for line in (result.run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 4

    # transformers directly, on SEA-HELM's prompt: preamble (answer tag filled in), a blank line, the question
    config = yaml.safe_load((TREE / "vision" / "mmstar" / "config.yaml").read_text())["mmstar"]["languages"]["en"][
        "prompt_template"
    ]
    processor = AutoProcessor.from_pretrained(tiny_vlm_dir)
    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm_dir).eval()
    import pandas as pd

    frame = pd.read_parquet(data / "val.parquet")
    correct = []
    for record, (_, row) in zip(records, frame.iterrows()):
        text = (
            config["preamble"].format(answer_tag=config["answer_tag"])
            + "\n\n"
            + config["task_template"].format(question=row["question"])
        ).strip()
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
        prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        image = Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB")
        inputs = processor(text=[prompt], images=[image], return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(
                **inputs, max_new_tokens=MAX_TOKENS, do_sample=False, pad_token_id=processor.tokenizer.pad_token_id
            )
        want = processor.tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        assert record["completion"] == want
        assert record["images"][0]["digest"].startswith("sha256:") and record["images"][0]["thumbnail"].startswith(
            "data:image/jpeg;base64,"
        )
        # SEA-HELM's F1AccMetric: the text after the answer tag, compared with the label
        match = re.search(re.escape(config["answer_tag"]) + r"\s*(.*)", want)
        correct.append(bool(match) and match.group(1).strip() == row["answer"])
    # normalised accuracy: (accuracy - 1/n_labels) / (1 - 1/n_labels) * 100 with 4 labels (A-D)
    accuracy = sum(correct) / len(correct)
    assert result.tasks["mmstar/en"]["metrics"]["normalized_accuracy"]["value"] == pytest.approx(
        max(0.0, (accuracy - 0.25) / 0.75 * 100)
    )


def test_mmstar_bad_image_is_an_error_before_the_model_loads(tmp_path):
    data = mmstar_copy(tmp_path / "mmstar", broken_row=2)
    with pytest.raises(TaskDefinitionError) as info:
        evaluate(
            [TREE],
            "hf:/nonexistent/never/loaded",
            output_dir=tmp_path / "run",
            dialect_options=options(data),
            export=False,
        )
    assert "row 3, field 'images'" in str(info.value) and "not a readable image" in str(info.value)


def test_mmstar_on_a_text_model_is_refused(tiny_model, tmp_path):
    data = mmstar_copy(tmp_path / "mmstar")
    with pytest.raises(ProctorError, match="shows images, and model 'tiny-llama' takes none"):
        evaluate([TREE], tiny_model, output_dir=tmp_path / "run", dialect_options=options(data), export=False)


def test_mmstar_over_an_openai_server_sends_each_rows_image(tmp_path):
    """SUPPLEMENT with the in-process capture server of openai_fakes (the real-server check of image parts is
    in test_vision_openai, against transformers serve): each row's own image bytes go as an image_url part."""
    pytest.importorskip("httpx")
    import base64

    import pandas as pd

    from proctor.models.openai.compat import OpenAIModel
    from tests.support.openai_fakes import CaptureServer

    data = mmstar_copy(tmp_path / "mmstar")
    with CaptureServer() as server:
        result = evaluate(
            [TREE],
            OpenAIModel("vlm", server.url, backoff=0.05),
            output_dir=tmp_path / "run",
            dialect_options=options(data),
            export=False,
        )
        sent = [b["messages"][-1]["content"] for b in server.bodies]
    frame = pd.read_parquet(data / "val.parquet")
    want = {"data:image/png;base64," + base64.b64encode(row["image"]["bytes"]).decode() for _, row in frame.iterrows()}
    assert {parts[0]["image_url"]["url"] for parts in sent} == want
    assert all(parts[1]["type"] == "text" and "Which colour is the picture?" in parts[1]["text"] for parts in sent)
    assert result.tasks["mmstar/en"]["n_samples"] == 4


def test_ls_says_what_needs_a_vision_model_and_run_refuses_a_text_model_alike(tiny_model_dir, tmp_path):
    """`proctor ls` marks MMStar (SEA-HELM) and a native task with `images:` as needing a vision model, a text
    task as not; `proctor run` on a text model refuses the same task, in a fresh process each."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    data = mmstar_copy(tmp_path / "mmstar")
    native = tmp_path / "native"
    native.mkdir()
    (native / "rows.jsonl").write_text(json.dumps({"q": "Which colour?", "a": "red", "img": "red.png"}) + "\n")
    (native / "red.png").write_bytes(png_bytes(COLOURS["red"]))
    (native / "pictures.yaml").write_text(
        'name: pictures\nkind: generate\ndata: rows.jsonl\nprompt: "{{ q }}"\ntarget: "{{ a }}"\n'
        'images: "{{ img }}"\nmetrics: [exact_match]\n'
    )
    (native / "words.yaml").write_text(
        'name: words\nkind: generate\ndata: rows.jsonl\nprompt: "{{ q }}"\ntarget: "{{ a }}"\nmetrics: [exact_match]\n'
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "250"}
    seahelm = [str(TREE), "--trust-task-code", "--seahelm-data", f"Lin-Chen/MMStar={data}"]
    listed = subprocess.run(
        [sys.executable, "-m", "proctor.cli", "ls", *seahelm, str(native)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert listed.returncode == 0, listed.stderr
    rows = {
        line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[1:-1]]
        for line in listed.stdout.splitlines()
        if line.startswith("│")
    }
    header = [
        cell.strip()
        for cell in next(line for line in listed.stdout.splitlines() if line.startswith("┃")).split("┃")[1:-1]
    ]
    needs = header.index("needs")
    assert {name: row[needs] for name, row in rows.items()} == {
        "mmstar/en": "vision model",
        "pictures": "vision model",
        "words": "-",
    }
    assert "2 task(s) show images and need a vision-language model" in " ".join(listed.stdout.split())
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "run",
            *seahelm,
            "--model",
            str(tiny_model_dir),
            "-o",
            str(tmp_path / "run"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert ran.returncode == 2 and "shows images" in ran.stderr and "vision-language model" in ran.stderr
