"""Jinja2 templates compiled once per task, rendered per sample with strict undefined checks.

Templates come from task files, so they render in Jinja's immutable sandbox: a template reads the
row's fields and calls filters, but cannot reach Python internals (``''.__class__.__mro__``) or
change the row's values; trying is an error naming the task file and the template's field.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice
from typing import Any, Iterator, Mapping, NoReturn, TypeVar, cast

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.nativetypes import NativeCodeGenerator, NativeEnvironment, NativeTemplate, native_concat
from jinja2.runtime import Context
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment

from proctor.core import template_bounds as bounds
from proctor.core.errors import TaskDefinitionError


def _raw_concat(values: Iterator[object]) -> object:
    """A single expression keeps its Python value; anything else is text.

    Jinja's own native mode runs ``literal_eval`` on text, which would turn a question such as
    "1984" into an int or "True" into a bool: data must never change type behind the user's back.
    """
    head = list(islice(values, 2))
    if not head:
        return None
    if len(head) == 1:
        return head[0]
    return bounds.bounded_join(str(v) for v in (*head, *values))


class _RawNativeTemplate(NativeTemplate):
    def render(self, *args: Any, **kwargs: Any) -> Any:  # jinja's NativeTemplate.render: any value
        context = self.new_context(dict(*args, **kwargs))
        try:
            return _raw_concat(self.root_render_func(context))
        except Exception:
            return self.environment.handle_exception()


class _RawNativeCodeGenerator(NativeCodeGenerator):
    """Jinja folds a constant expression into the template's text at compile time (``{{ [] }}`` becomes the
    text "[]", ``{{ false }}`` the text "False", which is true): only literal text is folded here, so a constant
    expression keeps its Python value as any other does."""

    def _output_child_to_const(self, node: nodes.Expr, frame: Frame, finalize: CodeGenerator._FinalizeInfo) -> str:
        if not isinstance(node, nodes.TemplateData):
            raise nodes.Impossible()
        text: str = super()._output_child_to_const(node, frame, finalize)
        return text


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox with the bounds of ``core/template_bounds.py``: loops counted, ``*``, ``**`` and
    ``~`` sized, the rendered text joined up to a size. A render starts with ``bounds.start_render()``; going
    past a bound raises ``bounds.TemplateBound``. (The lm-eval dialect renders lm-eval's templates in one.)"""

    intercepted_binops = frozenset({"*", "**"})
    concat = staticmethod(bounds.bounded_join)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filters[bounds.COUNTED] = bounds.counted
        self.filters[bounds.SIZED] = bounds.sized

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        return bounds.bound_loops(super()._parse(source, name, filename))

    def call_binop(self, context: Context, operator: str, left: object, right: object) -> object:
        bounds.checked_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)


class _RawNativeEnvironment(BoundedSandbox, NativeEnvironment):
    template_class = _RawNativeTemplate
    code_generator_class = _RawNativeCodeGenerator
    # macros and {% set %} blocks join their parts as native templates always have (the render's own result
    # is joined by _raw_concat, with the size bound)
    concat = staticmethod(native_concat)  # type: ignore[assignment, arg-type]  # native: any value, as Jinja has it


def _regex_replace(value: str, pattern: str, replacement: str = "") -> str:
    return bounds.bounded_sub(pattern, replacement, str(value))


_NO_DEFAULT = object()
T = TypeVar("T")  # a value printed as it came


def _strict_int(value: object, default: object = _NO_DEFAULT, base: int = 10) -> object:
    """Jinja's ``int`` filter, except that text that is no number is an error, not a silent 0."""
    try:
        if isinstance(value, str):
            try:
                return int(value, base)
            except ValueError:
                return int(float(value))
        return int(value)  # type: ignore[call-overload]  # any value: int() refusing it is the error below
    except (TypeError, ValueError, OverflowError):
        if default is not _NO_DEFAULT:
            return default
        raise ValueError(f"int: {value!r:.60} is not a number (give a default, e.g. int(-1), to allow that)") from None


def _strict_float(value: object, default: object = _NO_DEFAULT) -> object:
    try:
        return float(value)  # type: ignore[arg-type]  # any value: float() refusing it is the error below
    except (TypeError, ValueError):
        if default is not _NO_DEFAULT:
            return default
        raise ValueError(
            f"float: {value!r:.60} is not a number (give a default, e.g. float(0), to allow that)"
        ) from None


class RowProblem(Exception):
    """Raised by ``_fail(message[, value])`` in a template: the row does not fit the task's format."""


def _fail(message: object, value: object = _NO_DEFAULT) -> NoReturn:
    """``{{ x if x is string else _fail("'x' must be a text", x) }}``: a template's own check of a row, reported
    as an error naming the row's file, the row and the template's field (a dialect states its format so)."""
    got = "" if value is _NO_DEFAULT else f", got {type(value).__name__}: {value!r:.60}"
    raise RowProblem(f"{message}{got}")


_NULL = (
    "prints a null value (a field that is null in this row?), which would show as the text 'None'; "
    "fix the row, or give a default: {{ x if x is not none else '' }}"
)


def _no_null(value: T) -> T:
    """Each value a text template prints: a null is refused, never the text 'None' in a prompt."""
    if value is None:
        raise RowProblem(_NULL)
    return value


_ENV = BoundedSandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False, finalize=_no_null)
_NATIVE_ENV = _RawNativeEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
for _env in (_ENV, _NATIVE_ENV):
    _env.filters["regex_replace"] = _regex_replace
    _env.filters["int"] = _strict_int
    _env.filters["float"] = _strict_float
    _env.globals["_fail"] = _fail


@lru_cache(maxsize=4096)
def _compile(source: str, native: bool) -> jinja2.Template:
    return (_NATIVE_ENV if native else _ENV).from_string(source)


_SINGLE_NAME = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")


class _Compiled:
    native = False

    def __init__(self, source: str, *, origin: str | None, field: str, line: int | None = None) -> None:
        self.source = source
        self.origin = origin
        self.field = field
        self.line = line
        # "{{ name }}" is a plain lookup: skip Jinja's per-render context (the hot path).
        match = _SINGLE_NAME.match(source)
        self._name = match.group(1) if match else None
        self._loops = "for" in source  # a loop may be written here: its renders count their steps from zero
        try:
            self._template = _compile(source, self.native)
        except jinja2.TemplateSyntaxError as exc:
            raise TaskDefinitionError(
                f"template syntax error (template line {exc.lineno}): {exc.message}",
                file=origin,
                line=line,
                field=field,
            ) from None

    @property
    def plain_name(self) -> str | None:
        """The field a "{{ name }}" template only looks up (None for any other template)."""
        return self._name

    def _render(self, fields: Mapping[str, object], *, file: str | None, row: int | None) -> object:
        if self._name is not None and self._name in fields:
            value = fields[self._name]
            if value is None and not self.native:
                raise TaskDefinitionError(f"the template '{self.field}' {_NULL}", file=file, row=row, field=self.field)
            return value if self.native else str(value)
        try:
            if self._loops:
                bounds.start_render()
            value = self._template.render(fields)
            if isinstance(value, jinja2.Undefined):  # a native "{{ name }}" of a missing name gives it back as is
                str(value)  # StrictUndefined raises the UndefinedError reported below
            return value
        except bounds.TemplateBound as exc:  # the template's doing, whatever the row: named as such
            raise self._runaway(str(exc), file, row) from None
        except RecursionError:
            raise self._runaway("calls itself too deeply (a macro or recursive loop without end?)", file, row) from None
        except MemoryError:
            raise self._runaway("ran out of memory", file, row) from None
        except OverflowError as exc:
            if not str(exc).startswith("Range too big"):  # the sandbox's bound on range(): the template's doing
                raise self._failed(exc, file, row) from None
            raise self._runaway(
                f"asks for a range of more than {MAX_RANGE:,} numbers (the sandbox's bound)", file, row
            ) from None
        except SecurityError as exc:  # the template's own doing, whatever the row: name where it is written
            raise TaskDefinitionError(
                f"the template '{self.field}' reaches outside its sandbox ({str(exc).rstrip('.')}; first seen on "
                f"{file or 'a row'}{f', row {row}' if row is not None else ''}): templates may read fields and "
                "call filters, not Python internals",
                file=self.origin,
                line=self.line,
                field=self.field,
            ) from None
        except RowProblem as exc:
            message = f"the template '{self.field}' {exc}" if str(exc) == _NULL else str(exc)
            raise TaskDefinitionError(message, file=file, row=row, field=self.field) from None
        except jinja2.UndefinedError as exc:
            raise TaskDefinitionError(
                f"the template '{self.field}' uses a field this row does not have ({exc.message}); "
                f"available fields: {', '.join(sorted(k for k in fields if not k.startswith('_')))}",
                file=file,
                row=row,
                field=self.field,
            ) from None
        except Exception as exc:  # errors raised inside template expressions
            raise self._failed(exc, file, row, fields) from None

    def _failed(
        self, exc: Exception, file: str | None, row: int | None, fields: Mapping[str, object] | None = None
    ) -> TaskDefinitionError:
        return TaskDefinitionError(
            f"rendering the template '{self.field}' failed: {type(exc).__name__}: {exc}{_header_hint(fields)}",
            file=file,
            row=row,
            field=self.field,
        )

    def _runaway(self, what: str, file: str | None, row: int | None) -> TaskDefinitionError:
        """A render past its bounds (``core/template_bounds.py``): the template's error, not the row's."""
        return TaskDefinitionError(
            f"the template '{self.field}' stopped: it {what} (first seen on {file or 'a row'}"
            f"{f', row {row}' if row is not None else ''}); a template must not loop or grow without bound",
            file=self.origin,
            line=self.line,
            field=self.field,
        )


def _header_hint(fields: Mapping[str, object] | None) -> str:
    """Where the row holds its own column names (a header line in the middle of the file: two CSVs joined), the
    reason the template failed on it."""
    named = {k: v for k, v in (fields or {}).items() if not k.startswith("_")}
    if len(named) >= 2 and sum(str(v).strip() == k for k, v in named.items()) >= max(2, len(named) // 2 + 1):
        return (
            "; this row holds the column names themselves (a header line in the middle of the file: files "
            "joined end to end?), drop it"
        )
    return ""


class Template(_Compiled):
    """A text template."""

    def render(self, fields: Mapping[str, object], *, file: str | None = None, row: int | None = None) -> str:
        text = cast(str, self._render(fields, file=file, row=row))  # a text template renders text
        return text


class Expression(_Compiled):
    """A template evaluated to a native Python value (list, int, str...)."""

    native = True

    def evaluate(
        self, fields: Mapping[str, object], *, file: str | None = None, row_number: int | None = None
    ) -> object:
        return self._render(fields, file=file, row=row_number)


def compile_template(source: str, *, origin: str | None, field: str, line: int | None = None) -> Template:
    return Template(source, origin=origin, field=field, line=line)


def compile_expression(source: str, *, origin: str | None, field: str, line: int | None = None) -> Expression:
    return Expression(source, origin=origin, field=field, line=line)
