"""Dialect adapters turn task files of each supported format into the same ``Task`` objects."""

from proctor.engine.discovery import collect_tasks, find_task_files

__all__ = ["collect_tasks", "find_task_files"]
