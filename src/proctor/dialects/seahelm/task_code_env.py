"""What task-folder code finds while proctor runs it, as SEA-HELM gives it:

- the working directory is SEA-HELM's repository root (ONERULER's loaders open
  ``seahelm_tasks/long_context/oneruler/...`` files by relative path);
- ``AutoTokenizer.from_pretrained(model_name)`` gets the evaluated model's tokenizer (SEA-HELM passes the
  model's name to every dataloader; NIAH/CWE size their haystacks in its tokens), with
  ``batch_encode_plus`` (gone from transformers 5) answered by the tokenizer's ``__call__``;
- ``Dataset.map(..., num_proc=N)`` runs in-process (32 workers on a shared machine gain nothing).
"""

from __future__ import annotations

import contextlib
import os
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from proctor.core.errors import ProctorError

if TYPE_CHECKING:
    from transformers import BatchEncoding, PreTrainedTokenizerBase


@contextlib.contextmanager
def working_directory(path: str | Path | None) -> Iterator[None]:
    if not path:
        yield
        return
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def tokenizer_path(model_spec: str | None) -> str | None:
    """The local folder holding the tokenizer of a ``--model`` spec (hf/vllm folder or the embedded default)."""
    if not model_spec:
        return None
    from proctor.core.registry import backend_of, split_model_spec

    backend = backend_of(str(model_spec))
    if backend is None or not backend.tokenizer_folder:
        return None
    rest = split_model_spec(str(model_spec))[1]
    from proctor.models.default import DEFAULT_MODEL_ALIASES, default_model_path

    if rest.lower() in DEFAULT_MODEL_ALIASES:
        return str(default_model_path())
    return rest if Path(rest).expanduser().is_dir() else None


class _Tokenizer:
    """A transformers tokenizer with ``batch_encode_plus`` (transformers < 5) as its ``__call__``."""

    def __init__(self, inner: PreTrainedTokenizerBase) -> None:
        self._inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> BatchEncoding:
        return self._inner(*args, **kwargs)

    def batch_encode_plus(self, *args: Any, **kwargs: Any) -> BatchEncoding:
        return self._inner(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class AutoTokenizer:
    """``transformers.AutoTokenizer`` for task-folder code: local folders only (nothing is fetched)."""

    @staticmethod
    def from_pretrained(name: str | Path | None, *args: Any, **kwargs: Any) -> _Tokenizer:
        if not name:
            raise ProctorError(
                "this dataloader builds its data with the evaluated model's tokenizer, as SEA-HELM does: "
                "run a local model (--model FOLDER or the default smollm2; API: dialect_options="
                "{'seahelm_model_name': FOLDER})"
            )
        path = tokenizer_path(str(name)) or str(name)
        if not Path(path).expanduser().is_dir():
            raise ProctorError(f"tokenizer not available offline: {name} (give the model as a local folder)")
        from transformers import AutoTokenizer as Real

        return _Tokenizer(Real.from_pretrained(path, *args, **kwargs))


def _in_process_dataset():
    from datasets import Dataset

    class InProcessDataset(Dataset):
        """``datasets.Dataset`` whose ``map`` ignores ``num_proc``."""

        def map(self, *args: Any, **kwargs: Any):
            kwargs.pop("num_proc", None)
            return super().map(*args, **kwargs)

    return InProcessDataset


def patch_module(module: types.ModuleType) -> None:
    """Point a task-folder module's ``AutoTokenizer`` and ``Dataset`` names at the versions above."""
    try:
        import transformers
    except ImportError:
        transformers = None
    try:
        import datasets
    except ImportError:
        datasets = None
    for key, value in list(vars(module).items()):
        if transformers is not None and value is getattr(transformers, "AutoTokenizer", None):
            setattr(module, key, AutoTokenizer)
        elif datasets is not None and value is getattr(datasets, "Dataset", None):
            setattr(module, key, _in_process_dataset())
