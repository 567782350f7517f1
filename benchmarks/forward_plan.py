"""The forward calls proctor plans for log-likelihood scoring, computed without a GPU.

    python benchmarks/forward_plan.py                       # ARC-Easy (2376) and HellaSwag (10042), both layouts
    python benchmarks/forward_plan.py --observe arc_easy    # also run it on the CPU and compare with
                                                            # transformers' calls

For each task, the requests proctor's own task file makes (``examples/benchmarks``, rows from
``$PROCTOR_DATA`` or ../shared/data) are cut into engine calls as the run's executor cuts them
(``runs.executor.chunk_indices``), tokenised with the SmolLM2 tokenizer (what the 1B-class random
models of ``gpu_vs_lm_eval.py`` use), packed (``models/packing``) and planned
(``models/forward_plan``) for each layout: ``bucketed`` is what a CUDA device gets — for a 1B model
with ``--batch-size auto`` on an 80 GB card as on any other, since the plan depends on neither —
and ``packed`` the CPU default. Printed per task and layout: forward calls, distinct input shapes,
mean tokens per call (padding included), the padding share, and tokens forwarded over the unique
tokens the task needs (its distinct prefixes, each forwarded once).

``--observe TASK`` runs that task through ``proctor.evaluate`` on a tiny random Llama on the CPU with
``forward_layout=bucketed`` and compares the input shapes transformers' decoder saw (a forward
pre-hook, not proctor's counters) with the plan's.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROCTOR_DATA", REPO.parent / "shared" / "data")).resolve()
TASKS = {"arc_easy": 2376, "hellaswag": 10042}


def task_requests(task: str, limit: int, tokenizer_owner) -> list:
    """The task's distinct log-likelihood requests, as the engine builds them."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task
    from proctor.kinds.handlers import kind_handler
    from proctor.runs.executor import dedupe

    (spec,) = load_tasks([REPO / "examples" / "benchmarks" / f"{task}.yaml"])
    prepared = prepare_task(spec, {"PROCTOR_DATA": str(DATA)}, limit=limit)
    handler = kind_handler("multiple_choice")
    requests = [r for s in prepared.samples for r in handler.requests(spec.spec, s, s.prompt.render(tokenizer_owner))]
    return dedupe(requests)[0]


def plan(requests: list, model, layout) -> tuple[list, int]:
    """The forward calls of every engine call, and the task's unique tokens."""
    from proctor.models.hf.packing import pack
    from proctor.models.hf.scoring import loglikelihood_items, plan_loglikelihood
    from proctor.runs.executor import chunk_indices

    rules = (model.max_length, model.add_bos, model.prefix_token_id)
    calls = []
    for chunk in chunk_indices(requests, layout.chunk_requests):
        calls += plan_loglikelihood(model.tokenizer, [requests[i] for i in chunk], *rules, layout)
    (trie,) = pack(loglikelihood_items(model.tokenizer, requests, *rules), 10**12)  # its nodes: the distinct prefixes
    return calls, len(trie)


class _TokenizerOnly:
    """What planning needs of a model: its tokenizer and tokenising rules (no weights)."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoTokenizer

        from proctor.models.hf.loading import bos_rule

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.max_length = 2048
        self.add_bos, self.prefix_token_id = bos_rule(self.tokenizer, None)
        self.has_chat_template = False

    def apply_chat_template(self, messages):  # not used by these tasks
        raise NotImplementedError


def observe(task: str, limit: int, tokenizer_dir: Path) -> None:
    """Run the task on a tiny random Llama on the CPU with the bucketed layout; compare the shapes
    transformers' decoder saw with the plan's."""
    sys.path.insert(0, str(REPO))  # the repository root, for tests.support
    from transformers import AutoTokenizer

    from proctor import evaluate
    from proctor.models.hf.model import HFModel
    from tests.support.random_llama import TINY, save_random_llama

    with tempfile.TemporaryDirectory() as tmp:
        folder = save_random_llama(
            Path(tmp) / "tiny",
            AutoTokenizer.from_pretrained(tokenizer_dir),
            **{**TINY, "max_position_embeddings": 2048},
        )
        model = HFModel(folder, forward_layout="bucketed")
        seen: collections.Counter = collections.Counter()

        def hook(_module, args, kwargs):
            ids = kwargs.get("input_ids", args[0] if args else None)
            seen[tuple(ids.shape)] += 1

        model.model.get_decoder().register_forward_pre_hook(hook, with_kwargs=True)
        calls, _ = plan(task_requests(task, limit, model), model, model.layout)
        evaluate(
            [REPO / "examples" / "benchmarks" / f"{task}.yaml"],
            model,
            output_dir=Path(tmp) / "run",
            limit=limit,
            variables={"PROCTOR_DATA": str(DATA)},
            export=False,
        )
    planned = collections.Counter(c.shape for c in calls)
    print(
        f"{task} on the CPU with forward_layout=bucketed: transformers saw {sum(seen.values())} calls in "
        f"{len(seen)} shapes; the plan has {sum(planned.values())} in {len(planned)}; identical: {seen == planned}"
    )
    for shape in sorted(set(seen) | set(planned)):
        print(f"  {shape}: seen {seen[shape]}, planned {planned[shape]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", type=Path, help="a SmolLM2 tokenizer folder (default: the embedded model's)")
    parser.add_argument("--observe", choices=sorted(TASKS), help="also run this task on the CPU and compare shapes")
    parser.add_argument("--observe-limit", type=int, default=None)
    args = parser.parse_args()
    from proctor.models.default import default_model_path
    from proctor.models.hf.forward_plan import layout_for, plan_summary

    tokenizer_dir = args.tokenizer or default_model_path()
    model = _TokenizerOnly(tokenizer_dir)
    print(
        f"{'task':<10} {'layout':<9} {'calls':>6} {'shapes':>6} {'tokens/call':>11} "
        f"{'padding':>8} {'tokens/unique':>13}"
    )
    for task, rows in TASKS.items():
        requests = task_requests(task, rows, model)
        for name in ("bucketed", "packed"):
            calls, unique = plan(requests, model, layout_for(name, cuda=name == "bucketed"))
            s = plan_summary(calls, unique)
            print(
                f"{task:<10} {name:<9} {s['forward_calls']:>6} {s['distinct_shapes']:>6} "
                f"{s['mean_tokens_per_call']:>11.0f} {100 * s['padding_share']:>7.1f}% "
                f"{s['tokens_over_unique']:>13.3f}"
            )
    if args.observe:
        observe(args.observe, args.observe_limit or TASKS[args.observe], tokenizer_dir)


if __name__ == "__main__":
    main()
