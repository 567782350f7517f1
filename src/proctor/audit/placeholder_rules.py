"""A placeholder written in another template language, left in the template's own text: ``{question}`` (Python's
format, SEA-HELM's templates) or ``${question}`` (a shell's, or proctor's path variables) in a Jinja template.
Jinja prints it as it stands, so every prompt shows the braces where the row's text was meant; nothing fails."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from proctor.audit.fallback import first_found
from proctor.audit.shared_placeholders import shared_placeholder
from proctor.audit.source_rows import documents, templates
from proctor.audit.subject import AuditSubject
from proctor.audit.target_rules import parsed_template
from proctor.core.audit import AuditRule, Hit

# {name} not part of Jinja's {{ }} or {% %}, or ${name}
_PLACEHOLDER = re.compile(r"(\$?)(?<!\{)\{([A-Za-z_][A-Za-z0-9_.]*)\}(?!\})")


@lru_cache(maxsize=64)
def _written(source: str) -> tuple[tuple[str, str], ...]:
    """(the placeholder as written, its name) in a template's own text (outside its Jinja tags)."""
    from jinja2 import nodes

    tree = parsed_template(source)
    if tree is None:
        return ()
    found = []
    for data in tree.find_all(nodes.TemplateData):
        found += [(m.group(), m.group(2)) for m in _PLACEHOLDER.finditer(data.data)]
    return tuple(found)


def unfilled_placeholder(subject: AuditSubject) -> Iterator[Hit]:
    prompt, target, key = templates(subject)
    if not subject.samples:
        return
    fields = documents(subject)[0]
    for source, field in ((prompt, "prompt" if subject.templated else "doc_to_text"), (target, key)):
        for written, name in _written(source) if source else ():
            # ${name}: a variable of another language, whatever it names; {name}: one naming the row's field
            if written.startswith("$") or name.split(".")[0] in fields:
                yield subject.at_line(
                    field,
                    f"the template's own text holds {written!r}, a placeholder of another template language: Jinja "
                    f"prints it as it stands, so every {'prompt' if field != key else 'reference'} shows the braces "
                    f"where the row's '{name}' was meant (write {{{{ {name} }}}})",
                    field,
                )
                return


RULES = (
    AuditRule(
        "prompt.unfilled",
        "warning",
        "A template's own text holds a placeholder of another language ({question}, ${question}): Jinja prints it "
        "as it stands, braces and all; or the text every rendered prompt shares (any dialect) holds a placeholder "
        "nobody filled ({topic}, {{ name }}, %(name)s, <passage>, [QUESTION]).",
        first_found(unfilled_placeholder, shared_placeholder),
    ),
)
