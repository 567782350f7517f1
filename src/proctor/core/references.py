"""``"module:attr"`` references: how a declaration names code it must not import when it is read.

A dialect's declaration (``proctor.dialects.<name>.declaration``) and the built-in backends' (``proctor.models.
declaration``) name their implementation by such strings, imported on first use by this one helper, so reading
a declaration imports nothing of its dialect (a native run loads no other dialect) and no module imports the
declaration back through its implementation (``tests/cross_cutting/test_import_cycles.py`` counts the modules
named in these strings as imports).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def resolve(reference: str) -> Any:
    """The object ``"package.module:attr"`` names (``attr`` may be dotted: ``module:Class.method``), imported now."""
    module, sep, attr = reference.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"'{reference}' is not a reference: write it 'package.module:attr'")
    found: object = importlib.import_module(module)
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(f"'{reference}': module {module} has no attribute '{attr}'") from None
    return found


def lazy(reference: str) -> Callable[..., Any]:
    """A function that calls what ``reference`` names, imported on its first call (not now)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return resolve(reference)(*args, **kwargs)

    call.__name__ = call.__qualname__ = reference.rpartition(":")[2].rpartition(".")[2]
    call.__doc__ = f"``{reference}``, imported on the first call."
    return call
