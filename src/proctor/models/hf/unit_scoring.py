"""Log-likelihoods through scoring units (``unit_plan``): every request's numbers its own.

The ``units`` forward layout (the CPU default where the decoder's attention is plain): the requests
of an engine call are cut into units, the units run in calls of exactly ``CALL_TOKENS`` tokens with
``unit_attention``, and the vocabulary head runs at the tokens that predict a scored target, in
blocks whose row count does not depend on the call (``VocabularyHead.fixed_rows``). A request's
log-probs then come out the same, bit for bit, whatever else is in the run: ``--limit``, the task
mix, the order, ``--batch-size``, ``--workers``, the threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from proctor.core.errors import ModelLoadError, ProctorError
from proctor.models.hf.packing import ItemScores, ScoringItem
from proctor.models.hf.unit_attention import CallAttention, KeptValues, current, supported, unit_attention_scope
from proctor.models.hf.unit_plan import CALL_TOKENS, UnitPlan, plan_units
from proctor.models.hf.vocab_head import VocabularyHead
from proctor.models.memory import is_out_of_memory

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel


def score_units(
    decoder: PreTrainedModel,
    head: VocabularyHead,
    items: Sequence[ScoringItem],
    device: str,
    pad_token_id: int,
    on_done: Callable[[int], None] | None = None,
    call_tokens: int = CALL_TOKENS,
    model_name: str = "the model",
) -> tuple[list[ItemScores], int]:
    """Per item (``n_targets`` >= 1 each): (token log-probs, all-greedy flag); and the tokens the
    units hold (what was forwarded, the calls' padding aside)."""
    plan = plan_units(items, call_tokens)
    try:
        scored = _run(decoder, head, items, plan, device, pad_token_id, on_done)
    except Exception as exc:  # one call shape: nothing to halve (the packed rows halve theirs)
        if not is_out_of_memory(exc):
            raise
        raise ProctorError(
            f"scoring {model_name} ran out of memory in a call of {call_tokens} tokens; "
            "--model-arg forward_layout=packed scores in calls that are halved when memory runs out "
            "(a request's last bits then depend on what else is in its call)"
        ) from exc
    return scored, sum(len(unit.tokens) for unit in plan.units)


def default_layout(decoder: PreTrainedModel, cuda: bool) -> str:
    """``bucketed`` on CUDA; on the CPU ``units`` where the decoder's attention can be replaced by the
    units' (``unit_attention.supported``), else ``packed``."""
    if cuda:
        return "bucketed"
    return "units" if supported(decoder) is None else "packed"


def check_layout(name: str, decoder: PreTrainedModel, model_name: str) -> None:
    """``units`` asked for by name on a decoder it cannot score: an error that says why."""
    if name == "units" and (why := supported(decoder)):
        raise ModelLoadError(f"--model-arg forward_layout=units cannot score {model_name}: {why}")


def _run(
    decoder: PreTrainedModel,
    head: VocabularyHead,
    items: Sequence[ScoringItem],
    plan: UnitPlan,
    device: str,
    pad_token_id: int,
    on_done: Callable[[int], None] | None,
) -> list[ItemScores]:
    import torch

    call_tokens = plan.call_tokens
    logprobs = [np.zeros(item.n_targets) for item in items]
    hits = [np.zeros(item.n_targets, dtype=bool) for item in items]
    waiting = np.array([item.n_targets for item in items])
    kept = KeptValues()
    last_reader: dict[int, int] = {}  # call -> the last call that reads its kept keys and values
    for u in range(len(plan.units)):
        c = plan.placed[u][0]
        if plan.last_use[u] > c:
            last_reader[c] = max(last_reader.get(c, c), plan.last_use[u])
    with unit_attention_scope(decoder):
        for index, call in enumerate(plan.calls):
            ids = np.full(call_tokens, pad_token_id, dtype=np.int64)
            positions = np.zeros(call_tokens, dtype=np.int64)
            for u, column in zip(call.units, call.offsets):
                unit = plan.units[u]
                ids[column : column + len(unit.tokens)] = unit.tokens
                positions[column : column + len(unit.tokens)] = range(unit.start, unit.start + len(unit.tokens))
            attention = CallAttention(plan, index, kept, device)
            with current(attention):
                hidden = decoder(
                    input_ids=torch.from_numpy(ids[None]).to(device),
                    position_ids=torch.from_numpy(positions[None]).to(device),
                    use_cache=False,
                ).last_hidden_state[0]
            kept.drop([c for c, last in last_reader.items() if last == index])
            done = _head(head, hidden, call.scored, items, logprobs, hits, device)
            waiting_before = int((waiting > 0).sum())
            for i, count in done.items():
                waiting[i] -= count
            if on_done:
                on_done(waiting_before - int((waiting > 0).sum()))
    return [(tuple(lp.tolist()), bool(hit.all())) for lp, hit in zip(logprobs, hits)]


def _head(
    head: VocabularyHead,
    hidden: torch.Tensor,
    scored: Sequence[tuple[int, int, int]],
    items: Sequence[ScoringItem],
    logprobs: list[np.ndarray],
    hits: list[np.ndarray],
    device: str,
) -> dict[int, int]:
    """The head at the call's scored columns, in blocks of at most ``head.block_size`` distinct
    columns; fills ``logprobs`` and ``hits``; returns the targets filled per item."""
    import torch

    done: dict[int, int] = {}
    if not scored:
        return done
    columns = np.array([column for _, _, column in scored], dtype=np.int64)
    targets = np.array(
        [items[i].tokens[len(items[i].tokens) - items[i].n_targets + j] for i, j, _ in scored], dtype=np.int64
    )
    nodes, where = np.unique(columns, return_inverse=True)
    where = where.reshape(-1)
    parts, order = [], []
    for start in range(0, len(nodes), head.block_size):
        block = nodes[start : start + head.block_size]
        rows = head.fixed_rows(len(block))
        picked = np.concatenate([block, np.full(rows - len(block), block[-1])])
        mine = np.nonzero((where >= start) & (where < start + len(block)))[0]
        lp, hit = head.scores(
            hidden[torch.from_numpy(picked).to(device)],
            torch.from_numpy(where[mine] - start).to(device),
            torch.from_numpy(targets[mine]).to(device),
        )
        parts.append(torch.stack([lp.float(), hit.float()]))
        order.append(mine)
    values = torch.cat(parts, dim=1)
    if values.device.type != "cpu":
        values = values.to("cpu")
    host = values.numpy()  # the call's one copy to the host
    for k, s in enumerate(np.concatenate(order).tolist()):
        i, j, _ = scored[s]
        logprobs[i][j] = host[0, k]
        hits[i][j] = host[1, k] != 0
        done[i] = done.get(i, 0) + 1
    return done
