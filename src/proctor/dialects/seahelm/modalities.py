"""Which input modality a SEA-HELM task needs, and whether proctor can run it.

SEA-HELM marks vision tasks with ``task_modality: vision``; their dataloaders (task-folder files)
subclass ``src.dataloaders.huggingface_image_dataloader.HuggingFaceImageDataloader`` (audio:
``huggingface_audio_dataloader``). The dialect asks :func:`unsupported` before it makes a task, so
``ls``, ``validate`` and ``run`` leave such tasks out alike, naming them and the reason.

Image tasks run through proctor's SEA-HELM task on vision-language models (``seahelm/image_dataloader.py``,
``models/hf/vision.py``); audio tasks are left out by name. Another modality plugs in with
:func:`register_modality`; the tasks of that modality are then made as any other.
"""

from __future__ import annotations

import re
from pathlib import Path

# modality -> the registered task handler that runs it (declaration.py); text and images run through
# proctor's SEA-HELM task
RUNNERS: dict[str, str] = {"text": "seahelm.task", "image": "seahelm.task"}

_LOADER_MODALITY = {"HuggingFaceImageDataloader": "image", "HuggingFaceAudioDataloader": "audio"}
_CONFIG_MODALITY = {"vision": "image", "image": "image", "audio": "audio", "speech": "audio", "text": "text"}
_IMPORT = re.compile(r"huggingface_(image|audio)_dataloader|HuggingFace(Image|Audio)Dataloader")


def register_modality(name: str, handler: str) -> None:
    """Let tasks of modality ``name`` ("image", "audio") run through ``handler``, a task handler registered
    by a plug-in (``Registry.add_task_handler``) whose options model is ``SeaHelmTaskOptions``."""
    RUNNERS[name] = handler


def modality(cfg: dict, loader_file: Path | None) -> str:
    """ "text", "image" or "audio": the config's ``task_modality``, else the dataloader it names (by class,
    or by what the task-folder file imports: read as text, never run)."""
    declared = str(cfg.get("task_modality") or "").lower()
    if declared:
        return _CONFIG_MODALITY.get(declared, declared)
    name = str(cfg.get("dataloader_class") or "")
    if name in _LOADER_MODALITY:
        return _LOADER_MODALITY[name]
    if loader_file is not None and loader_file.is_file():
        try:
            found = _IMPORT.search(loader_file.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            found = None
        if found:
            return (found.group(1) or found.group(2)).lower()
    return "text"


def unsupported(cfg: dict, loader_file: Path | None) -> str | None:
    """Why proctor cannot run this task (None: it can)."""
    kind = modality(cfg, loader_file)
    if kind in RUNNERS:
        return None
    loader = cfg.get("dataloader_class") or "its dataloader"
    return f"{kind} task ({loader}): proctor does not run {kind} inputs yet"


def inputs(cfg: dict, loader_file: Path | None) -> tuple[str, ...]:
    """What the model must take besides text (``Task.inputs``): ``("images",)`` for an image task."""
    kind = modality(cfg, loader_file)
    return () if kind == "text" else (f"{kind}s" if kind == "image" else kind,)


def handler(cfg: dict, loader_file: Path | None) -> str:
    return RUNNERS[modality(cfg, loader_file)]
