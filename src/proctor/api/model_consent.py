"""Consent for the model specs task files name (docs/trust.md, rule 1).

A model spec whose backend imports or runs Python code that the spec names (``ModelBackend.runs_code``: AISteer360's
``steer:FILE.py:NAME``) is code like a ``task_class``: when a file gives it (a ``--use-case-config``'s metric or
use case settings, which the run's model roles then make, ``api/model_roles.py``) it loads only with
``--trust-task-code``. A spec the user types (``--model``, ``--model-role``, ``--use-case-arg``) or hands over
from Python is the user's own consent and is not checked here.

Dialects call ``check_model_consent`` where they read such a file, so the refusal comes before any model loads
and names the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping

from proctor.core.errors import TaskDefinitionError
from proctor.core.registry import ModelBackend, registry, split_model_spec
from proctor.core.user_code import TRUST_HINT


def code_backend(spec: object) -> ModelBackend | None:
    """The backend of ``spec`` when loading it runs code the spec names; None otherwise (not a string, no such
    backend, a backend that runs none). The prefix is also read stripped and lower-cased, so ``' STEER:f.py:X'``
    is refused as ``steer:f.py:X`` is, whether or not the loader would take it."""
    if not isinstance(spec, str):
        return None
    prefix = split_model_spec(spec.strip())[0]
    backends = registry().model_backends
    for name in (prefix, prefix.strip().lower()):
        backend = backends.get(name)
        if backend is not None and backend.runs_code:
            return backend
    return None


def _strings(value: object, field: str) -> Iterator[tuple[str, str]]:
    """(field path, text) for every text in ``value``, nested mappings and lists included."""
    if isinstance(value, str):
        yield field, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{field}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{field}[{i}]")


def check_model_consent(value: object, *, trusted: bool, file: str | Path, field: str, line: int | None = None) -> None:
    """Refuse a model spec in ``value`` (a text, or any text nested in mappings and lists) that would run code,
    read from ``file`` at ``field``, unless ``trusted`` (--trust-task-code): a ``TaskDefinitionError`` naming
    the file, the field and the flag."""
    if trusted:
        return
    for where, text in _strings(value, field):
        backend = code_backend(text)
        if backend is not None:
            raise TaskDefinitionError(
                f"the model '{text.strip()}' imports Python code (the {backend.prefix}: backend runs the file or "
                f"module it names), and it is named by a task file, not the command line; {TRUST_HINT}",
                file=file,
                line=line,
                field=where,
            )
