"""report.html shows each image sample's thumbnail (an embedded data URI) beside its prompt and answer,
checked in headless Chromium on a run of two image tasks; a screenshot is kept in the run folder."""

from __future__ import annotations

import base64
import io
import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("PIL")

from proctor import evaluate  # noqa: E402
from proctor.core.model_requests import GenerateResult  # noqa: E402
from proctor.runs.report import write_report  # noqa: E402
from tests.support.browser import browser  # noqa: E402
from tests.support.fakes import FakeModel  # noqa: E402
from tests.support.vision_fixtures import COLOURS, image_set  # noqa: E402,F401


class FakeVisionModel(FakeModel):
    """FakeModel that takes images and names the colour of the picture it was shown (by image digest)."""

    def __init__(self, names: dict[str, str]) -> None:
        super().__init__("fake-vision")
        self.names = names

    @property
    def supports_images(self) -> bool:
        return True

    @property
    def supports_image_loglikelihood(self) -> bool:
        return True

    def image_prompt(self, text: str, n_images: int) -> str:
        return "<image>\n" * n_images + text

    def generate(self, requests, progress=None):
        return [
            GenerateResult("It is " + " and ".join(self.names[i.digest] for i in r.images) + ".", "stop", 1, 1)
            for r in requests
        ]


@pytest.fixture(scope="module")
def run_dir(image_set, tmp_path_factory) -> Path:
    import hashlib

    tmp = tmp_path_factory.mktemp("vision-report")
    names = {"sha256:" + hashlib.sha256(p.read_bytes()).hexdigest(): p.stem for p in (image_set / "img").iterdir()}
    (tmp / "tasks.yaml").write_text(
        textwrap.dedent(f"""\
        tasks:
          - name: name_the_colour
            kind: generate
            data: {image_set / 'paths.jsonl'}
            prompt: "{{{{ question }}}}"
            target: "{{{{ id }}}}"
            images: "{{{{ path }}}}"
          - name: pick_the_colour
            kind: multiple_choice
            data: {image_set / 'bytes.parquet'}
            prompt: "{{{{ question }}}}"
            choices: "{{{{ choices }}}}"
            target: "{{{{ answer }}}}"
            images: "{{{{ image }}}}"
        """)
    )
    result = evaluate(
        [tmp / "tasks.yaml"],
        FakeVisionModel(names),
        output_dir=tmp / "run",
        export=False,
        variables={"IMAGES": str(image_set)},
    )  # the image set, given as a data folder
    write_report(result.run_dir)
    return result.run_dir


def mean_colour(data_uri: str) -> tuple[float, float, float]:
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(data_uri.split(",", 1)[1]))).convert("RGB")
    pixels = [image.getpixel((x, y)) for x in range(image.width) for y in range(image.height)]
    return tuple(sum(p[c] for p in pixels) / len(pixels) for c in range(3))


def test_thumbnails_are_small_and_show_the_picture(run_dir, image_set):
    import hashlib

    names = {"sha256:" + hashlib.sha256(p.read_bytes()).hexdigest(): p.stem for p in (image_set / "img").iterdir()}
    records = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 8
    from PIL import Image

    for record in records:
        (image,) = record["images"]
        name = names[image["digest"]]
        thumb = Image.open(io.BytesIO(base64.b64decode(image["thumbnail"].split(",", 1)[1])))
        assert max(thumb.size) <= 96 and (image["width"], image["height"]) == (40, 30)
        # mostly the fill colour (a small inverted square in a corner): the mean is near it
        want = COLOURS[name]
        got = mean_colour(image["thumbnail"])
        assert all(abs(g - w) < 60 for g, w in zip(got, want)), (name, got)
    assert [r["generation"] for r in records if r["task"] == "name_the_colour"] == [f"It is {n}." for n in COLOURS]
    text = (run_dir / "report.html").read_text()
    assert text.count("data:image/jpeg;base64,") == 8 and "http://" not in text and "https://" not in text


def test_report_shows_thumbnails_beside_prompt_and_answer(run_dir):
    from selenium.webdriver.common.by import By

    driver = browser()
    try:
        driver.set_window_size(1100, 1400)
        driver.get((run_dir / "report.html").resolve().as_uri())
        assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
        records = {
            (r["task"], r["id"]): r for r in map(json.loads, (run_dir / "samples.jsonl").read_text().splitlines())
        }
        cards = driver.find_elements(By.CSS_SELECTOR, "#sample-list .sample")
        assert len(cards) == 8
        for card in cards:
            task = card.find_element(By.CSS_SELECTOR, ".tag").text.split(" · ")[0]
            record = records[(task, card.get_attribute("data-id"))]
            img = card.find_element(By.CSS_SELECTOR, "img.thumb")
            assert img.get_attribute("src") == record["images"][0]["thumbnail"]
            assert driver.execute_script("return arguments[0].naturalWidth", img) > 0  # decoded by the browser
            prompt = card.find_element(By.CSS_SELECTOR, "pre.prompt")
            answer = card.find_element(By.CSS_SELECTOR, "pre.generation" if task == "name_the_colour" else ".choice")
            for other in (prompt, answer):  # beside: to the left, overlapping vertically with the text column
                assert img.rect["x"] + img.rect["width"] <= other.rect["x"]
            assert img.rect["y"] < prompt.rect["y"] + prompt.rect["height"]
            assert img.rect["width"] <= 96 and img.rect["height"] <= 96
        driver.execute_script("document.getElementById('sample-list').children[3].scrollIntoView()")
        driver.save_screenshot(
            str(run_dir / "report-thumbnails.png")
        )  # looked at by hand: thumbnail left of prompt/answer
        assert (run_dir / "report-thumbnails.png").stat().st_size > 1000
    finally:
        driver.quit()
