"""Importing a use case or metric file with AISteer360's names pointing at proctor's."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

from proctor.core.errors import ProctorError, TaskDefinitionError


def import_user_file(path: Path):
    """Import a use case or metric file with AISteer360's names pointing at proctor's."""
    from proctor.dialects.aisteer.aisteer_names import aisteer360_names

    # A stable module name (not hash(): salted per process): it enters the use case's fingerprint.
    name = f"proctor_usecase_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
    if not path.exists():
        raise TaskDefinitionError("no such file", file=path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskDefinitionError("cannot import this file", file=path)
    if not path.is_file():
        raise TaskDefinitionError("no such Python file", file=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        with aisteer360_names():
            spec.loader.exec_module(module)
    except SyntaxError as exc:  # the user's file: name its line, no traceback
        sys.modules.pop(name, None)
        raise TaskDefinitionError(f"Python syntax error: {exc.msg}", file=path, line=exc.lineno) from None
    except ProctorError:
        sys.modules.pop(name, None)
        raise
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TaskDefinitionError(
            f"running the file failed: {type(exc).__name__}: {exc}", file=path, line=line_in(exc, path)
        ) from None
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def line_in(exc: BaseException, path: Path) -> int | None:
    """The last line of ``path`` in the exception's traceback (where the user's code failed)."""
    import traceback

    target = str(path.resolve())
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == target]
    return lines[-1] if lines else None
