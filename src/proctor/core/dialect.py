"""What a dialect plug-in provides: which files it claims, how it loads them, its options.

A dialect turns files of one format into ``Task`` objects (frozen ``TaskSpec`` + origin). Discovery
(``engine/discovery.py``) offers each name, path and YAML document to the registered dialects in
``order``; the first that claims it loads it. Options a dialect takes on the command line are
declared as ``CliOption``s (the CLI adds them to its commands) and read into the flat options
mapping every dialect's ``load`` receives; ``parse_options`` turns the raw command-line values into
that mapping, validated by the dialect's typed ``Options`` model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from proctor.core.errors import ProctorError

if TYPE_CHECKING:
    from proctor.core.task import Task


class OptionError(ProctorError):
    """A bad value of a command-line option; the CLI shows it as a usage error naming ``flag``."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class CliOption:
    """One command-line option a dialect adds to ``proctor run`` (and ``ls`` / ``validate``)."""

    name: str  # the keyword the CLI passes to ``parse_options`` (a Python identifier)
    flags: tuple[str, ...]  # e.g. ("--norm", "--probsem-norm"), or ("--base-model/--instruct-model",)
    annotation: Any  # the type typer parses: bool, float, int, str, Path, Optional[List[str]], ...
    default: Any
    help: str
    commands: frozenset[str] = frozenset({"run"})
    minimum: float | None = None
    metavar: str | None = None  # how --help names the value (e.g. "N", "ID=PATH"); default: its type


@dataclass(frozen=True)
class OptionContext:
    """What option parsing may need to know of the rest of the command line."""

    model: str = "smollm2"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    command: str = "run"


class NoOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Dialect:
    """Base class of dialect plug-ins; a subclass overrides what its format needs."""

    name: ClassVar[str] = ""
    order: ClassVar[int] = 100  # lower is offered a file first
    description: ClassVar[str] = ""  # for "no dialect recognises it" messages: what its files need
    title: ClassVar[str] = ""  # how --help names its panel of options ("<title> tasks"; default: name)
    Options: ClassVar[type[BaseModel]] = NoOptions  # the typed options this dialect reads
    cli_options: ClassVar[tuple[CliOption, ...]] = ()
    # run-time overrides (--num-fewshot, ...): the engine's default rules, unless the dialect says
    fixed_prompts: ClassVar[bool] = False  # prompt files are scored as written (no few-shot, system prompt)
    engine_epochs: ClassVar[bool] = True  # --epochs repeats samples in the engine (False: the dialect repeats runs itself, or never)
    single_part_breakdowns: ClassVar[bool] = False  # the CLI prints a breakdown with one part (GLM reports each file)

    # -- finding files
    def claims_name(self, given: str) -> bool:
        """A name that is not a path (e.g. ``lm_eval:arc_easy``)."""
        return False

    def load_named(self, given: str, options: Mapping[str, Any]) -> list["Task"]:
        raise NotImplementedError

    def files_in_folder(self, folder: Path) -> list[Path]:
        """Files besides YAML that this dialect reads in a folder (e.g. probsem's .txt/.json)."""
        return []

    def claims_path(self, path: Path) -> bool:
        """Claimed by its path alone, before any YAML is read."""
        return False

    def claims_document(self, document: Any, path: Path) -> bool:
        """Claimed by the content of a YAML document."""
        return False

    def load(self, path: Path, document: Any, explicit: bool, options: Mapping[str, Any], notes: list[str]) -> list["Task"]:
        """Tasks of a claimed file (``document`` is None when claimed by path). ``notes`` receives why
        tasks of the file were left out (shown when no task at all is found)."""
        raise NotImplementedError

    def options_for(self, options: Mapping[str, Any], given: Path) -> Mapping[str, Any]:
        """The options files found under ``given`` (a path the user named) are loaded with."""
        return options

    def uses_server_options(self, raw: Mapping[str, Any]) -> bool:
        """Whether this dialect's command-line values use --base-url / --api-key-env (e.g. an openai: judge)."""
        return False

    def catalogue_rows(self, given: list[str], options: Mapping[str, Any]) -> list[tuple[str, ...]] | None:
        """``proctor ls`` of names rather than files (a catalogue); None when none of ``given`` asks for one."""
        return None

    # -- options
    def parse_options(self, raw: Mapping[str, Any], context: OptionContext) -> dict[str, Any]:
        """Command-line values (by ``CliOption.name``) → entries of the options mapping.

        The default keeps values that differ from their defaults, under the option's name, checked by
        ``Options``. An ``OptionError`` names the flag."""
        out = {o.name: raw[o.name] for o in self.cli_options if o.name in raw and raw[o.name] != o.default}
        self.Options.model_validate(out)
        return out

    def unused_options(self, options: Mapping[str, Any]) -> list[tuple[str, Any]]:
        """(flag, value) of this dialect's options that are set; used when none of its tasks is selected."""
        fields = getattr(self.Options, "model_fields", {})
        flags = {o.name: o.flags[0] for o in self.cli_options}
        out = []
        for key, info in fields.items():
            value = options.get(key)
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            flag = extra.get("flag") or flags.get(key) or key  # the flag the user typed, where known
            if value is not None and value != info.default and value not in ({}, (), []):
                out.append((flag, value))
        return out

    def apply_overrides(self, task: "Task", overrides: Any, chat: bool | None) -> "tuple[Task, set[str]] | None":
        """The task with run-time overrides applied, or None for the engine's default rules."""
        return None
