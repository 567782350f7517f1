"""Image tasks on a Hugging Face vision-language model: the tiny random LLaVA built at test time,
images made with Pillow in every row form (file path, parquet bytes, HF Image struct in parquet and
Arrow, base64, data URI). proctor's numbers are compared with transformers called directly."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("PIL")

from tests.support.vision_fixtures import COLOURS, image_set, image_set_as_data, tiny_vlm_dir  # noqa: E402,F401

pytestmark = pytest.mark.usefixtures("image_set_as_data")  # task files here read the image set as a data folder

from proctor.api import evaluate, load_tasks  # noqa: E402
from proctor.core.errors import TaskDefinitionError  # noqa: E402
from tests.support.hf_reference import reference_logprob  # noqa: E402


@pytest.fixture(scope="module")
def vlm(tiny_vlm_dir):
    from proctor.models.hf.vision import HFVisionModel

    return HFVisionModel(tiny_vlm_dir, name="tiny-llava")


@pytest.fixture(scope="module")
def direct(tiny_vlm_dir):
    """The same folder loaded by transformers' auto classes, for reference numbers."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    return AutoProcessor.from_pretrained(tiny_vlm_dir), AutoModelForImageTextToText.from_pretrained(tiny_vlm_dir).eval()


def write_task(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(body))
    return path


MC_TASK = """\
name: {name}
kind: multiple_choice
data: {data}
prompt: "{{{{ question }}}}"
choices: "{{{{ choices }}}}"
target: "{{{{ answer }}}}"
images: "{{{{ {column} }}}}"
chat: {{enabled: {chat}}}
"""


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("chat", [True, False])
def test_choice_logprobs_equal_transformers_directly(vlm, direct, image_set, tmp_path, chat):
    task = write_task(
        tmp_path,
        "colours",
        MC_TASK.format(name="colours", data=image_set / "bytes.parquet", column="image", chat=str(chat).lower()),
    )
    result = evaluate([task], vlm, output_dir=tmp_path / "run", export=False)
    rows = records(result.run_dir)
    assert len(rows) == 4
    import pandas as pd

    frame = pd.read_parquet(image_set / "bytes.parquet")
    worst = 0.0
    for row, (_, data) in zip(rows, frame.iterrows()):
        if chat:
            prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": data["question"]}]}]
        else:
            prompt = "<image>\n" + data["question"]
        for choice, got, n in zip(row["choices"], row["logprobs"], row["n_tokens"]):
            want = reference_logprob(direct, prompt, data["image"], " " + choice)
            assert n == len(want)
            worst = max(worst, abs(got - sum(want)))
    print(f"chat={chat}: max |proctor - transformers| = {worst:.2e}")
    assert worst < 1e-5, worst
    # the image changes the numbers: the same question with another picture scores differently
    assert len({tuple(r["logprobs"]) for r in rows}) == 4


def test_every_image_form_gives_the_same_requests(vlm, image_set, tmp_path):
    """Paths (PNG and JPEG files), base64, data URIs, parquet bytes, HF Image structs in parquet and in
    an Arrow save_to_disk folder: the same image bytes, read once at prepare time, hence the same requests
    (and, run on the model, the same scores)."""
    import hashlib

    from proctor.engine.prepare import prepare_task
    from proctor.engine.task_requests import build_requests

    forms = [
        ("paths.jsonl", "path"),
        ("paths.jsonl", "b64"),
        ("paths.jsonl", "uri"),
        ("bytes.parquet", "image"),
        ("bytes.parquet", "picture"),
        ("arrow", "image"),
    ]
    built = []
    for k, (data, column) in enumerate(forms):
        task = write_task(
            tmp_path, f"form{k}", MC_TASK.format(name=f"form{k}", data=image_set / data, column=column, chat="true")
        )
        prepared = prepare_task(load_tasks([task])[0], {})
        built.append(build_requests(vlm, prepared))
    first = built[0]
    assert all(b.flat == first.flat for b in built[1:])
    files = [next((image_set / "img").glob(f"{name}.*")).read_bytes() for name in COLOURS]
    assert [s.prompt.images[0].data for s in first.prepared.samples] == files
    assert [r.images[0].digest for r in first.flat[::4]] == ["sha256:" + hashlib.sha256(f).hexdigest() for f in files]
    # two forms on the model: the same scores
    scores = []
    for k in (1, 5):
        result = evaluate([tmp_path / f"form{k}.yaml"], vlm, output_dir=tmp_path / f"run{k}", export=False, limit=2)
        scores.append([r["logprobs"] for r in records(result.run_dir)])
    assert scores[0] == scores[1]


def test_generation_equals_transformers_generate(vlm, direct, image_set, tmp_path):
    import io

    import torch
    from PIL import Image

    task = write_task(
        tmp_path,
        "describe",
        f"""\
        name: describe
        kind: generate
        data: {image_set / 'paths.jsonl'}
        prompt: "Describe the picture."
        target: "{{{{ id }}}}"
        images: "{{{{ path }}}}"
        chat: {{enabled: true}}
        generation: {{max_tokens: 12}}
        """,
    )
    result = evaluate([task], vlm, output_dir=tmp_path / "run", export=False)
    rows = records(result.run_dir)
    processor, model = direct
    texts = []
    for row, name in zip(rows, COLOURS):
        path = next((image_set / "img").glob(f"{name}.*"))
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe the picture."}]}]
        text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = processor(
            text=[text],
            images=[Image.open(io.BytesIO(path.read_bytes())).convert("RGB")],
            return_tensors="pt",
            add_special_tokens=False,
        )
        with torch.no_grad():
            out = model.generate(
                **inputs, max_new_tokens=12, do_sample=False, pad_token_id=processor.tokenizer.pad_token_id
            )
        want = processor.tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        assert row["generation"] == want
        texts.append(want)
    assert len(set(texts)) == 4 and all(texts)  # each picture gives its own text


def test_bad_images_fail_before_the_model_loads(image_set, tmp_path):
    import base64

    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    rows = [
        {"q": "ok", "img": str(image_set / "img" / "red.png")},
        {"q": "missing", "img": "img/nowhere.png"},
        {"q": "broken", "img": "broken.png"},
        {"q": "b64", "img": base64.b64encode(b"hello world, not an image").decode()},
    ]
    for k, row in enumerate(rows[1:], start=2):
        data = tmp_path / f"rows{k}.jsonl"
        data.write_text(json.dumps(rows[0]) + "\n" + json.dumps(row) + "\n")
        task = write_task(
            tmp_path,
            f"bad{k}",
            f"""\
            name: bad{k}
            kind: generate
            data: {data}
            prompt: "{{{{ q }}}}"
            target: "x"
            images: "{{{{ img }}}}"
            """,
        )
        with pytest.raises(TaskDefinitionError) as info:
            evaluate([task], "hf:/nonexistent/model/never/loaded", output_dir=tmp_path / f"run{k}", export=False)
        message = str(info.value)
        assert f"rows{k}.jsonl, row 2, field 'img'" in message, message
        assert {"2": "image file not found", "3": "not a readable image", "4": "not a readable image"}[
            str(k)
        ] in message


def test_text_model_refuses_image_task(tiny_model, image_set, tmp_path):
    from proctor.core.errors import ProctorError

    task = write_task(
        tmp_path, "t", MC_TASK.format(name="t", data=image_set / "bytes.parquet", column="image", chat="false")
    )
    with pytest.raises(ProctorError, match="shows images, and model 'tiny-llama' takes none"):
        evaluate([task], tiny_model, output_dir=tmp_path / "run", export=False)


def test_image_digest_enters_request_hash_and_task_hash(image_set, tmp_path):
    from proctor.core.model_requests import GenerateRequest
    from proctor.engine.prepare import prepare_task
    from proctor.runs.store import request_hash

    a = write_task(tmp_path, "a", MC_TASK.format(name="a", data=image_set / "paths.jsonl", column="path", chat="false"))
    prepared = prepare_task(load_tasks([a])[0], {})
    red, green = prepared.samples[0].prompt.images[0], prepared.samples[1].prompt.images[0]
    assert request_hash(GenerateRequest("x", images=(red,))) != request_hash(GenerateRequest("x", images=(green,)))
    assert request_hash(GenerateRequest("x", images=(red,))) != request_hash(GenerateRequest("x"))
    # a request without images hashes as before images existed (stores written earlier stay valid)
    import hashlib

    from proctor.runs.store import canonical_json

    old = {
        "prompt": "x",
        "max_tokens": 64,
        "stop": [],
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
        "num_beams": 1,
        "length_penalty": 1.0,
        "no_repeat_ngram_size": 0,
        "min_tokens": 0,
        "max_length": None,
    }
    assert (
        request_hash(GenerateRequest("x"))
        == hashlib.sha256(canonical_json({"type": "GenerateRequest", "fields": old}).encode()).hexdigest()
    )
    # the same file name with other pixels changes the task hash (the resume check sees it)
    before = prepared.content_hash
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(image_set, copy)
    b = write_task(copy, "a", MC_TASK.format(name="a", data=copy / "paths.jsonl", column="path", chat="false"))
    same = prepare_task(load_tasks([b])[0], {}).content_hash
    (copy / "img" / "red.png").write_bytes((copy / "img" / "blue.png").read_bytes())
    changed = prepare_task(load_tasks([b])[0], {}).content_hash
    assert same != changed
    assert before  # computed


def test_scores_do_not_depend_on_the_requests_sent_together(vlm, image_set, tmp_path):
    """The context's forward pass is shared by its choices; a request scored alone gets the same numbers."""
    from proctor.engine.prepare import prepare_task
    from proctor.engine.task_requests import build_requests

    task = write_task(
        tmp_path, "alone", MC_TASK.format(name="alone", data=image_set / "bytes.parquet", column="image", chat="true")
    )
    requests = build_requests(vlm, prepare_task(load_tasks([task])[0], {}, limit=2)).unique
    together = vlm.loglikelihood(requests)
    alone = [vlm.loglikelihood([r])[0] for r in reversed(requests)][::-1]
    assert together == alone


def test_model_strings_pick_the_vision_backend(tiny_vlm_dir):
    from proctor.models.hf.vision import HFVisionModel
    from proctor.models.registry import load_model

    for spec in (f"hf:{tiny_vlm_dir}", f"hf-vision:{tiny_vlm_dir}", str(tiny_vlm_dir)):
        model = load_model(spec)
        assert isinstance(model, HFVisionModel) and model.fingerprint["backend"] == "hf-vision"
        assert model.supports_images and model.supports_image_loglikelihood
