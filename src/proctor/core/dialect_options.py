"""The options of a run, one validated ``Options`` object per dialect.

The CLI builds it from each dialect's ``parse_options``; the Python API's flat mapping
(``dialect_options={"probsem_temp": 0.5, "trust_task_code": True}``) is split here by the dialects'
field names, once, and validated by the same models. ``trust_task_code`` goes to every dialect.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from pydantic import BaseModel

from proctor.core.dialect import Dialect, OptionError, validate_options
from proctor.core.errors import ProctorError


class DialectOptions(Mapping[str, BaseModel]):
    """Dialect name → its validated ``Options``; a dialect not in it loads with its model's defaults."""

    def __init__(self, by_dialect: Mapping[str, BaseModel] | None = None) -> None:
        self._by_dialect = dict(by_dialect or {})

    def __getitem__(self, name: str) -> BaseModel:
        return self._by_dialect[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_dialect)

    def __len__(self) -> int:
        return len(self._by_dialect)

    def __repr__(self) -> str:
        return f"DialectOptions({self._by_dialect!r})"

    def of(self, dialect: Dialect[Any]) -> Any:
        """``dialect``'s options (its ``Options`` instance; ``Any`` as each dialect reads its own model)."""
        found = self._by_dialect.get(dialect.name)
        return found if found is not None else dialect.Options()

    def replaced(self, name: str, options: BaseModel) -> DialectOptions:
        return DialectOptions({**self._by_dialect, name: options})


def from_mapping(given: Mapping[str, object] | None, dialects: Iterable[Dialect[Any]]) -> DialectOptions:
    """The Python API's flat mapping as each dialect's validated options (a ``DialectOptions`` as it is).

    A key no dialect takes is refused, as is a bad value (naming its flag, as the CLI would)."""
    if isinstance(given, DialectOptions):
        return given
    given = dict(given or {})
    dialects = list(dialects)
    taken: set[str] = set()
    out: dict[str, BaseModel] = {}
    for dialect in dialects:
        fields = dialect.Options.model_fields
        data = {key: value for key, value in given.items() if key in fields}
        taken |= set(data)
        try:
            out[dialect.name] = validate_options(dialect.Options, data)
        except OptionError as exc:
            raise OptionError(exc.flag, f"{exc.flag}: {exc}") from None
    unknown = sorted(set(given) - taken)
    if unknown:
        known = sorted({key for dialect in dialects for key in dialect.Options.model_fields})
        raise ProctorError(
            f"dialect_options: no dialect takes {', '.join(map(repr, unknown))} (the keys: {', '.join(known)})"
        )
    return DialectOptions(out)
