"""The built-in model backends are registered as a plug-in's are (``add_model_backend``), and other modules ask
the registry what a ``--model`` string names (``backend_of``) instead of matching prefixes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from proctor.core.registry import Registry, backend_of, registry, split_model_spec
from tests.conftest import REPO


@pytest.mark.fast
def test_the_built_in_backends_are_registered_with_their_capabilities():
    backends = registry().model_backends
    assert {"hf", "hf-vision", "vllm", "openai", "steer"} <= set(backends)
    assert backend_of("smollm2").prefix == "hf" and backend_of("./my-model").prefix == "hf"  # no prefix: Hugging Face
    assert backend_of(r"C:\models\x").prefix == "hf"  # a drive letter is no prefix
    assert backend_of("openai:gpt").server and not backend_of("hf:org/name").server
    assert backend_of("vllm:org/name").tensor_parallel and not backend_of("hf:org/name").tensor_parallel
    assert backend_of("hf:org/name").hub_models and backend_of("hf-vision:org/name").hub_models
    assert not backend_of("vllm:org/name").hub_models
    assert (
        backend_of("hf:x").tokenizer_folder
        and backend_of("vllm:x").tokenizer_folder
        and not backend_of("openai:x").tokenizer_folder
    )
    assert backend_of("nosuch:x") is None
    assert split_model_spec("steer:a.py:NAME") == ("steer", "a.py:NAME")


@pytest.mark.fast
def test_a_plug_ins_backend_is_found_the_same_way():
    own = Registry()
    own.add_model_backend("mine", lambda rest, **options: rest, server=True)
    assert own.backend_of("mine:x").server and own.backend_of("mine:x").loader("x") == "x"
    assert own.backend_of("hf:x") is None  # a registry knows only what was registered in it


def test_asking_about_a_backend_imports_none():
    """The registry and every capability answer without importing a backend (transformers, httpx, vllm)."""
    code = (
        "import sys\nfrom proctor.core.registry import backend_of\n"
        "assert backend_of('openai:x').server and backend_of('vllm:x').tensor_parallel\n"
        "heavy = [m for m in ('transformers', 'torch', 'httpx', 'vllm', "
        "'proctor.models.builtin_backends') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_an_api_key_variable_named_but_unset_is_a_warning_before_the_run(caplog, monkeypatch):
    from proctor.models.builtin_backends import check_openai

    options = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "PROCTOR_TEST_NO_SUCH_KEY"}
    monkeypatch.delenv("PROCTOR_TEST_NO_SUCH_KEY", raising=False)
    with caplog.at_level("WARNING"):
        check_openai("m", dict(options))
    assert "PROCTOR_TEST_NO_SUCH_KEY is not set" in caplog.text
    caplog.clear()
    monkeypatch.setenv("PROCTOR_TEST_NO_SUCH_KEY", "sk-test")
    with caplog.at_level("WARNING"):
        check_openai("m", dict(options))
        check_openai("m", {"base_url": "http://127.0.0.1:9/v1", "api_key_env": None})
    assert "is not set" not in caplog.text
