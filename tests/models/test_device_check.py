"""A --device this machine cannot use is one clear error before the model loads: an unknown name, a GPU kind it
lacks (cuda without CUDA, mps without Apple's GPU: was an internal error from PyTorch), a CUDA index past
its GPUs. Through the CLI's entry point in this process, on a model folder that does not exist (the device
is refused first)."""

from __future__ import annotations

import pytest

from proctor.models.hf.loading import device_unavailable
from tests.support.cli_runs import QUESTIONS, QUIZ, jsonl, run_in_process, write

pytestmark = pytest.mark.fast

torch = pytest.importorskip("torch")


def _refused(tmp_path, monkeypatch, *flags: str) -> str:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "quiz.yaml", QUIZ)
    jsonl(tmp_path / "data.jsonl", QUESTIONS)
    code, output = run_in_process(["run", "quiz.yaml", "--model", "no-such-model-folder", *flags])
    assert code == 2, output
    assert "internal error" not in output and "Traceback" not in output, output
    assert "no-such-model-folder" not in output  # refused before the model was looked for
    return output


def test_an_unknown_device_name(tmp_path, monkeypatch):
    assert "'tpu' is not one of 'cpu', 'cuda', 'cuda:N', 'mps', 'auto'" in _refused(
        tmp_path, monkeypatch, "--device", "tpu"
    )
    assert "--device 'tpu' is not one of cpu, cuda, cuda:N, mps, auto" in _refused(
        tmp_path, monkeypatch, "--model-arg", "device=tpu"
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu(tmp_path, monkeypatch):
    output = _refused(tmp_path, monkeypatch, "--device", "cuda:1")
    assert "--device: device 'cuda:1' was asked for but no CUDA GPU is available" in output


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has Apple's GPU")
def test_mps_without_apples_gpu(tmp_path, monkeypatch):
    output = _refused(tmp_path, monkeypatch, "--device", "mps")
    assert "--device: device 'mps' (Apple's GPU) was asked for but this machine or PyTorch build has none" in output


def test_a_cuda_index_past_the_machines_gpus(monkeypatch):
    # this machine seen as one with two CUDA GPUs (torch's own answers replaced)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert device_unavailable("cuda:1") is None and device_unavailable("cuda") is None
    assert device_unavailable("cuda:2") == (
        "device 'cuda:2' was asked for but this machine has 2 CUDA GPU(s): cuda:0 to cuda:1"
    )
    assert device_unavailable("cpu") is None
