"""lm-eval's options (``--lmeval-data``, ``--lmeval-include``, ``--bootstrap-iters``, ``--metadata``, ...): read by
the declaration (the CLI's flags) and by the dialect's modules.

A leaf that imports only ``core``, so the dialect's modules can import it without importing the declaration
(which names them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, List, Optional

from pydantic import Field, StrictInt, field_validator

from proctor.core.dialect import EVERY_COMMAND, BaseOptions, cli, id_path_mapping


class LmEvalOptions(BaseOptions):
    lmeval_data: Annotated[
        Optional[dict[str, str]],
        cli(
            "--lmeval-data",
            type=Optional[List[str]],
            metavar="ID=PATH",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: ID[:CONFIG[:SPLIT]]=PATH, a local copy of a hub "
            "dataset (repeatable; see docs/lmeval.md).",
        ),
    ] = None
    lmeval_data_file: Annotated[
        Optional[str],
        cli(
            "--lmeval-data-file",
            type=Optional[Path],
            metavar="FILE",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: a YAML/JSON file of ID[:CONFIG[:SPLIT]]: PATH entries.",
        ),
    ] = None
    lmeval_include: Annotated[
        Optional[List[str]],
        cli(
            "--lmeval-include",
            type=Optional[List[Path]],
            metavar="DIR",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: a folder of task YAMLs searched for lm_eval:NAME besides "
            "the installed catalogue (repeatable).",
        ),
    ] = None
    lmeval_bootstrap_iters: Annotated[
        Optional[StrictInt],
        cli(
            "--bootstrap-iters",
            type=Optional[int],
            metavar="N",
            help="lm-eval tasks: bootstrap resamples for the standard errors of corpus metrics "
            "(lm-eval's default 100000; 0: no standard errors).",
        ),
    ] = Field(default=None, ge=0)
    lmeval_metadata: Annotated[
        Optional[dict[str, Any]],
        cli(
            "--metadata",
            type=Optional[str],
            metavar="JSON",
            commands=EVERY_COMMAND,
            help="lm-eval tasks: a JSON object merged into every task's metadata, as lm-eval's --metadata "
            "(e.g. '{\"max_seq_lengths\": [4096]}').",
        ),
    ] = None

    @field_validator("lmeval_bootstrap_iters")
    @classmethod
    def _resamples(cls, value: int | None) -> int | None:
        if value == 1:  # lm-eval's bootstrap divides by the resamples less one: it fails after the model ran
            raise ValueError(
                "a bootstrap standard error needs at least 2 resamples (lm-eval's default is 100000); 0 turns the "
                "corpus metrics' standard errors off"
            )
        return value

    @field_validator("lmeval_data", mode="before")
    @classmethod
    def _data_map(cls, value: object) -> object:
        return id_path_mapping(value, "--lmeval-data", "ID[:CONFIG[:SPLIT]]=PATH")

    @field_validator("lmeval_metadata", mode="before")
    @classmethod
    def _json_object(cls, value: object) -> object:
        """lm-eval's --metadata: a JSON object (its keys reach the task configs' ``metadata``)."""
        if not isinstance(value, str):
            return value
        import json

        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"takes a JSON object, e.g. '{{\"max_seq_lengths\": [4096]}}': {exc}") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"takes a JSON object ({{...}}), got {type(parsed).__name__} {value!r}")
        return parsed

    @field_validator("lmeval_data_file", mode="before")
    @classmethod
    def _file_name(cls, value: object) -> object:
        return str(value) if isinstance(value, Path) else value

    @field_validator("lmeval_include", mode="before")
    @classmethod
    def _folder_names(cls, value: object) -> object:
        return [str(p) for p in value] or None if isinstance(value, (list, tuple)) else value
