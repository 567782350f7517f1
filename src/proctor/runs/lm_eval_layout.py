"""A run in lm-evaluation-harness 0.4's output layout, as its ``EvaluationTracker`` writes it.

``lm_eval/<model_name_sanitized>/results_<date>.json`` plus ``samples_<task>_<date>.jsonl``
per task, ``<date>`` being the run's start as ``%Y-%m-%dT%H-%M-%S.%f`` (lm-eval's "latest
results" helpers order files by it). Keys and value types follow the files lm-eval 0.4.13 writes
(checked against one in tests/runs/test_export_lm_eval.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Hashable, Mapping

from proctor.data.readers import Row
from proctor.runs.documents import ResultsDocument, SampleLine, SavedSpec
from proctor.scoring.aggregate import TaskEntry

log = logging.getLogger(__name__)

LAYOUT_VERSION = "0.4.13"  # the lm-evaluation-harness release whose layout this follows
OUTPUT_TYPES = {
    "multiple_choice": "multiple_choice",
    "generate": "generate_until",
    "perplexity": "loglikelihood_rolling",
}


def sanitize(name: str) -> str:
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", str(name))  # lm_eval.utils.sanitize_model_name


def stamp(created: str | None) -> str:
    when = datetime.fromisoformat(created) if created else datetime.now(timezone.utc)
    return when.strftime("%Y-%m-%dT%H-%M-%S.%f")


def _sha(text: object) -> str:
    return hashlib.sha256(str(text).encode("utf-8")).hexdigest()


def _version(value: Any) -> float | str:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _keys(metric: str) -> tuple[str, str]:
    """lm-eval's value and stderr keys: ``acc,none`` / ``acc_stderr,none``; a metric already named
    ``metric,filter`` (an lm-eval task's) keeps its filter."""
    name, _, filter_name = metric.partition(",")
    filter_name = filter_name or "none"
    return f"{name},{filter_name}", f"{name}_stderr,{filter_name}"


def _block(
    name: str, metrics: Mapping[str, object], n: int, group: bool = False, weighted: bool = False
) -> dict[str, object]:
    """``weighted``: a group lm-eval averages by size (``weight_by_size``): its micro mean and stderr.

    A metric with no number in results.json (NaN or infinite, stored as null and warned there) is written as null,
    not left out: the export shows the task had it. A metric whose key is another's stderr key (a plug-in metric
    ``exact_match_stderr`` beside ``exact_match``) would overwrite that standard error: it is written under
    ``<name>_value`` and a warning says so."""
    block: dict[str, object] = {"name": name, "alias": name, "sample_len": n}
    listed = {m: e for m, e in metrics.items() if isinstance(e, dict) and "value" in e}
    stderr_keys = {_keys(m)[1] for m in listed}
    for metric, entry in listed.items():
        value, stderr = (
            (entry.get("micro"), entry.get("micro_stderr")) if weighted else (entry["value"], entry.get("stderr"))
        )
        if isinstance(value, bool) or not isinstance(value, (int, float, type(None))):
            continue
        if value is None:
            log.warning(
                "%s: metric '%s' has no number in results.json (NaN or infinite): null in the lm-eval export",
                name,
                metric,
            )
        value_key, stderr_key = _keys(metric)
        if value_key in stderr_keys:
            base, _, filter_name = value_key.partition(",")
            renamed = f"{base}_value"
            while f"{renamed},{filter_name}" in stderr_keys or f"{renamed},{filter_name}" in block:
                renamed += "_value"
            log.warning(
                "%s: metric '%s' would overwrite another metric's standard error ('%s') in the lm-eval export: "
                "written as '%s,%s'",
                name,
                metric,
                value_key,
                renamed,
                filter_name,
            )
            value_key, stderr_key = f"{renamed},{filter_name}", f"{renamed}_stderr,{filter_name}"
        block[value_key] = value
        block[stderr_key] = stderr if isinstance(stderr, (int, float)) and not isinstance(stderr, bool) else "N/A"
    if group:
        block["sample_count"] = {k.replace("_stderr", ""): n for k in block if "," in k and "_stderr" not in k}
    return block


def _weighted_groups(specs: Mapping[str, SavedSpec]) -> set[str]:
    """Groups whose score is their tasks' size-weighted mean (lm-eval's ``weight_by_size``)."""
    return {str(group) for spec in specs.values() for group in (spec or {}).get("size_weighted_groups") or []}


def _config(name: str, task: TaskEntry, spec: SavedSpec, overrides: Mapping[str, Any]) -> dict[str, object]:
    kind = spec.get("kind", task.get("kind"))
    fewshot = spec.get("fewshot") or {}
    data = (spec.get("data") or [{}])[0]
    config: dict[str, object] = {
        "task": name,
        "dataset_path": data.get("hub") or data.get("format") or "json",
        "dataset_kwargs": {"data_files": {"test": data.get("path")}} if data.get("path") else {},
        "test_split": data.get("split") or "test",
        "doc_to_text": spec.get("prompt") or spec.get("text") or "",
        "doc_to_target": spec.get("target") or "",
        "unsafe_code": False,
    }
    if kind == "multiple_choice":
        config["doc_to_choice"] = spec.get("choices")
    config.update(
        description=spec.get("description") or "",
        target_delimiter=spec.get("target_delimiter", " "),
        fewshot_delimiter=fewshot.get("separator", "\n\n"),
        fewshot_config={
            "sampler": "default",
            "split": None,
            "process_docs": None,
            "fewshot_indices": None,
            "samples": None,
            "doc_to_text": config["doc_to_text"],
            "doc_to_choice": config.get("doc_to_choice"),
            "doc_to_target": config["doc_to_target"],
            "gen_prefix": None,
            "fewshot_delimiter": fewshot.get("separator", "\n\n"),
            "target_delimiter": spec.get("target_delimiter", " "),
        },
        num_fewshot=int(fewshot.get("count") or 0),
        metric_list=[
            {"metric": m, "aggregation": "mean", "higher_is_better": bool(hib)}
            for m, hib in (task.get("higher_is_better") or {}).items()
        ],
        output_type=OUTPUT_TYPES.get(kind, str(kind)),
    )
    if kind == "generate":
        g = spec.get("generation") or {}
        config["generation_kwargs"] = {
            "until": list(g.get("stop") or []),
            "max_gen_toks": int(g.get("max_tokens", 64)),
            "do_sample": float(g.get("temperature") or 0) > 0,
            "temperature": float(g.get("temperature") or 0),
            "top_p": float(g.get("top_p", 1.0)),
        }
    config.update(
        repeats=int((overrides.get("epochs") or 1) if kind == "generate" else 1),
        should_decontaminate=False,
        metadata={
            "version": _version(task.get("version")),
            "config_source": task.get("source") or "",
            "proctor_hash": task.get("hash"),
            "dialect": task.get("dialect"),
        },
    )
    return config


def _token(tok: object) -> list[str]:
    return [str(tok[0]), str(tok[1])] if isinstance(tok, (list, tuple)) and len(tok) == 2 else ["", ""]


def user_model_name(results: ResultsDocument) -> str:
    """The model as the user named it (``--model``, less a backend prefix such as ``hf:``), as lm-eval
    names it by its ``pretrained=`` argument; runs from before it was recorded: the model's name."""
    given = (results.get("model_info") or {}).get("model_name")
    if isinstance(given, str) and given:
        backend, sep, rest = given.partition(":")
        return rest if sep and len(backend) > 1 and rest else given
    return str((results.get("model") or {}).get("model") or "")


def _bootstrap_iters(tasks: Mapping[str, TaskEntry]) -> int:
    """The bootstrap resamples the run's standard errors used (lm-eval tasks record theirs; 0: none)."""
    return max(
        (int(t["bootstrap_iters"]) for t in tasks.values() if isinstance(t.get("bootstrap_iters"), int)), default=0
    )


def results_file(results: ResultsDocument, specs: Mapping[str, SavedSpec]) -> dict[str, Any]:
    """results.json (+ each task's saved spec) as lm-eval's results file."""
    tasks = results.get("tasks", {})
    groups = results.get("groups", {})
    model = results.get("model", {})
    info = results.get("model_info") or {}
    overrides = results.get("overrides") or {}
    n_shot = {
        name: int(t["n_shot"])
        if isinstance(t.get("n_shot"), int)
        else int(((specs.get(name) or {}).get("fewshot") or {}).get("count") or 0)
        for name, t in tasks.items()
    }
    weighted = _weighted_groups(specs)
    out: dict[str, Any] = {  # lm-eval's results file (its JSON document)
        "results": {
            **{name: _block(name, t["metrics"], int(t["n_samples"])) for name, t in tasks.items()},
            **{
                name: _block(name, g["metrics"], int(g.get("n_samples", 0)), group=True, weighted=name in weighted)
                for name, g in groups.items()
            },
        },
        "groups": {
            name: _block(name, g["metrics"], int(g.get("n_samples", 0)), group=True, weighted=name in weighted)
            for name, g in groups.items()
        },
        "group_subtasks": {name: list(g["tasks"]) for name, g in groups.items()},  # lm-eval 0.4.13 lists groups only
        "configs": {name: _config(name, t, specs.get(name) or {}, overrides) for name, t in tasks.items()},
        "versions": {
            **{name: _version(t.get("version")) for name, t in tasks.items()},
            **{name: "1.0" for name in groups},
        },
        "n-shot": {
            **n_shot,
            **{name: max((n_shot.get(t, 0) for t in g["tasks"]), default=0) for name, g in groups.items()},
        },
        "higher_is_better": {
            **{
                name: {m.partition(",")[0]: h for m, h in (t.get("higher_is_better") or {}).items()}
                for name, t in tasks.items()
            },
            **{
                name: {
                    m.partition(",")[0]: h
                    for t in g["tasks"]
                    for m, h in (tasks.get(t, {}).get("higher_is_better") or {}).items()
                }
                for name, g in groups.items()
            },
        },
        "n-samples": {
            name: {
                "original": int((t.get("data") or {}).get("n_rows", t["n_samples"])),
                "effective": int(t["n_samples"]),
            }
            for name, t in tasks.items()
        },
    }
    gen = overrides.get("gen_kwargs")
    model_args = f"pretrained={model.get('path') or model.get('model')}" + (
        f",dtype={model['dtype']}" if model.get("dtype") else ""
    )
    seed = overrides.get("seed", 0)
    out["config"] = {
        "model": str(model.get("backend", "proctor")),
        "model_args": model_args,
        "model_num_parameters": int(info.get("num_parameters") or 0),
        "model_dtype": str(model.get("dtype") or ""),
        "model_revision": str(model.get("revision") or "main"),
        "model_sha": str(model.get("content") or ""),
        "batch_size": info.get("batch_size")
        if isinstance(info.get("batch_size"), int)
        else str(info.get("batch_size") or 1),
        "batch_sizes": list(info.get("batch_sizes") or []),
        "device": str(info.get("device") or "cpu"),
        "use_cache": None,
        "limit": results.get("limit"),
        "bootstrap_iters": _bootstrap_iters(tasks),
        "gen_kwargs": ",".join(f"{k}={v}" for k, v in gen.items()) if gen else None,
        "random_seed": int(seed),
        "numpy_seed": int(seed),
        "torch_seed": int(seed),
        "fewshot_seed": int(overrides.get("seed", 1234)),  # --seed S is lm-eval's fewshot seed too
    }
    env = results.get("environment") or {}
    chat = info.get("chat_template") if results.get("chat_applied") else None
    system = overrides.get("system_prompt")
    out.update(
        git_hash=env.get("git_hash"),
        date=datetime.fromisoformat(results["created"]).timestamp() if results.get("created") else 0.0,
        pretty_env_info=f"proctor {results.get('proctor_version')}; Python {env.get('python')}; {env.get('platform')}",
        transformers_version=str(model.get("transformers") or info.get("transformers") or ""),
        lm_eval_version=LAYOUT_VERSION,
        upper_git_hash=None,
        tokenizer_pad_token=_token(info.get("pad_token")),
        tokenizer_eos_token=_token(info.get("eos_token")),
        tokenizer_bos_token=_token(info.get("bos_token")),
        eot_token_id=int(info.get("eot_token_id") or 0),
        max_length=int(model.get("max_length") or info.get("max_length") or 0),
        task_hashes={name: str(t.get("hash") or "") for name, t in tasks.items()},
        model_source=str(model.get("backend", "proctor")),
        model_name=user_model_name(results),
        model_name_sanitized=sanitize(user_model_name(results) or "model"),
        system_instruction=system,
        system_instruction_sha=_sha(system) if system is not None else None,
        fewshot_as_multiturn=bool(overrides.get("fewshot_as_multiturn", False)),
        chat_template=chat,
        chat_template_sha=_sha(chat) if chat is not None else None,
        total_evaluation_time_seconds=str((results.get("timing") or {}).get("total_seconds", "")),
        proctor={"version": results.get("proctor_version"), "model_fingerprint": model, "overrides": overrides},
    )
    return out


class SourceRows:
    """The data rows that samples came from (lm-eval's ``doc``), read once per file."""

    def __init__(self) -> None:
        # file -> its rows by row number; a record's "row" is looked up as the record gives it
        self._files: dict[str, dict[Hashable, Row]] = {}

    def doc(self, record: SampleLine) -> Row:
        source = record.get("source") or {}
        file, row = source.get("file"), source.get("row")
        if not isinstance(file, str) or not isinstance(row, (int, str)):  # a source edited by hand: no row to read
            file = None
        if file and file not in self._files:
            from proctor.core.errors import ProctorError
            from proctor.data.readers import read_rows

            try:
                rows = read_rows(Path(file)) if Path(file).is_file() else []
            except ProctorError:
                rows = []
            self._files[file] = {
                int(r.get("_row", i + 1)): {k: v for k, v in r.items() if not k.startswith("_")}
                for i, r in enumerate(rows)
            }
        found = self._files.get(file, {}).get(row) if file else None
        return found if found is not None else {"id": record.get("id"), **({"source": source} if source else {})}


def _strings(value: object) -> object:
    return [_strings(v) for v in value] if isinstance(value, list) else str(value)


def sample_line(index: int, record: SampleLine, spec: SavedSpec, doc: Row | None = None) -> dict[str, object]:
    """One proctor sample record as a line of lm-eval's ``samples_<task>_<date>.jsonl``."""
    prompt = record.get("rendered_prompt") or record.get("prompt")
    prompt = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
    delimiter = spec.get("target_delimiter", " ")
    target = record.get("doc_target", record.get("target"))  # an lm-eval task's record keeps lm-eval's own target
    if (
        isinstance(record.get("arguments"), list) and "resps" in record
    ):  # an lm-eval task: its own requests and responses
        arguments = {
            f"gen_args_{i}": {f"arg_{k}": a for k, a in enumerate(args)} for i, args in enumerate(record["arguments"])
        }
        resps = _strings(record["resps"])  # lm-eval writes every response value as a string
        filtered = _strings(next(iter((record.get("filtered_resps") or {"none": []}).values())))
    elif record.get("choices") is not None:  # multiple choice: one log-likelihood request per choice
        arguments = {
            f"gen_args_{i}": {"arg_0": prompt, "arg_1": f"{delimiter}{c}"} for i, c in enumerate(record["choices"])
        }
        greedy = record.get("is_greedy") or [False] * len(record["choices"])
        resps = [[[str(lp), str(bool(g))]] for lp, g in zip(record.get("logprobs") or [], greedy)]
        filtered = [[str(lp), str(bool(g))] for lp, g in zip(record.get("logprobs") or [], greedy)]
    elif "generation" in record:
        g = spec.get("generation") or {}
        kwargs = {
            "until": list(g.get("stop") or []),
            "max_gen_toks": int(g.get("max_tokens", 64)),
            "do_sample": float(g.get("temperature") or 0) > 0,
        }
        arguments = {"gen_args_0": {"arg_0": prompt, "arg_1": kwargs}}
        generations = (
            [e.get("generation") for e in record["epochs"]] if record.get("epochs") else [record.get("generation")]
        )
        resps = [[str(x) for x in generations]]
        filtered = [str(record.get("extracted") if record.get("extracted") is not None else record.get("generation"))]
    else:  # perplexity and task classes: the record's own fields
        arguments = {"gen_args_0": {"arg_0": prompt or ""}}
        resps = [[str(record.get("loglikelihood", record.get("generation", "")))]]
        filtered = [str(record.get("loglikelihood", record.get("generation", "")))]
    target_text = str(target[0] if isinstance(target, list) and len(target) == 1 else target)
    line = {
        "doc_id": index,
        "doc": doc if doc is not None else {"id": record.get("id")},
        "target": target_text,
        "arguments": arguments,
        "resps": resps,
        "filtered_resps": filtered,
        "filter": "none",
        "metrics": list((record.get("metrics") or {}).keys()),
        "doc_hash": _sha(
            json.dumps(doc if doc is not None else {"id": record.get("id")}, ensure_ascii=False, default=str)
        ),
        "prompt_hash": _sha(prompt),
        "target_hash": _sha(target_text),
    }
    for name, value in (record.get("metrics") or {}).items():
        line[name] = value
    return line
