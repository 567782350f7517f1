"""What a ``str.format`` template from a task file may ask for, checked before any row is formatted.

Dialects whose upstream fills prompts with Python's ``str.format`` (SEA-HELM's ``task_template``,
``preamble`` and ``answer_template``) run the same templates unmodified, so the format mini-language
comes with them: ``{text:>2000000000}`` pads every row's text to two billion characters (a hang, then
out of memory), ``{text:.{n}}`` takes a width from the row, and ``{row.__class__.__init__.__globals__}``
reads the interpreter's internals into a prompt. None of that is in any upstream template; each is
refused here, naming the template, instead of being found on the first row.
"""

from __future__ import annotations

import re
import string

from proctor.core.template_bounds import MAX_ITEMS

# [[fill]align][sign][z][#][0][width][grouping][.precision][type]: the two numbers that size the output
_SPEC = re.compile(r"^(?:.?[<>=^])?[+\- ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d*))?[a-zA-Z%]?$")


def format_problem(text: str) -> str | None:
    """Why ``text`` cannot be used as a ``str.format`` template, or None: malformed braces, a nested field
    in a format spec, a width or precision over ``MAX_ITEMS``, or a private attribute (``_``-prefixed)."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:  # "Single '}' encountered", "unmatched '{'"
        return f"is not a valid format template: {exc}"
    for _, name, spec, _ in parts:
        if name is None:
            continue
        if any(step.startswith("_") for step in re.split(r"[.\[\]]", name) if step):
            return f"field '{{{name}}}' reads a private attribute"
        if not spec:
            continue
        if "{" in spec:
            return f"field '{{{name}:{spec}}}' takes its format from another field"
        sized = _SPEC.match(spec)
        if sized is None:
            continue  # a spec str.format itself refuses, on the first row, with its own message
        for part in ("width", "precision"):
            digits = sized.group(part)
            if digits and int(digits) > MAX_ITEMS:
                size = f"{int(digits):,} characters (at most {MAX_ITEMS:,})"
                return f"field '{{{name}:{spec}}}' asks for a {part} of {size}"
    return None
