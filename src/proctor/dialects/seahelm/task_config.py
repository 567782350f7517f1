"""SEA-HELM's task configuration as its dataloader and metric classes read it: ``TaskConfig`` (one task in
one language; SEA-HELM's ``src.task_config.TaskConfig``) and ``ConfigDict``, a mapping that also reads as
attributes, as SEA-HELM's OmegaConf configs do.

Kept apart from the dataloaders because metrics, judges and task-folder code take it too, and
``named_classes.py`` hands it to task-folder code under SEA-HELM's own module names.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping


class ConfigDict(dict):
    """A config mapping that also reads as attributes (``task_config.config.judge.get(...)``), as
    SEA-HELM's OmegaConf configs do; nested mappings are ConfigDicts too."""

    def __init__(self, data: Mapping[str, object] | Iterable[tuple[str, object]] = (), **kwargs: object) -> None:
        super().__init__(data, **kwargs)
        for key, value in self.items():
            super().__setitem__(key, _wrap(value))

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, _wrap(value))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"config has no key '{name}'") from None

    def __setattr__(self, name: str, value: object) -> None:
        self[name] = value


def _wrap(value: object) -> object:
    if isinstance(value, dict) and not isinstance(value, ConfigDict):
        return ConfigDict(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class TaskConfig:
    """One task in one language: ``task_name``, ``lang`` and the task's resolved ``config`` dict."""

    def __init__(self, task_name: str, lang: str, config: dict, **extra: object) -> None:
        self.task_name = task_name
        self.lang = lang
        self.config = ConfigDict(config)
        for key, value in extra.items():
            setattr(self, key, value)
