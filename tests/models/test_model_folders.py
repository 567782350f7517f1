"""A damaged or mismatched local model folder ends the ``proctor`` command with one message that names the
folder and what is wrong with it — never a traceback, and never a run on weights transformers made up."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, proctor_error, write


def truncate_weights(folder):
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100_000])


def empty_weights(folder):
    (folder / "model.safetensors").write_bytes(b"")


def truncate_tokenizer(folder):
    tokenizer = folder / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:5000])


def one_more_layer(folder):
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] += 1
    (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize(
    "damage, words",
    [
        (truncate_weights, ["model.safetensors", "damaged or incomplete"]),
        (empty_weights, ["model.safetensors", "damaged or incomplete"]),
        (truncate_tokenizer, ["tokenizer.json", "damaged or incomplete"]),
        (one_more_layer, ["lack", "model.layers.2.", "random numbers", "config.json"]),
    ],
    ids=["truncated-weights", "empty-weights", "truncated-tokenizer", "config-asks-for-more-layers"],
)
def test_a_damaged_model_folder_is_one_clear_error(damage, words, tiny_model_dir, tmp_path):
    model = shutil.copytree(tiny_model_dir, tmp_path / "model")
    damage(model)
    jsonl(tmp_path / "quiz" / "data.jsonl", QUESTIONS)
    write(tmp_path / "quiz" / "task.yaml", QUIZ)
    message = proctor_error(
        "run", "quiz", "--model", str(model), "-o", "run", cwd=tmp_path, env={"HF_HUB_OFFLINE": "1"}
    )
    assert f"cannot load model '{model}'" in message
    for word in words:
        assert word in message, message[-3000:]
    assert not (tmp_path / "run" / "results.json").exists()


def test_the_weights_digest_is_read_once_and_again_when_a_file_changes(tiny_model_dir, tmp_path):
    """A resumed run asks for a folder's digest before loading and again at loading: the weights are read
    once, and read anew (another digest) as soon as a file in the folder changes."""
    from proctor.models.hf import loading as hf_loading

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    hf_loading._digest.cache_clear()
    first = hf_loading.weights_digest(folder)
    assert hf_loading.weights_digest(folder) == first
    assert hf_loading._digest.cache_info().misses == 1
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "rms_norm_eps": 1e-4}))
    assert hf_loading.weights_digest(folder) != first
    assert hf_loading._digest.cache_info().misses == 2
