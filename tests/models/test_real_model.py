"""Integration tests on the embedded default model (SmolLM2-135M-Instruct) and real benchmark data."""

from __future__ import annotations

import json

import pytest

from proctor import evaluate
from tests.conftest import EXAMPLES, TEST_DATA, shared_path

pytestmark = pytest.mark.slow

REFERENCE = TEST_DATA / "lmeval-0.4.13_arc-easy-300_smollm2.json"


@pytest.fixture(scope="module")
def default_model():
    from proctor.models.registry import load_model

    return load_model("smollm2", batch_size=8)


def test_arc_easy_agrees_with_lm_evaluation_harness(default_model, tmp_path):
    data = shared_path("data")
    reference = json.loads(REFERENCE.read_text())
    result = evaluate(
        [EXAMPLES / "benchmarks" / "arc_easy.yaml"],
        default_model,
        output_dir=tmp_path / "run",
        limit=300,
        variables={"PROCTOR_DATA": str(data)},
    )
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == len(reference["questions"]) == 300
    worst = 0.0
    for ours, theirs in zip(samples, reference["questions"]):
        assert ours["id"] == theirs["id"]
        assert ours["target"] == theirs["label"]
        for a, b in zip(ours["logprobs"], theirs["loglikelihoods"], strict=True):
            worst = max(worst, abs(a - b))
        assert ours["metrics"]["acc"] == theirs["acc"], ours["id"]
        assert ours["metrics"]["acc_norm"] == theirs["acc_norm"], ours["id"]
    assert worst <= 1e-3, f"max |Δ log-likelihood| vs lm-evaluation-harness = {worst}"
    assert result.metric("arc_easy", "acc") == pytest.approx(reference["acc"], abs=1e-12)
    assert result.metric("arc_easy", "acc_norm") == pytest.approx(reference["acc_norm"], abs=1e-12)


def test_quickstart_runs_on_the_default_model(default_model, tmp_path):
    result = evaluate([EXAMPLES / "quickstart"], default_model, output_dir=tmp_path / "qs")
    mc = result.tasks["quickstart_science_mc"]
    assert mc["n_samples"] == 30
    # A 135M instruct model knows a fair share of these; chance is 0.25.
    assert mc["metrics"]["acc"]["value"] > 0.4
    gen = result.tasks["quickstart_short_answers"]
    assert gen["n_samples"] == 20 and gen["metrics"]["exact_match"]["value"] > 0.2


def test_first_use_converts_the_gguf_once_into_proctor_home(tmp_path, monkeypatch, caplog):
    import re

    import torch

    from proctor.core.notice import NOTICE
    from proctor.models.default import default_model_path, proctor_home

    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    assert proctor_home() == tmp_path / "home"
    with caplog.at_level(NOTICE, logger="proctor.models.default"):
        folder = default_model_path()
    said = [r.getMessage() for r in caplog.records if r.name == "proctor.models.default"]
    assert len(said) == 2 and "(once; this takes about a minute)" in said[0]  # what it does, and for how long
    assert {r.levelname for r in caplog.records if r.name == "proctor.models.default"} == {"NOTICE"}  # not a warning
    assert re.fullmatch(rf"converted the embedded default model in \d+ s \(kept in {re.escape(str(folder))}\)", said[1])
    caplog.clear()
    assert folder.parent.parent == tmp_path / "home" and (folder / "config.json").exists()
    weights = sorted(folder.glob("*.safetensors"))
    assert weights and not list(folder.parent.glob(".convert-*"))  # no staging folder left behind
    stamp = weights[0].stat().st_mtime_ns
    assert default_model_path() == folder and weights[0].stat().st_mtime_ns == stamp  # not converted again
    assert not [r for r in caplog.records if r.name == "proctor.models.default"]  # and nothing said
    from safetensors.torch import load_file

    tensors = load_file(weights[0])
    assert all(t.dtype == torch.float32 for t in tensors.values())


def test_a_proctor_home_that_is_a_file_is_named_before_the_gguf_is_read(tmp_path, monkeypatch):
    from proctor.core.errors import ModelLoadError
    from proctor.models import default

    (tmp_path / "home").write_text("not a folder")
    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(default, "find_gguf", lambda: pytest.fail("the GGUF was read"))
    with pytest.raises(ModelLoadError, match="home is not a folder.*PROCTOR_HOME"):
        default.default_model_path()


def test_two_runs_converting_at_once_convert_once_and_both_get_the_folder(tmp_path, monkeypatch):
    """Two runs started together on a fresh home (two test workers, two shells): the second waits for the first's
    conversion and uses its folder, instead of converting again and swapping the folder under the first's load."""
    import threading
    import time

    from proctor.models import default

    monkeypatch.setenv("PROCTOR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(default, "find_gguf", lambda: tmp_path / "model.gguf")
    conversions: list[int] = []

    def convert(gguf, target):
        conversions.append(threading.get_ident())
        time.sleep(0.5)  # long enough for the other thread to reach the lock
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")
        (target / "model.safetensors").write_bytes(b"")
        return target

    monkeypatch.setattr(default, "_convert", convert)
    folders: list[object] = []
    threads = [threading.Thread(target=lambda: folders.append(default.default_model_path())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert folders == [default.default_model_folder()] * 2
    assert len(conversions) == 1  # the waiting one found the folder and did not convert again
