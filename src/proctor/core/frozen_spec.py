"""The base every part of the native task specification (``core/task_spec.py``) is built on."""

from __future__ import annotations

from typing import Union

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

_NUMBERS = (int, float, int | None, float | None, Union[int, None], Union[float, None])


class FrozenSpec(BaseModel):
    """The base of every part of a task spec: frozen once validated, no key it does not declare, and a number
    field that refuses a YAML boolean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _number_not_bool(cls, value: object, info: ValidationInfo) -> object:
        """``limit: yes`` is YAML's true, which pydantic would take as the number 1: a number field refuses it."""
        if (
            isinstance(value, bool)
            and info.field_name is not None
            and cls.model_fields[info.field_name].annotation in _NUMBERS
        ):
            raise ValueError(f"expects a number, got {str(value).lower()} (YAML reads yes/no/on/off as true/false)")
        return value
