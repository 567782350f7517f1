"""Each task's settings as ``compare`` and the viewer read them from a results.json, and what differs between
two runs'. A run of this version records them per task (``TaskSettings``, written by engine/task_settings.py);
for a run of an earlier version they are derived from what results.json's top level says (model, overrides,
limit, chat) and each task's own fields (mc_format, n_shot, epochs), and the rest is named as not recorded.
The viewer's side-by-side page diffs the same values (``static/viewer.js``: ``settingsDiffer``)."""

from __future__ import annotations

import json
from typing import Any, Mapping, TypedDict

from proctor.core.registry import registry
from proctor.runs.task_result import TaskSettings

# what a task ran with that changes its numbers, and last its content: the hash of its spec, samples and prompts
# (results.json's task ``hash``), which differs when the task file or its data was edited between the runs
CONTENT = "task_content"
INFO = "model_info"  # backend options that change no request and no answer: information, never a setting
SETTING_NAMES: tuple[str, ...] = (*(n for n in TaskSettings.model_fields if n != INFO), CONTENT)
# the settings that change a task's prompts or its samples, and so its content hash (the spec as the overrides
# left it, the rows kept): only these may explain a content hash that differs. A server's address, a dtype or
# a backend cannot change a prompt, so beside them a changed hash is named: the task file or its data changed.
CHANGE_CONTENT = frozenset(
    {
        "fewshot",
        "fewshot_source",
        "fewshot_seed",
        "chat",
        "system_prompt",
        "limit",
        "limit_per_part",
        "sample_ids",
        "generation",
        "mc_format",
        "mc_shuffle",
        "epochs",
        "epoch_reducer",
        "think_end_token",
        "think_budget",
        "judges",  # a use case's judge metric (its rubric, scale, settings) is part of the file the hash reads
    }
)
# the settings that act only through the rows they keep: with the same content and as many samples in both runs
# they kept the same rows (a --limit 100 on an 8-row task), and their values differ in nothing
ROWS_ONLY = frozenset({"limit", "limit_per_part"})
CONTENT_SHOWN = 12  # hex digits of the content hash shown: enough to tell two apart
# settings recorded since a later version, whose absence means the default: no such flag existed before
_LATER = {"sample_ids": None, "mc_shuffle": None, "judges": None}


class ReadSettings(TypedDict):
    """A task's settings as read from a results.json."""

    values: dict[str, object]  # setting -> its value (None where not recorded)
    unknown: list[str]  # the settings the run did not record (an earlier version's)
    info: dict[str, object]  # backend options that change no number (base_url, prices, pace): information
    rows: int | None  # the samples the task evaluated (n_samples): with the same content, the same rows


class SettingDiffers(TypedDict):
    task: str
    setting: str
    a: object  # its value in the first run
    b: object  # in the second


# how a backend paces its calls changes no answer, whatever the backend: a plug-in backend that declares nothing
# still records these as information (as every backend did before backends declared their own)
PACE_OPTIONS = frozenset({"concurrency", "timeout", "deadline", "max_retries", "backoff"})


def inert_options(backend: object) -> frozenset[str]:
    """The options the backend named ``backend`` (hf, openai, ...) declares unable to change a request or an
    answer (``ModelBackend.inert_options``), and the pace options of any backend."""
    found = registry().model_backends.get(str(backend)) if backend is not None else None
    return (found.inert_options if found is not None else frozenset()) | PACE_OPTIONS


def _split_info(read: ReadSettings, recorded: object) -> None:
    """Move the backend's inert options out of ``model_args`` into ``info`` (a run of an earlier version recorded
    them among the settings), beside what the run recorded as ``model_info``."""
    read["info"] = dict(recorded) if isinstance(recorded, Mapping) else {}
    args = read["values"].get("model_args")
    if isinstance(args, Mapping):
        inert = inert_options(read["values"].get("backend"))
        read["values"]["model_args"] = {k: v for k, v in args.items() if k not in inert}
        read["info"].update({k: v for k, v in args.items() if k in inert})


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
            read: ReadSettings = {"values": values, "unknown": unknown, "info": {}, "rows": None}
        else:
            read = _derived(results, task)
        _split_info(read, recorded.get(INFO) if isinstance(recorded, Mapping) else None)
        rows = task.get("n_samples")
        read["rows"] = rows if isinstance(rows, int) and not isinstance(rows, bool) else None
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
        "info": {},
        "rows": None,
    }


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _greedy(generation: object) -> bool:
    """Generation settings that decode greedily (temperature 0, no ``do_sample: true``): no seed is read."""
    if not isinstance(generation, Mapping):
        return False
    temperature = generation.get("temperature")
    return isinstance(temperature, (int, float)) and temperature == 0 and generation.get("do_sample") is not True


def _compared(name: str, a: object, b: object) -> tuple[object, object]:
    """The values as they can change a number: under greedy decoding in both runs the seed is read by nothing
    (the audit's generation.sampling says the same), so a seed alone is no difference."""
    if name == "generation" and _greedy(a) and _greedy(b):
        assert isinstance(a, Mapping) and isinstance(b, Mapping)
        return {k: v for k, v in a.items() if k != "seed"}, {k: v for k, v in b.items() if k != "seed"}
    return a, b


def _same_rows(a: ReadSettings, b: ReadSettings) -> bool:
    """The same task content (spec, data, prompts) and as many samples evaluated: a limit takes the first rows (of
    each part), so the two runs kept the same rows whatever their limits said."""
    content = a["values"].get(CONTENT)
    return (
        content is not None
        and _same(content, b["values"].get(CONTENT))
        and a["rows"] is not None
        and (a["rows"] == b["rows"])
    )


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
        explained = False  # a setting that changes prompts or samples differs (even one that changes no number)
        for name in SETTING_NAMES:
            missing = [side for side, s in (("a", a), ("b", b)) if name in s["unknown"]]
            if missing:
                unknown.append({"task": task, "setting": name, "unknown_in": missing})
                continue
            value_a, value_b = a["values"][name], b["values"][name]
            explained = explained or (name in CHANGE_CONTENT and not _same(value_a, value_b))
            if not _same(*_compared(name, value_a, value_b)):
                found.append({"task": task, "setting": name, "a": value_a, "b": value_b})
        # a setting that changes prompts or samples changes the content hash too (the limit its samples, the
        # system prompt its prompts, a seed the spec): the content is named only where no such setting explains
        # it, the task file or its data edited. A server's address or a dtype explains no hash: beside them it
        # stays named.
        if _same_rows(a, b):  # a limit that kept the same rows changed nothing
            found = [d for d in found if d["setting"] not in ROWS_ONLY]
        differ += [d for d in found if d["setting"] != CONTENT] if explained else found
    return differ, unknown


def information_differences(
    settings_a: Mapping[str, ReadSettings], settings_b: Mapping[str, ReadSettings], tasks: list[str]
) -> list[SettingDiffers]:
    """Over ``tasks``: each backend option that cannot change a number (``info``: base_url, prices, pace) whose
    values differ, as ``model_info.NAME``: shown as information, never as a reason the runs are not comparable."""
    out: list[SettingDiffers] = []
    for task in tasks:
        a, b = settings_a.get(task), settings_b.get(task)
        if a is None or b is None:
            continue
        for name in sorted(set(a["info"]) | set(b["info"])):
            if not _same(a["info"].get(name), b["info"].get(name)):
                out.append(
                    {"task": task, "setting": f"{INFO}.{name}", "a": a["info"].get(name), "b": b["info"].get(name)}
                )
    return out


def shown_difference(a: object, b: object, width: int = 80) -> str:
    """Two values of a setting on one line: of two mappings only the keys that differ (``max_tokens: A 16, B 8``),
    so the difference is never cut off behind the keys they share; of two lists of records (``judges``) each record
    that differs, named, with its keys that differ; anything else whole (``A x, B y``)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = sorted(k for k in set(a) | set(b) if not _same(a.get(k), b.get(k)))
        if keys:
            return "; ".join(f"{k}: A {shown(a.get(k), width)}, B {shown(b.get(k), width)}" for k in keys)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(isinstance(x, Mapping) for x in a + b):
        # a list of records (a task's judges): each record that differs, by its name, with the keys that differ
        parts = [
            f"{x.get('metric', i)}: {shown_difference(x, y, width)}"
            for i, (x, y) in enumerate(zip(a, b))
            if not _same(x, y)
        ]
        if parts:
            return "; ".join(parts)
    return f"A {shown(a, width)}, B {shown(b, width)}"


def shown(value: object, width: int = 80) -> str:
    """A setting's value on one console line: none, a number, quoted text, compact JSON; cut at ``width``."""
    if value is None:
        return "none"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
