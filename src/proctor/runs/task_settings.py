"""Each task's settings as ``compare`` and the viewer read them from a results.json, and what differs between
two runs'. A run of this version records them per task (``TaskSettings``, written by engine/task_settings.py);
for a run of an earlier version they are derived from what results.json's top level says (model, overrides,
limit, chat) and each task's own fields (mc_format, n_shot, epochs), and the rest is named as not recorded.
The viewer's side-by-side page diffs the same values (``static/viewer.js``: ``settingsDiffer``)."""

from __future__ import annotations

import json
from typing import Any, Mapping, TypedDict

from proctor.runs.results_schema import TaskSettings

# what a task ran with that changes its numbers, and last its content: the hash of its spec, samples and prompts
# (results.json's task ``hash``), which differs when the task file or its data was edited between the runs
CONTENT = "task_content"
SETTING_NAMES: tuple[str, ...] = (*TaskSettings.model_fields, CONTENT)
CONTENT_SHOWN = 12  # hex digits of the content hash shown: enough to tell two apart
# settings recorded since a later version, whose absence means the default: no such flag existed before
_LATER = {"sample_ids": None}


class ReadSettings(TypedDict):
    """A task's settings as read from a results.json."""

    values: dict[str, object]  # setting -> its value (None where not recorded)
    unknown: list[str]  # the settings the run did not record (an earlier version's)


class SettingDiffers(TypedDict):
    task: str
    setting: str
    a: object  # its value in the first run
    b: object  # in the second


class SettingUnknown(TypedDict):
    task: str
    setting: str
    unknown_in: list[str]  # ["a"], ["b"] or ["a", "b"]: the runs that did not record it


def run_settings(results: Mapping[str, object]) -> dict[str, ReadSettings]:
    """task -> {"values": setting -> value, "unknown": settings the run did not record (an earlier version's)}."""
    tasks = results.get("tasks")
    out: dict[str, ReadSettings] = {}
    for name, task in (tasks if isinstance(tasks, Mapping) else {}).items():
        if not isinstance(task, Mapping):
            continue
        recorded = task.get("settings")
        if isinstance(recorded, Mapping):
            values = {n: recorded.get(n, _LATER.get(n)) for n in SETTING_NAMES if n != CONTENT}
            unknown = [n for n in SETTING_NAMES if n not in recorded and n not in _LATER and n != CONTENT]
            read: ReadSettings = {"values": values, "unknown": unknown}
        else:
            read = _derived(results, task)
        content = task.get("hash")
        if isinstance(content, str) and content:
            read["values"][CONTENT] = content[:CONTENT_SHOWN]
        else:
            read["values"][CONTENT] = None
            read["unknown"].append(CONTENT)
        out[name] = read
    return out


def _derived(results: Mapping[str, object], task: Mapping[str, Any]) -> ReadSettings:
    """An earlier version's task: what results.json says for certain; every other setting is unknown."""
    fingerprint = results.get("model")
    model: Mapping[str, object] = fingerprint if isinstance(fingerprint, Mapping) else {}
    given = results.get("overrides")
    overrides: Mapping[str, object] = given if isinstance(given, Mapping) else {}
    known: dict[str, object] = {"sample_ids": results.get("sample_ids")}
    if "backend" in model:
        known.update(backend=model.get("backend"), dtype=model.get("dtype"))
    if results.get("limit") is not None:  # without --limit, the task file's own limit may have applied
        known.update(limit=results.get("limit"), limit_per_part=bool(results.get("limit_per_part")))
    if task.get("n_shot") is not None:
        known["fewshot"] = task.get("n_shot")
    elif "num_fewshot" in overrides:
        known["fewshot"] = overrides["num_fewshot"]
    if results.get("chat_applied") is False:  # no task of the run used a chat template
        known.update(chat=False, chat_template=None)
    if "system_prompt" in overrides:
        known["system_prompt"] = overrides["system_prompt"]
    if task.get("kind") != "generate" and task.get("mc_format") != "generate":
        known["generation"] = None  # scored by log-likelihoods: no generation setting changes it
    known["mc_format"] = task.get("mc_format")
    epochs = task.get("epochs") if isinstance(task.get("epochs"), Mapping) else None
    if epochs is not None:
        known.update(epochs=epochs.get("n"), epoch_reducer=epochs.get("reducer"))
    elif "epochs" in overrides:
        known.update(epochs=overrides["epochs"], epoch_reducer=overrides.get("epoch_reducer"))
    else:
        known.update(epochs=1, epoch_reducer=None)
    return {
        "values": {n: known.get(n) for n in SETTING_NAMES if n != CONTENT},
        "unknown": [n for n in SETTING_NAMES if n not in known and n != CONTENT],
    }


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def settings_differences(
    settings_a: Mapping[str, ReadSettings], settings_b: Mapping[str, ReadSettings], tasks: list[str]
) -> tuple[list[SettingDiffers], list[SettingUnknown]]:
    """Over ``tasks`` (those both runs have): each setting whose values differ ({task, setting, a, b}), and each
    setting one run or both did not record ({task, setting, unknown_in: ["a"] / ["b"] / ["a", "b"]})."""
    differ: list[SettingDiffers] = []
    unknown: list[SettingUnknown] = []
    for task in tasks:
        a, b = settings_a.get(task), settings_b.get(task)
        if a is None or b is None:
            continue
        found: list[SettingDiffers] = []
        for name in SETTING_NAMES:
            missing = [side for side, s in (("a", a), ("b", b)) if name in s["unknown"]]
            if missing:
                unknown.append({"task": task, "setting": name, "unknown_in": missing})
            elif not _same(a["values"][name], b["values"][name]):
                found.append({"task": task, "setting": name, "a": a["values"][name], "b": b["values"][name]})
        # a setting that differs changes the content hash too (the limit its samples, the system prompt its
        # prompts): the content is named only where nothing else explains it, the task file or its data edited
        differ += [d for d in found if d["setting"] != CONTENT] if len(found) > 1 else found
    return differ, unknown


def shown(value: object, width: int = 80) -> str:
    """A setting's value on one console line: none, a number, quoted text, compact JSON; cut at ``width``."""
    if value is None:
        return "none"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
