"""What a person sees of one sample record, whatever dialect wrote it (the report and the viewer).

Every dialect writes the same fields for a question with choices (``choices``, ``target`` as gold
index or indices, ``prediction`` index, ``distribution`` when scored by log-likelihood) and for a
generation (``generation``, ``extracted``, ``parsed``, ``target`` as reference texts); see
docs/results.md. This module turns a record into the view's fields: choices with probabilities,
prediction and gold as text, outcome, confidence.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Iterable

N_BINS = 10  # calibration bins


def content_text(content: Any) -> str:
    """A message's content as text; image content parts show as ``[image]``."""
    if isinstance(content, list):
        return "".join("[image] " if isinstance(p, dict) and p.get("type") in ("image", "image_url") else
                       str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def _index(value: Any, n: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n else None


def choice_text(choices: list, index: Any) -> str:
    i = _index(index, len(choices))
    if i is not None:
        return f"{i}: {choices[i]}"
    return "—" if index is None else str(index)


def gold_indices(target: Any, n: int) -> list[int]:
    items = target if isinstance(target, list) else [target]
    return [i for i in (_index(t, n) for t in items) if i is not None]


def primary_metrics(records: Iterable[dict]) -> dict[str, str]:
    """Per task, the first metric whose every per-sample value is 0 or 1: it decides correct / incorrect."""
    seen: dict[str, dict[str, bool]] = defaultdict(dict)
    order: dict[str, list[str]] = defaultdict(list)
    for r in records:
        task = r.get("task")
        for name, value in (r.get("metrics") or {}).items():
            if name not in seen[task]:
                seen[task][name] = True
                order[task].append(name)
            if value is not None and value not in (0, 1):
                seen[task][name] = False
    return {task: next((m for m in order[task] if flags[m]), "") for task, flags in seen.items()}


def status(r: dict, primary: str) -> str:
    """correct / incorrect by the task's 0/1 metric (or the record's own ``correct``); unparsed when no answer
    could be read from a generation; unscored when nothing says."""
    if r.get("parsed") is False or (r.get("mc_format") == "generate" and r.get("extracted") is None):
        return "unparsed"  # no answer read from a generation (lettered multiple choice: no letter)
    value = (r.get("metrics") or {}).get(primary) if primary else None
    if value is None:
        value = r.get("correct") if isinstance(r.get("correct"), bool) else None
    if value is None:
        return "unscored"
    return "correct" if value == 1 else "incorrect"


def _prompt(r: dict) -> str:
    prompt = r.get("prompt_sent") if r.get("mc_format") == "generate" and r.get("prompt_sent") else None
    prompt = prompt or r.get("rendered_prompt") or r.get("prompt")
    if isinstance(prompt, list):
        prompt = "\n".join(f"[{m.get('role')}] {content_text(m.get('content'))}" if isinstance(m, dict) else str(m) for m in prompt)
    return "" if prompt is None else str(prompt)


def _num(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def sample_view(r: dict, primary: str = "") -> dict:
    """The fields the page shows for one record (JSON-ready; NaN and infinities become null)."""
    view: dict[str, Any] = {"task": str(r.get("task")), "id": str(r.get("id")), "prompt": _prompt(r),
                            "metrics": r.get("metrics") or {}, "status": status(r, primary), "confidence": None}
    thumbnails = [i.get("thumbnail") for i in r.get("images") or () if str(i.get("thumbnail", "")).startswith("data:image/")]
    if thumbnails:  # small data URIs made when the images were read (the page stays self-contained)
        view["images"] = thumbnails
    target = r.get("target")
    notes = []
    if r.get("choices") is not None:
        choices = [str(c) for c in r["choices"]]
        golds = gold_indices(target, len(choices))
        lettered = r.get("mc_format") == "generate"
        probs = r.get("distribution") if not lettered and isinstance(r.get("distribution"), list) else None
        if probs is not None and len(probs) != len(choices):
            probs = None
        prediction = _index(r.get("prediction"), len(choices))
        view.update(choices=choices, probs=probs, golds=golds, prediction=prediction,
                    prediction_text=choice_text(choices, r.get("prediction")) if r.get("prediction") is not None else
                    ("(no answer found)" if r.get("parsed") is False else "—"),
                    target_text=" | ".join(choice_text(choices, g) for g in golds) if golds else
                    ("—" if target is None else str(target)))
        if probs:
            view["confidence"] = max(p for p in probs if isinstance(p, (int, float)))
        if "generation" in r:  # choices read from a reply (lettered generation, SEA-HELM labels): the reply
            view["generation"] = r.get("generation")
        if lettered:
            view["formulation"] = f"lettered generation · letter read: {r.get('extracted') or 'none (unparsed)'}"
        elif probs is None and "generation" in r:
            view["formulation"] = f"label read from the generation: {r.get('extracted')}"
    elif "generation" in r:
        view["generation"] = r.get("generation")
        view["prediction_text"] = "(no answer found)" if r.get("parsed") is False else str(r.get("extracted"))
        view["target_text"] = " | ".join(map(str, target)) if isinstance(target, list) else str(target)
        if r.get("epochs"):
            view["epochs"] = [e.get("generation") for e in r["epochs"]]
    else:
        shown = {k: r[k] for k in ("logprob", "n_tokens") if k in r}
        view["prediction_text"] = ", ".join(f"{k}={_num(v)}" for k, v in shown.items()) or "—"
        view["target_text"] = "—" if target is None else str(target)
    if isinstance(r.get("gold_logprob"), (int, float)):  # SEA-HELM's log-prob strategy scores the gold label only
        notes.append(f"gold label log-prob {r['gold_logprob']:.4f} (probability {math.exp(r['gold_logprob']):.4f})")
    if notes:
        view["notes"] = notes
    return finite(view)


def calibration(records: Iterable[dict]) -> dict | None:
    """Confidence (top probability) against accuracy in equal-width bins, and the ECE."""
    points = []
    for r in records:
        dist, target = r.get("distribution"), r.get("target")
        if not dist or target is None or r.get("mc_format") == "generate":  # a lettered reply has no probabilities
            continue
        golds = set(target) if isinstance(target, list) else {target}
        top = max(range(len(dist)), key=lambda i: dist[i])
        points.append((dist[top], 1.0 if top in golds else 0.0))
    if not points:
        return None
    bins: list[list[tuple[float, float]]] = [[] for _ in range(N_BINS)]
    for conf, correct in points:
        bins[min(int(conf * N_BINS), N_BINS - 1)].append((conf, correct))
    table = []
    ece = 0.0
    for i, members in enumerate(bins):
        if not members:
            continue
        conf = sum(c for c, _ in members) / len(members)
        acc = sum(a for _, a in members) / len(members)
        ece += len(members) / len(points) * abs(conf - acc)
        table.append({"bin": [i / N_BINS, (i + 1) / N_BINS], "n": len(members), "confidence": conf, "accuracy": acc})
    return {"bins": table, "ece": ece, "n": len(points)}


def finite(value: Any) -> Any:
    """NaN and infinities as None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` that could end it."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
