"""GLM-130B's decoding strategies (its ``generation`` package): greedy / top-k sampling and its beam
search, with GLM's interface (``forward(logits, tokens, mems)``, ``is_done``, ``finalize``) so that
task code subclassing them (GLM's LAMBADA strategy) runs unchanged.

Beam search as GLM's: scores are summed log-softmax values; finished beams are ranked by
``score / ((5 + length) / 6) ** length_penalty`` (OpenNMT); ``no_repeat_ngram_size`` bans a token that
would repeat an n-gram of the beam; end tokens are banned before ``min_gen_length``; ``deterministic``
takes the top candidates instead of sampling; ``consider_end`` adds unfinished beams at the end.
``mems`` is carried and reordered like GLM's memory cache (proctor passes a small stand-in tensor).
"""

from __future__ import annotations

import numpy as np

BANNED = -65504.0  # GLM's fp16-safe "minus infinity"


def top_k_logits(logits, top_k: int = 0, top_p: float = 0.0, filter_value: float = -float("inf")):
    """Keep the top-k logits (and/or the nucleus of mass top_p); the rest get ``filter_value``."""
    import torch

    if top_k > 0:
        kth = torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(logits < kth, filter_value)
    if top_p > 0.0:
        ordered, indices = torch.sort(logits, descending=True)
        cumulative = torch.cumsum(torch.softmax(ordered, dim=-1), dim=-1)
        remove = cumulative > top_p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        logits = logits.masked_fill(remove.scatter(-1, indices, remove), filter_value)
    return logits


class BaseStrategy:
    """Sampling with temperature, top-k / top-p; GLM's evaluation uses top_k=1 (greedy)."""

    def __init__(self, batch_size, invalid_slices=(), temperature=1.0, top_k=200, eps=1e-4, top_p=0.0, end_tokens=None):
        self.batch_size = batch_size
        self.invalid_slices = list(invalid_slices)
        self.temperature = temperature
        self.topk = top_k
        self.top_p = top_p
        self.eps = eps
        self.end_tokens = list(end_tokens or [])
        self._is_done = np.zeros(self.batch_size, dtype=bool)

    @property
    def is_done(self) -> bool:
        return bool(self._is_done.all())

    def forward(self, logits, tokens, mems, temperature=None):
        import torch

        logits = logits.reshape(-1, logits.size(-1)).float() / (temperature or self.temperature)
        for invalid in self.invalid_slices:
            logits[..., invalid] = BANNED
        logits = top_k_logits(logits, self.topk, self.top_p)
        if self.topk == 1:
            pred = logits.argmax(dim=-1, keepdim=True)  # greedy: no random draw needed
        else:
            pred = torch.multinomial(torch.softmax(logits, dim=-1), num_samples=1)
        n = tokens.shape[0]
        for i in range(self.batch_size):
            if i >= n:
                self._is_done[i] = True
            elif self._is_done[i]:
                pred[i] = -1
            elif int(pred[i]) in self.end_tokens:
                self._is_done[i] = True
        return torch.cat((tokens, pred.view(tokens.shape[:-1] + (1,))), dim=-1), mems

    def finalize(self, tokens, mems):
        self._is_done = np.zeros(self.batch_size, dtype=bool)
        return tokens, mems


class BeamSearchStrategy:
    def __init__(
        self,
        batch_size,
        num_beams,
        length_penalty=1.0,
        consider_end=False,
        end_tokens=(),
        invalid_slices=(),
        no_repeat_ngram_size=0,
        min_gen_length=0,
        deterministic=False,
    ):
        self.batch_size = batch_size
        self.num_beams = num_beams
        self.length_penalty = length_penalty
        self.end_tokens = list(end_tokens)
        self.ngram = no_repeat_ngram_size
        self.min_gen_length = min_gen_length
        self.invalid_slices = list(invalid_slices)
        self.consider_end = consider_end
        self.deterministic = deterministic
        self._init_cache()

    def _init_cache(self):
        self.end_beams = [[] for _ in range(self.batch_size)]
        self.end_beams_penalized_scores = [[] for _ in range(self.batch_size)]
        self.cached_beam_scores = 0
        self.cached_beam_ngram_bans = [[{} for _ in range(self.num_beams)] for _ in range(self.batch_size)]
        self.length_generated = 0
        self._is_done = np.zeros(self.batch_size, dtype=bool)

    @property
    def is_done(self) -> bool:
        return bool(self._is_done.all())

    def _penalised(self, score, length: int) -> float:
        return float(score) / ((5.0 + length) / 6) ** self.length_penalty

    def _add_end_beams(self, score, beam, batch_idx):
        """Insert a finished beam in score order; keep the best ``num_beams``."""
        score = self._penalised(score, len(beam))
        ranked = self.end_beams_penalized_scores[batch_idx]
        position = len(ranked)
        while position > 0 and score >= ranked[position - 1]:
            position -= 1
        self.end_beams[batch_idx].insert(position, beam)
        ranked.insert(position, score)
        del self.end_beams[batch_idx][self.num_beams :]
        del ranked[self.num_beams :]

    def forward(self, logits, tokens, mems):
        import torch
        import torch.nn.functional as F

        batch_size, num_beams, vocab_size = logits.shape
        seq_len = tokens.shape[-1]
        logits = logits.float()
        for invalid in self.invalid_slices:
            logits[..., invalid] = BANNED
        if self.min_gen_length > self.length_generated:
            for end in self.end_tokens:
                logits[..., end] = BANNED
        if self.ngram > 0 and seq_len > self.ngram:
            for b in range(batch_size):
                for i in range(num_beams):
                    prefix = tuple(tokens[b, i, -(self.ngram - 1) :].tolist())
                    for banned in self.cached_beam_ngram_bans[b][i].get(prefix, ()):
                        logits[b, i, banned] = BANNED
        scores = F.log_softmax(logits, dim=-1)
        if isinstance(self.cached_beam_scores, torch.Tensor):
            scores = scores + self.cached_beam_scores[..., None]
        scores = scores.reshape(batch_size, num_beams * vocab_size)
        probs = F.softmax(scores, dim=-1)
        if num_beams < self.num_beams:  # the first step: one beam per item
            probs = probs[..., :vocab_size]
        k = (max(1, len(self.end_tokens)) + 1) * self.num_beams
        if self.deterministic:
            candidates = torch.topk(probs, k=k).indices
        else:
            candidates = torch.multinomial(probs, num_samples=k)
        candidate_scores = scores[torch.arange(batch_size).unsqueeze(1), candidates]
        candidate_scores, order = torch.sort(candidate_scores, descending=True, dim=1)
        candidates = candidates[torch.arange(batch_size).unsqueeze(1), order]
        parents = torch.div(candidates, vocab_size, rounding_mode="trunc")
        next_tokens = candidates % vocab_size

        beams_out, mems_out, scores_out = [], [], []
        for b in range(batch_size):
            kept, kept_mems, kept_scores, kept_bans = [], [], [], []
            for i in range(len(next_tokens[b])):
                parent, token = parents[b, i], next_tokens[b, i : i + 1]
                beam = torch.cat((tokens[b, parent], token))
                if not self._is_done[b] and int(token) in self.end_tokens:
                    self._add_end_beams(candidate_scores[b, i], beam, b)
                elif len(kept) < self.num_beams:
                    kept.append(beam)
                    kept_mems.append(mems[:, b, parent])
                    kept_scores.append(candidate_scores[b, i])
                    if self.ngram > 0:
                        bans = self.cached_beam_ngram_bans[b][int(parent)].copy()
                        prefix = tuple(tokens[b, parent, -(self.ngram - 1) :].tolist())
                        bans[prefix] = bans.get(prefix, ()) + (int(token),)
                        kept_bans.append(bans)
                else:
                    break
            beams_out.append(torch.stack(kept))
            mems_out.append(torch.stack(kept_mems, dim=1))
            scores_out.append(kept_scores)
            self.cached_beam_ngram_bans[b] = kept_bans
        tokens = torch.stack(beams_out)
        mems = torch.stack(mems_out, dim=1)
        self.cached_beam_scores = torch.tensor(scores_out, device=logits.device)
        self.length_generated += 1
        for b in range(self.batch_size):
            # a beam past the batch, or a full set of finished beams that no running beam can beat
            if b >= batch_size or (
                len(self.end_beams[b]) == self.num_beams
                and self.end_beams_penalized_scores[b][-1]
                >= self._penalised(self.cached_beam_scores[b].max(), seq_len + 1)
            ):
                self._is_done[b] = True
        return tokens, mems

    def finalize(self, tokens, mems):
        if not self.consider_end:
            self._init_cache()
            return tokens, mems
        batch_size, num_beams = tokens.shape[:2]
        for b in range(batch_size):
            if not self._is_done[b]:
                for i in range(num_beams):
                    self._add_end_beams(self.cached_beam_scores[b, i], tokens[b, i], b)
        result = self.end_beams[:batch_size]
        self._init_cache()
        return result, None
