"""Jinja2 templates compiled once per task, rendered per sample with strict undefined checks."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

import jinja2
from jinja2.nativetypes import NativeEnvironment

from proctor.errors import TaskDefinitionError

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
_NATIVE_ENV = NativeEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


@lru_cache(maxsize=4096)
def _compile(source: str, native: bool) -> jinja2.Template:
    return (_NATIVE_ENV if native else _ENV).from_string(source)


class _Compiled:
    native = False

    def __init__(self, source: str, *, origin: str | None, field: str, line: int | None = None) -> None:
        self.source = source
        self.origin = origin
        self.field = field
        self.line = line
        try:
            self._template = _compile(source, self.native)
        except jinja2.TemplateSyntaxError as exc:
            raise TaskDefinitionError(
                f"template syntax error (template line {exc.lineno}): {exc.message}",
                file=origin,
                line=line,
                field=field,
            ) from None

    def _render(self, fields: Mapping[str, Any], *, file: str | None, row: int | None) -> Any:
        try:
            return self._template.render(fields)
        except jinja2.UndefinedError as exc:
            raise TaskDefinitionError(
                f"the template '{self.field}' uses a field this row does not have ({exc.message}); "
                f"available fields: {', '.join(sorted(k for k in fields if not k.startswith('_')))}",
                file=file,
                row=row,
                field=self.field,
            ) from None
        except Exception as exc:  # errors raised inside template expressions
            raise TaskDefinitionError(
                f"rendering the template '{self.field}' failed: {type(exc).__name__}: {exc}",
                file=file,
                row=row,
                field=self.field,
            ) from None


class Template(_Compiled):
    """A text template."""

    def render(self, fields: Mapping[str, Any], *, file: str | None = None, row: int | None = None) -> str:
        return self._render(fields, file=file, row=row)


class Expression(_Compiled):
    """A template evaluated to a native Python value (list, int, str...)."""

    native = True

    def evaluate(self, fields: Mapping[str, Any], *, file: str | None = None, row_number: int | None = None) -> Any:
        return self._render(fields, file=file, row=row_number)


def compile_template(source: str, *, origin: str | None, field: str, line: int | None = None) -> Template:
    return Template(source, origin=origin, field=field, line=line)


def compile_expression(source: str, *, origin: str | None, field: str, line: int | None = None) -> Expression:
    return Expression(source, origin=origin, field=field, line=line)
