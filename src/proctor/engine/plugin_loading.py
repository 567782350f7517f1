"""``--plugin FILE`` files loaded into a process: the command's own (``cli/options.load_plugins``) and, with the
same files, each Ray replica's (``engine/ray_replica.ModelWorker``), whose process does not inherit what the driver
registered: a plug-in backend named by ``--model`` must load there too."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from proctor.core.registrations import loading_plugin_file, plugin_files
from proctor.core.registry import registry
from proctor.core.user_errors import call_user
from proctor.scoring.metrics import load_metric_file

_REGISTERED: set[str] = set()  # --plugin modules whose register(registry) ran in this process


def load_plugin_files(plugins: Iterable[str | Path]) -> None:
    """Import each file (metrics registered at import) and call its ``register(registry)``, if it has one, as for
    an installed plug-in (docs/extending.md); a raise names its file and line."""
    files = list(plugins)
    built = registry()  # the built-in and installed plug-ins first: a file's names are checked against theirs
    plugin_files(files)  # what this command's files register stands for it (core/registrations.py)
    for plugin in files:
        with loading_plugin_file(plugin):
            module = load_metric_file(str(plugin))
            register = getattr(module, "register", None)
            if callable(register) and module.__name__ not in _REGISTERED:
                _REGISTERED.add(module.__name__)
                call_user(register, "register", built, field="--plugin", file=Path(plugin))
