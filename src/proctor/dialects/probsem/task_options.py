"""The options of a CogSci2023-format suite's task, as its handler (``cogsci.CogSci2023Task``) receives them.

The suite's own parts, which the handler joins into each context's texts as that branch does (the task has no
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
