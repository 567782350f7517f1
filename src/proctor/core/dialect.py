"""What a dialect plug-in provides: which files it claims, how it loads them, its options.

A dialect turns files of one format into ``Task`` objects (frozen ``TaskSpec`` + origin). Discovery
(``engine/discovery.py``) offers each name, path and YAML document to the registered dialects in
``order``; the first that claims it loads it. A dialect's options are the fields of its typed
``Options`` model (a pydantic model), each declared once: a field the command line gives carries
``cli(...)`` metadata (flags, help, commands), from which ``cli_options`` derives the ``CliOption``s the
CLI adds to its commands. ``parse_options`` turns the command-line values into a validated ``Options``
instance; ``proctor.core.dialect_options`` turns the Python API's flat mapping into the same objects.
Each dialect's ``load`` receives its own instance and reads its attributes.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, Mapping, TypeVar

from annotated_types import Ge
from pydantic import BaseModel, ConfigDict, ValidationError

from proctor.core.errors import ProctorError

if TYPE_CHECKING:
    from proctor.core.run_overrides import RunOverrides
    from proctor.core.task import Task

RUN = frozenset({"run"})
EVERY_COMMAND = frozenset({"run", "ls", "validate"})


class OptionError(ProctorError):
    """A bad value of a command-line option; the CLI shows it as a usage error naming ``flag``."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


@dataclass(frozen=True)
class CliOption:
    """One command-line option a dialect adds to ``proctor run`` (and ``ls`` / ``validate``); derived
    from the ``cli(...)`` metadata of its ``Options`` model."""

    name: str  # the keyword the CLI passes to ``parse_options`` (a Python identifier)
    flags: tuple[str, ...]  # e.g. ("--norm", "--probsem-norm")
    annotation: object  # the type typer parses: bool, float, int, str, Path, Optional[List[str]], ...
    default: object
    help: str
    commands: frozenset[str] = RUN
    minimum: float | None = None
    metavar: str | None = None  # how --help names the value (e.g. "N", "ID=PATH"); default: its type


_FIELD_DEFAULT: object = object()  # cli(default=...) not given: the field's own default


@dataclass(frozen=True)
class Cli:
    """How the command line gives a field of a dialect's ``Options`` (metadata in ``Annotated[...]``).

    ``name`` and ``type`` differ from the field's where the command line gives the field in another
    shape (``ID=PATH`` strings for a dict, two flags for one value); the model's validators convert."""

    flags: tuple[str, ...]
    help: str
    commands: frozenset[str]
    metavar: str | None
    type: object  # None: the field's annotation
    name: str | None  # None: the field's name
    default: object
    minimum: float | None  # None: the field's ``ge`` constraint, where the flag gives the field itself


def cli(
    *flags: str,
    help: str,
    commands: frozenset[str] = RUN,
    metavar: str | None = None,
    type: object = None,
    name: str | None = None,
    default: object = _FIELD_DEFAULT,
    minimum: float | None = None,
) -> Cli:
    """The command-line declaration of an ``Options`` field: ``x: Annotated[int, cli("--x", help=...)] = 1``."""
    return Cli(tuple(flags), help, commands, metavar, type, name, default, minimum)


def _cli_of(model: type[BaseModel]) -> list[tuple[str, Cli]]:
    """(field name, its ``cli(...)``) of every command-line option of ``model``, in field order."""
    return [(key, meta) for key, info in model.model_fields.items() for meta in info.metadata if isinstance(meta, Cli)]


@functools.cache
def cli_options_of(model: type[BaseModel]) -> tuple[CliOption, ...]:
    """The ``CliOption``s the CLI adds for ``model``'s fields."""
    out = []
    for key, meta in _cli_of(model):
        info = model.model_fields[key]
        minimum = meta.minimum
        if minimum is None and meta.name is None:
            minimum = next((m.ge for m in info.metadata if isinstance(m, Ge) and isinstance(m.ge, (int, float))), None)
        default = info.default if meta.default is _FIELD_DEFAULT else meta.default
        annotation = info.annotation if meta.type is None else meta.type
        out.append(
            CliOption(
                meta.name or key, meta.flags, annotation, default, meta.help, meta.commands, minimum, meta.metavar
            )
        )
    return tuple(out)


def flag_of(model: type[BaseModel], key: str) -> str:
    """How messages name an option: its flags (``--base-model/--instruct-model`` for a field given by
    two), else the key itself (an option of the Python API only)."""
    flags = [meta.flags[0] for field, meta in _cli_of(model) if key in (field, meta.name)]
    return "/".join(flags) or key


def id_path_mapping(value: object, flag: str, form: str, *, must_exist: bool = False) -> object:
    """A repeatable ``FLAG ID=PATH`` option as the mapping a dialect keeps (a field validator's body): the
    command line's strings parsed, a mapping's keys and paths as text, no entries as None."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if not isinstance(value, (list, tuple)):
        return value
    mapping = {}
    for item in value:
        key, sep, path = str(item).partition("=")
        if not sep or not key or not path:
            raise OptionError(flag, f"{flag} takes {form}, got '{item}'")
        if must_exist and not Path(path).expanduser().exists():
            raise OptionError(flag, f"{key}={path}: no such file or folder {path}")
        mapping[key] = path
    return mapping or None


def validate_options(
    model: type[BaseModel], data: Mapping[str, object], context: OptionContext | None = None
) -> BaseModel:
    """``model`` validated from ``data``; a bad value is an ``OptionError`` naming its flag."""
    try:
        return model.model_validate(dict(data), context=context)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else ""
        cause = (error.get("ctx") or {}).get("error")
        raise OptionError(flag_of(model, key), str(cause) if cause is not None else error["msg"]) from None


@dataclass(frozen=True)
class OptionContext:
    """What option parsing may need to know of the rest of the command line."""

    model: str = "smollm2"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    command: str = "run"
    trust_task_code: bool = False
    roles: Mapping[str, str] = dataclasses.field(
        default_factory=dict
    )  # --model-role: role -> model (api/model_roles.py)


class BaseOptions(BaseModel):
    """What every dialect's options hold (a dialect's ``Options`` model subclasses it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trust_task_code: bool = False  # --trust-task-code: run the Python code task files name (docs/trust.md)


NoOptions = BaseOptions  # a dialect with no options of its own
OptionsT = TypeVar("OptionsT", bound=BaseModel)  # a dialect's ``Options``, as its methods receive it


class Dialect(Generic[OptionsT]):
    """Base class of dialect plug-ins; a subclass overrides what its format needs."""

    name: ClassVar[str] = ""
    # ids earlier proctor versions recorded for this dialect (results.json's ``dialect``): old run folders
    # are read under them
    former_names: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int] = 100  # lower is offered a file first
    description: ClassVar[str] = ""  # for "no dialect recognises it" messages: what its files need
    title: ClassVar[str] = ""  # how --help names its panel of options ("<title> tasks"; default: name)
    Options: ClassVar[type[BaseModel]] = BaseOptions  # the typed options this dialect reads
    # run-time overrides (--num-fewshot, ...): the engine's default rules, unless the dialect says
    fixed_prompts: ClassVar[bool] = False  # prompt files are scored as written (no few-shot, system prompt)
    engine_epochs: ClassVar[bool] = (
        True  # --epochs repeats samples in the engine (False: the dialect repeats runs itself, or never)
    )
    single_part_breakdowns: ClassVar[bool] = False  # the CLI prints a breakdown with one part (GLM reports each file)
    # the native format's rules for rendered rows (errors naming the row): a generate task's blank prompt, a multiple
    # choice task's blank on some rows only (all blank is a BLiMP-style task), a row with a single choice
    strict_rows: ClassVar[bool] = False

    # -- finding files
    def claims_name(self, given: str) -> bool:
        """A name that is not a path (e.g. ``lm_eval:arc_easy``)."""
        return False

    def load_named(self, given: str, options: OptionsT) -> list["Task"]:
        raise NotImplementedError

    def files_in_folder(self, folder: Path) -> list[Path]:
        """Files besides YAML that this dialect reads in a folder (e.g. probsem's .txt/.json)."""
        return []

    def claims_path(self, path: Path) -> bool:
        """Claimed by its path alone, before any YAML is read."""
        return False

    def claims_document(self, document: object, path: Path) -> bool:
        """Claimed by the content of a YAML document."""
        return False

    def load(self, path: Path, document: object, explicit: bool, options: OptionsT, notes: list[str]) -> list["Task"]:
        """Tasks of a claimed file (``document`` is None when claimed by path), loaded with ``options`` (an
        instance of this dialect's ``Options``). ``notes`` receives why tasks of the file were left out
        (shown when no task at all is found)."""
        raise NotImplementedError

    def options_for(self, options: OptionsT, given: Path) -> OptionsT:
        """The options files found under ``given`` (a path the user named) are loaded with."""
        return options

    def uses_server_options(self, raw: Mapping[str, object]) -> bool:
        """Whether this dialect's command-line values use --base-url / --api-key-env (e.g. an openai: judge)."""
        return False

    def catalogue_rows(self, given: list[str], options: OptionsT) -> list[tuple[str, ...]] | None:
        """``proctor ls`` of names rather than files (a catalogue); None when none of ``given`` asks for one."""
        return None

    # -- options
    @property
    def cli_options(self) -> tuple[CliOption, ...]:
        """The command-line options of this dialect, derived from the ``cli(...)`` fields of ``Options``."""
        return cli_options_of(self.Options)

    def parse_options(self, raw: Mapping[str, object], context: OptionContext) -> BaseModel:
        """Command-line values (by ``CliOption.name``) → this dialect's validated ``Options``.

        Values left at their defaults are not passed, so the model's defaults hold; the model's
        validators convert the command line's shapes. An ``OptionError`` names the flag."""
        given = {
            o.name: raw[o.name] for o in self.cli_options if o.name in raw and not _left_out(raw[o.name], o.default)
        }
        if "trust_task_code" in self.Options.model_fields:
            given["trust_task_code"] = context.trust_task_code
        return validate_options(self.Options, given, context)

    def unused_options(self, options: OptionsT) -> list[tuple[str, object]]:
        """(flag, value) of this dialect's command-line options that are set; used when none of its tasks is
        selected."""
        fields = type(options).model_fields
        out = []
        for key in dict.fromkeys(field for field, _ in _cli_of(type(options))):
            value, default = getattr(options, key), fields[key].default
            if value is not None and value != default and value not in ({}, (), []):
                out.append((flag_of(type(options), key), value))
        return out

    def apply_overrides(
        self, task: "Task", overrides: "RunOverrides", chat: bool | None
    ) -> "tuple[Task, set[str]] | None":
        """The task with run-time overrides applied, or None for the engine's default rules."""
        return None


def _left_out(value: object, default: object) -> bool:
    """A command-line value that was not given (typer passes an empty list for a repeatable option)."""
    return value == default or (default is None and value in ((), []))
