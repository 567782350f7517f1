"""Task kinds: how a prepared sample becomes requests, and how responses become outcomes."""

from proctor.tasks.base import Task, kind_handler

__all__ = ["Task", "kind_handler"]
