"""Who registered a name: a name already taken is refused, naming both origins, instead of silently replaced.

A metric, a model backend, an exporter or an audit rule is registered by name. Registered again from somewhere
else, the later one used to win without a word: a ``--plugin`` file defining ``exact_match`` replaced the built-in
metric (a different number under a known name), two plug-in files defining one metric kept the last, a backend
named ``openai`` ran instead of the OpenAI client. Each registration now records its origin: the ``--plugin`` file
being loaded, the built-in declaration or installed entry point being registered, else the module that defines
what is registered. A second registration of a name is refused when the first came from another origin that still
stands: built into proctor, an installed plug-in, the caller's own code, or another ``--plugin`` file of the same
command. A name registered by a ``--plugin`` file of an earlier command in the same process (a test suite, a
notebook) may be registered again: that command's plug-ins are not this one's.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from proctor.core.errors import ProctorError


@dataclass(frozen=True)
class Origin:
    """Where a registration came from: ``shown`` for messages; ``key`` tells two origins apart (a file's path, a
    module's name); ``plugin_file`` when it is a ``--plugin`` file (which a later command may replace)."""

    shown: str
    key: str
    plugin_file: bool = False


_LOADING: list[Origin] = []  # the origins being loaded, innermost last (a plug-in's import may register built-ins)
_COMMAND_FILES: set[str] = set()  # the --plugin files of the command now running (their paths)


def plugin_files(files: Iterable[str | Path]) -> None:
    """The ``--plugin`` files of the command starting now: a name one of them registered stands for this command."""
    _COMMAND_FILES.clear()
    _COMMAND_FILES.update(str(Path(f).expanduser().resolve()) for f in files)


def command_plugin_files() -> list[str]:
    """The ``--plugin`` files of the command now running (resolved paths), for the processes it starts."""
    return sorted(_COMMAND_FILES)


@contextlib.contextmanager
def loading(shown: str, key: str | None = None, *, plugin_file: bool = False) -> Iterator[None]:
    """What is registered meanwhile comes from ``shown`` (a plug-in file, a declaration, an entry point)."""
    _LOADING.append(Origin(shown, key or shown, plugin_file))
    try:
        yield
    finally:
        _LOADING.pop()


@contextlib.contextmanager
def loading_plugin_file(file: str | Path) -> Iterator[None]:
    path = str(Path(file).expanduser().resolve())
    with loading(path, path, plugin_file=True):
        yield


def defined_in(obj: object) -> str | None:
    """The file that defines ``obj`` (a function, a class, a bound method, a partial, an instance's class)."""
    target = getattr(obj, "func", obj)  # functools.partial
    target = getattr(target, "__func__", target)  # a bound method
    if not (inspect.isfunction(target) or inspect.isclass(target)):
        target = type(target)
    code = getattr(target, "__code__", None)
    if code is not None:
        return str(code.co_filename)
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    file = getattr(module, "__file__", None)
    return str(file) if file else None


def origin_of(obj: object) -> Origin:
    """The origin of a registration of ``obj`` made now: the plug-in file, declaration or entry point being loaded,
    else the module that defines ``obj`` (told apart by module, so a notebook cell run again is one origin)."""
    if _LOADING:
        return _LOADING[-1]
    target = getattr(obj, "func", obj)
    target = getattr(target, "__func__", target)
    module = getattr(target, "__module__", None) or type(target).__module__
    return Origin(defined_in(obj) or module, module)


def stands(old: Origin) -> bool:
    """Whether an earlier registration still holds its name: all but a ``--plugin`` file of an earlier command."""
    return not old.plugin_file or old.key in _COMMAND_FILES


class DuplicateRegistration(ProctorError):
    """A name registered twice, from two origins: both are named."""

    def __init__(self, what: str, name: str, old: Origin, new: Origin, hint: str = "") -> None:
        self.what, self.name, self.old, self.new = what, name, old, new
        super().__init__(
            f"{new.shown} registers the {what} '{name}', which {old.shown} already registered: a name means one "
            f"thing in a run, so the second is refused rather than silently replacing the first "
            f"({hint or 'give it another name'})"
        )


def claim(origins: dict[str, Origin], what: str, name: str, new: Origin, hint: str = "") -> None:
    """Record that ``new`` registers ``name`` in a table whose origins are ``origins``; refuse it (naming both)
    when another origin that still stands has it."""
    old = origins.get(name)
    if old is not None and old.key != new.key and stands(old):
        raise DuplicateRegistration(what, name, old, new, hint)
    origins[name] = new
