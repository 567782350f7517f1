"""The one registry: what dialects and other plug-ins contribute to the layers above ``core``.

A plug-in is a module with a ``register(registry)`` function (``core/contributions.py``: the ``Registry`` and
what may be added to it). The built-in ones are declarations, each a leaf module that imports only ``core``:

- ``proctor.dialects.<name>.declaration``, one per dialect package, found by scanning ``proctor.dialects``
  (adding a dialect touches no core file);
- ``proctor.models.declaration``, the built-in model backends (``hf``, ``hf-vision``, ``vllm``, ``openai``).

Installed packages add theirs under the ``proctor.plugins`` entry-point group (the name kept from when the built-in
declarations were the modules of a ``proctor.plugins`` package). The registry is built once, on first use, by
calling each ``register`` in turn: importing a declaration registers nothing by itself.

A declaration names its dialect, its options, which files it claims (by suffix, key or a look at the file) and
what else it adds; it names its implementation by ``"module:attr"`` references (``core/references.py``),
imported when a file of its dialect is read, so a run imports only the dialects whose files it reads.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from typing import Callable, Iterable

from proctor.core.contributions import (
    DEFAULT_BACKEND,
    Exporter,
    ModelBackend,
    ModelCheck,
    ModelIdentity,
    ModelLoader,
    Registry,
    TaskHandler,
    split_model_spec,
)
from proctor.core.registrations import loading

__all__ = [
    "DEFAULT_BACKEND",
    "Exporter",
    "ModelBackend",
    "ModelCheck",
    "ModelIdentity",
    "ModelLoader",
    "Registry",
    "TaskHandler",
    "backend_of",
    "builtin_declarations",
    "registry",
    "split_model_spec",
]

DIALECTS_PACKAGE = "proctor.dialects"  # each package in it declares its dialect in its ``declaration`` module
DECLARATION = "declaration"  # the module of a package that declares what the package contributes
BACKENDS_DECLARATION = "proctor.models.declaration"  # the built-in model backends
ENTRY_POINT_GROUP = "proctor.plugins"  # installed plug-ins (docs/extending.md)

_REGISTRY: Registry | None = None
_LOCK = threading.Lock()


def builtin_declarations() -> list[str]:
    """The built-in declaration modules, by name: the backends', then each dialect package's (sorted)."""
    dialects = importlib.import_module(DIALECTS_PACKAGE)  # its __init__ imports nothing: no dialect loads here
    packages = sorted(info.name for info in pkgutil.iter_modules(dialects.__path__) if info.ispkg)
    return [BACKENDS_DECLARATION] + [f"{DIALECTS_PACKAGE}.{name}.{DECLARATION}" for name in packages]


def _plugin_modules() -> Iterable[tuple[str, Callable[[Registry], None]]]:
    """Each plug-in's origin (as registrations name it: ``core/registrations.py``) and its ``register``."""
    for name in builtin_declarations():
        yield f"proctor's own declaration {name}", importlib.import_module(name).register
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        yield f"the installed plug-in '{entry.name}' ({entry.value})", entry.load()


def backend_of(spec: str) -> ModelBackend | None:
    """The registered backend of a ``--model`` string (None: an unknown prefix)."""
    return registry().backend_of(spec)


def registry() -> Registry:
    """The registry, built on first use from every plug-in's ``register``."""
    global _REGISTRY
    if _REGISTRY is None:
        with _LOCK:
            if _REGISTRY is None:
                built = Registry()
                for origin, register in _plugin_modules():
                    with loading(origin):
                        register(built)
                _REGISTRY = built
    return _REGISTRY
