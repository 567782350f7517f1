"""Which files and names are lm-eval's, read without importing the dialect: ``lm_eval:NAME``, and YAML files with a
``task`` or ``group`` key (``!function`` tags read as text, no code runs).

A leaf that imports only ``core``: the declaration asks it on every run; ``loader`` uses it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PREFIX = "lm_eval:"


def peek(path: Path) -> Any:
    """The YAML document with ``!function`` tags read as text (no code runs), or None."""
    import yaml

    from proctor.core.yaml_bounds import AliasBound

    class Loader(AliasBound, yaml.SafeLoader):  # an alias bomb: None here, and discovery's reader says so
        pass

    def function_tag(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
        return f"!function {loader.construct_scalar(node)}"

    Loader.add_constructor("!function", function_tag)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - SafeLoader subclass
    except (yaml.YAMLError, OSError, UnicodeDecodeError, RecursionError):  # not its file: the owner's reader says why
        return None


def looks_like(document: Any) -> bool:
    """lm-eval's task and group files: ``task`` or ``group`` (native files use ``kind`` / ``tasks``,
    GLM-130B files ``name`` + ``type``)."""
    if not isinstance(document, dict) or "kind" in document or "tasks" in document:
        return False
    if "name" in document and "type" in document:
        return False
    return "task" in document or "group" in document


def claims_path(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml") and looks_like(peek(path))


def claims_name(text: str) -> bool:
    return str(text).startswith(PREFIX)


def is_catalogue_query(text: str) -> bool:
    """``lm_eval:`` alone or with a glob (``lm_eval:mmlu*``): list the catalogue, load nothing."""
    return claims_name(text) and (text == PREFIX or any(c in text[len(PREFIX) :] for c in "*?["))
