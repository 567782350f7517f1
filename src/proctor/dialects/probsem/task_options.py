"""The options of a probsem suite's task, as its handler receives them: ``ProbsemSuiteOptions`` (probsem's own
format, ``suite.ProbsemSuiteTask``) and ``CogSci2023Options`` (the CogSci2023 branch's, ``cogsci.CogSci2023Task``).

The suite's own parts, which the handler joins into each context's texts as probsem does (the task has no
templates): they enter the task's spec, hence its content hash.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CogSci2023Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str  # the prompt file's text
    premise: str  # starts with ';;' (";;" alone: none)
    query: str  # starts with ';;' (";;" alone: none)
    programs: tuple[str, ...] = Field(min_length=1)  # the choices, each written "(...)"


class ProbsemSuiteOptions(BaseModel):
    """A suite of probsem's own format, as its handler (``suite.ProbsemSuiteTask``) receives it: each context's
    prompt is ``prompt``, a newline, the non-empty ones of ``pretext``, the context's text and ``posttext`` joined
    by newlines, and a newline; the queries are its choices."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str  # the prompt file's text
    pretext: str  # "" for none
    posttext: str  # "" for none
    queries: tuple[str, ...] = Field(min_length=1)  # the choices, scored as written
