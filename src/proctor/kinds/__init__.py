"""Task kinds: how a prepared sample becomes requests, and how responses become outcomes."""

from proctor.core.task import Task

from proctor.kinds.base import kind_handler

__all__ = ["Task", "kind_handler"]
