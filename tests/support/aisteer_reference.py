"""AISteer360's MCQA metrics (accuracy, positional bias, calibration's ECE) computed independently with numpy."""

from __future__ import annotations

import numpy as np


def independent_accuracy(resp, ref, qid):
    keep = [i for i, r in enumerate(resp) if r is not None]
    correct = np.array([resp[i].strip().upper() == ref[i].strip().upper() for i in keep], dtype=float)
    per_q: dict = {}
    for i, c in zip(keep, correct):
        per_q.setdefault(qid[i], []).append(c)
    majority = np.array([float(np.sum(v) > len(v) / 2) for v in per_q.values()])
    std = lambda a: float(np.std(a, ddof=1)) if len(a) > 1 else 0.0  # noqa: E731
    return float(correct.mean()), std(correct), float(majority.mean()), std(majority)


def independent_bias(resp, qid):
    """AISteer360's mcqa_positional_bias.py written out: positions = sorted distinct letters observed among
    the non-None responses; per question the same positions; std with ddof=1 (0.0 for one question)."""
    valid = [(r, q) for r, q in zip(resp, qid) if r is not None]
    positions = sorted({r for r, _ in valid})

    def b(items):
        f = np.array([sum(1 for r in items if r == p) / len(items) for p in positions])
        return float(np.mean(np.abs(f - 1.0 / len(positions))))

    per_q: dict = {}
    for r, q in valid:
        per_q.setdefault(q, []).append(r)
    values = [b(v) for v in per_q.values()]
    return b([r for r, _ in valid]), (float(np.std(values, ddof=1)) if len(values) > 1 else 0.0)


def independent_ece(confidences, correct, n_bins=10):
    conf, hit = np.asarray(confidences, float), np.asarray(correct, float)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    ece = 0.0
    for b in range(n_bins):
        upper = conf <= edges[b + 1] if b == n_bins - 1 else conf < edges[b + 1]
        mask = (conf >= edges[b]) & upper
        if mask.any():
            ece += mask.mean() * abs(hit[mask].mean() - conf[mask].mean())
    return ece
