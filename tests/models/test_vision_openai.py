"""Image tasks over the OpenAI-compatible backend: images go to /chat/completions as image_url content
parts. Against a real `transformers serve` on 127.0.0.1 serving the tiny random LLaVA (built at test time),
greedy generations equal the hf-vision backend's on the same folder, and image multiple-choice runs through
the generation formulation. A second, in-process capture server (a supplement, labelled as such) checks the
exact payload and that stored answers are reused on resume."""

from __future__ import annotations

import base64
import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("PIL")
for module in ("httpx", "fastapi", "uvicorn"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs '{module}' (pip install 'proctor[openai,serve]')", allow_module_level=True)

from tests.support.openai_fakes import CaptureServer, serve_transformers  # noqa: E402
from tests.support.vision_fixtures import (  # noqa: E402,F401
    COLOURS,
    image_set,
    image_set_as_data,
    png_bytes,
    tiny_vlm_dir,
)

pytestmark = pytest.mark.usefixtures("image_set_as_data")  # task files here read the image set as a data folder

from proctor.api import evaluate  # noqa: E402
from proctor.models.openai.compat import OpenAIModel  # noqa: E402

GENERATE = """\
name: describe
kind: generate
data: {data}
prompt: "Describe the picture."
target: "{{{{ id }}}}"
images: "{{{{ path }}}}"
chat: {{enabled: true}}
generation: {{max_tokens: 10}}
"""
CHOICE = """\
name: colour_choice
kind: multiple_choice
data: {data}
prompt: "{{{{ question }}}}"
choices: "{{{{ choices }}}}"
target: "{{{{ answer }}}}"
images: "{{{{ path }}}}"
chat: {{enabled: true}}
"""


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def task_file(folder: Path, body: str, data: Path) -> Path:
    path = folder / "task.yaml"
    path.write_text(textwrap.dedent(body.format(data=data)))
    return path


@pytest.fixture(scope="module")
def serve(tiny_vlm_dir, tmp_path_factory):
    yield from serve_transformers(tiny_vlm_dir, tmp_path_factory.mktemp("serve-vlm"))


@pytest.fixture(scope="module")
def vlm(tiny_vlm_dir):
    from proctor.models.hf.vision import HFVisionModel

    return HFVisionModel(tiny_vlm_dir, name="tiny-llava")


def served(url: str, folder: Path) -> OpenAIModel:
    return OpenAIModel(str(folder), url, name="tiny-llava-serve", endpoint="chat", backoff=0.05, concurrency=2)


def test_served_image_generations_equal_hf_vision(serve, vlm, tiny_vlm_dir, image_set, tmp_path):
    task = task_file(tmp_path, GENERATE, image_set / "paths.jsonl")
    api = evaluate([task], served(serve, tiny_vlm_dir), output_dir=tmp_path / "api", export=False)
    local = evaluate([task], vlm, output_dir=tmp_path / "hf", export=False)
    got = [r["generation"] for r in records(api.run_dir)]
    want = [r["generation"] for r in records(local.run_dir)]
    assert got == want
    assert len(set(want)) == len(COLOURS)  # the pictures, not just the text, drive the answers
    assert api.tasks["describe"]["usage"]["completion_tokens"] > 0


def test_served_image_choice_runs_by_generation(serve, vlm, tiny_vlm_dir, image_set, tmp_path):
    task = task_file(tmp_path, CHOICE, image_set / "paths.jsonl")
    api = evaluate([task], served(serve, tiny_vlm_dir), output_dir=tmp_path / "api", export=False)
    assert api.tasks["colour_choice"]["mc_format"] == "generate"
    local = evaluate([task], vlm, output_dir=tmp_path / "hf", export=False, mc_format="generate")
    assert [r["generation"] for r in records(api.run_dir)] == [r["generation"] for r in records(local.run_dir)]
    assert api.tasks["colour_choice"]["metrics"] == local.tasks["colour_choice"]["metrics"]


def test_payload_has_image_parts_and_resume_reuses_answers(image_set, tmp_path):
    """Supplement with an in-process capture server: the exact content parts, in order, for chat and plain
    prompts; a rerun of the same folder sends nothing; another picture under the same file name is a new request."""
    import shutil

    from proctor.core.errors import ProctorError

    data = tmp_path / "data"
    shutil.copytree(image_set, data)
    for chat in (True, False):
        body = GENERATE.replace("chat: {{enabled: true}}", f"chat: {{{{enabled: {str(chat).lower()}}}}}")
        task = task_file(tmp_path, body, data / "paths.jsonl")
        with CaptureServer() as server:
            model = OpenAIModel("vlm", server.url, backoff=0.05)
            out = tmp_path / f"run-{chat}"
            evaluate([task], model, output_dir=out, export=False)
            assert len(server.bodies) == len(COLOURS)
            sent = {json.dumps(b["messages"], sort_keys=True) for b in server.bodies}
            for name in COLOURS:
                raw = next((data / "img").glob(f"{name}.*")).read_bytes()
                mime = "image/png" if raw.startswith(b"\x89PNG") else "image/jpeg"
                want = [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {"url": f"data:{mime};base64,{base64.b64encode(raw).decode()}"},
                            },
                            {"type": "text", "text": "Describe the picture."},
                        ],
                    }
                ]
                assert json.dumps(want, sort_keys=True) in sent
            assert [r["generation"] for r in records(out)] == ["1 image"] * len(COLOURS)
            evaluate([task], model, output_dir=out, export=False)  # resumed: every answer is in the store
            assert len(server.bodies) == len(COLOURS)
            (data / "img" / "red.png").write_bytes(png_bytes((128, 0, 128)))  # same file name, new pixels
            with pytest.raises(ProctorError, match="(?i)changed"):  # the resume check sees the new pixels
                evaluate([task], model, output_dir=out, export=False)
            evaluate([task], model, output_dir=out, export=False, update=True)
            assert len(server.bodies) == len(COLOURS) + 1  # only the red row's request is new
            shutil.copy(image_set / "img" / "red.png", data / "img" / "red.png")


def test_image_loglikelihood_over_the_api_is_refused(image_set, tmp_path):
    from proctor.core.errors import ProctorError

    task = task_file(tmp_path, CHOICE, image_set / "paths.jsonl")
    with CaptureServer() as server:
        with pytest.raises(ProctorError, match="cannot score log-likelihoods with images"):
            evaluate(
                [task],
                OpenAIModel("vlm", server.url, backoff=0.05),
                output_dir=tmp_path / "r",
                export=False,
                mc_format="loglikelihood",
            )
        assert server.bodies == []
