"""Standard errors of lm-eval task scores, the values lm-eval 0.4.13 reports.

lm-eval asks ``stderr_for_metric(aggregation, bootstrap_iters)`` which estimate a metric gets: a
closed form for ``mean`` / ``acc_all``, a bootstrap for the corpus-level aggregations (perplexity,
bleu, chrf, ter, f1, matthews_corrcoef, median, nanmean), none for the rest (weighted_perplexity,
bits_per_byte, custom functions). proctor asks the same question of the installed package and
computes the bootstrap itself, drawing exactly lm-eval's resamples: replicate chunks of
min(1000, iters), chunk ``i`` drawn by ``random.Random(i).choices(items, k=len(items))``, the sample
standard deviation of the replicates. Drawing the indices with numpy's MT19937 started from Python's
state gives the same indices at a fraction of the cost; perplexity, the common large case, is then
computed on whole blocks of replicates.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

from proctor.scoring.metrics import exp_or_inf

DEFAULT_BOOTSTRAP_ITERS = 100_000  # lm_eval.simple_evaluate's default
_CAPPED = ("bleu", "chrf", "chrf++", "ter")  # lm-eval bootstraps these at most 100 times (they are slow)
_BLOCK = 1 << 20  # resampled values held at once (memory stays bounded for large tasks)


def task_stderr(aggregation: Callable, metric: str, items: Sequence[Any], iters: int) -> float | None:
    """lm-eval's ``<metric>_stderr`` for one task metric; None where lm-eval reports "N/A"."""
    from lm_eval.api import metrics as M

    if iters <= 0 or len(items) <= 1:
        return None
    iters = min(iters, 100) if metric in _CAPPED else iters
    estimate = M.stderr_for_metric(aggregation, bootstrap_iters=iters)
    if estimate is None:
        return None
    if estimate in (M.mean_stderr, M.acc_all_stderr):  # closed forms: lm-eval's own functions
        return float(estimate(list(items)))
    return bootstrap(aggregation, list(items), iters)


def resamples(seed: int, n: int, count: int):
    """``count`` rows of indices, each ``random.Random(seed).choices(range(n), k=n)`` continued:
    CPython's ``random()`` is (a >> 5, b >> 6) of two 32-bit Mersenne Twister outputs, and
    ``choices`` takes ``floor(random() * n)``."""
    import numpy as np

    state = random.Random(seed).getstate()[1]
    generator = np.random.MT19937()
    generator.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": state[624]},
    }
    per_block = max(1, _BLOCK // max(n, 1))
    for start in range(0, count, per_block):
        rows = min(per_block, count - start)
        raw = generator.random_raw(2 * n * rows).reshape(rows, n, 2)
        unit = ((raw[..., 0] >> 5).astype(np.float64) * 67108864.0 + (raw[..., 1] >> 6)) * (1.0 / 9007199254740992.0)
        yield np.floor(unit * float(n)).astype(np.int64)


def bootstrap(aggregation: Callable, items: list, iters: int) -> float:
    from lm_eval.api import metrics as M

    chunk = min(1000, iters)
    replicates: list[float] = []
    for seed in range(iters // chunk):
        for block in resamples(seed, len(items), chunk):
            replicates += _apply(aggregation, items, block)
    return float(M.sample_stddev(replicates))


def _apply(aggregation: Callable, items: list, block) -> list[float]:
    from lm_eval.api import metrics as M

    if aggregation is M.perplexity and all(isinstance(x, (int, float)) for x in items):
        import numpy as np

        values = np.asarray(items, dtype=np.float64)[block]
        # exp(-sum / n), the sum taken left to right as Python's sum() does, math.exp as lm-eval's
        n = values.shape[1]
        return [exp_or_inf(-(total / n)) for total in np.cumsum(values, axis=1)[:, -1].tolist()]
    return [float(aggregation([items[j] for j in row])) for row in block.tolist()]
