"""``proctor ls 'lm_eval:…'`` from a saved listing: lm-eval's full index reads ~10,000 YAML files
(and importing ``lm_eval`` pulls in ``datasets`` and ``torch``), seconds each time; the listing it
gives is saved under ``PROCTOR_HOME`` and reused while nothing it was built from has changed.

The listing is valid for one installed lm-eval (its version and catalogue folder, found without
importing it) and one list of ``--lmeval-include`` folders; a fingerprint of every task file's path,
size and modification time in those folders (a walk of stat calls, ~0.1 s for the catalogue) tells
an edited, added or removed file apart, so the saved listing is never stale.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable

from proctor.core.home import proctor_home

Row = tuple[str, str, str]
_TASK_FILES = (".yaml", ".yml", ".py")


def catalogue_folder() -> Path | None:
    """``lm_eval/tasks`` of the installed package, located without importing it (None: not installed)."""
    spec = importlib.util.find_spec("lm_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).resolve() / "tasks"


def _fingerprint(folders: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for folder in folders:
        digest.update(f"\x00{folder}\x00".encode())
        for where, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(_TASK_FILES):
                    stat = os.stat(os.path.join(where, name))
                    digest.update(f"{where}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def cached_listing(include: Iterable[str | Path], build: Callable[[], list[Row]]) -> list[Row]:
    """The catalogue's rows: the saved ones when still valid, else ``build()`` (then saved)."""
    root = catalogue_folder()
    if root is None:
        return build()  # not installed: build() gives the install hint
    folders = [root, *(Path(p).expanduser().resolve() for p in include)]
    version = metadata.version("lm_eval")
    key = hashlib.sha256("\x00".join(map(str, folders)).encode()).hexdigest()[:12]
    file = proctor_home() / f"lm_eval-{version}-listing-{key}.json"
    fingerprint = _fingerprint(folders)
    try:
        saved = json.loads(file.read_text(encoding="utf-8"))
        if saved.get("fingerprint") == fingerprint:
            return [(str(a), str(b), str(c)) for a, b, c in saved["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or unreadable: built again
    rows = build()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"fingerprint": fingerprint, "rows": rows}), encoding="utf-8")
        tmp.replace(file)  # atomic: a concurrent ls reads the old listing or the new one, whole
    except OSError:
        pass  # a read-only home: listed, not saved
    return rows
