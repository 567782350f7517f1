"""GLM's ``ModelForEvaluation`` (``cond_log_prob``, ``generate_text``, ``calculate_loss``) over a proctor
model, for the batches built by ``proctor.dialects.glm.dataset``.

A causal model scores a choice as the continuation of its context: ``[BOS] + context + choice``, the
sum of the choice tokens' log-probs (GLM: choices behind [MASK] / [gMASK] with block attention).
Generation runs GLM's decoding loop: each step gives the strategy the next-token logits of every
beam, and the strategy picks tokens (so a task's own strategy subclass works); there is no key/value
cache, every step re-reads the sequence. Logits are padded to GLM's vocabulary size with a banned
value, so token ids written for GLM's tokenizer (LAMBADA bans ids up to 146337) index safely.
"""

from __future__ import annotations

from typing import Any, List

from proctor.kinds.token_scores import next_token_logits, target_logprobs

GLM_VOCAB = 150528
WHAT = "a GLM-130B task class"


class ModelForEvaluation:
    def __init__(self, model: Any) -> None:
        self.model = model  # the proctor model
        self.device = getattr(model, "device", "cpu")
        self.prefix = [model.prefix_token_id] if getattr(model, "add_bos", False) else []

    def _context(self, tokens) -> list[int]:
        context = self.prefix + [int(t) for t in tokens if int(t) >= 0]
        if not context:  # nothing to condition on: the model's start token (as proctor's HF backend does)
            context = [int(getattr(self.model, "prefix_token_id", 0) or 0)]
        return context

    def cond_log_prob(self, batch) -> List[List[float]]:
        """Per item, the summed log-prob of each choice given its context."""
        sequences, counts, shape = [], [], []
        for tokens, choices in zip(batch["tokens"], batch["choice_target_ids"]):
            context = self._context(tokens)
            shape.append(len(choices))
            for choice in choices:
                sequences.append(context + [int(t) for t in choice])
                counts.append(len(choice))
        scores = iter(target_logprobs(self.model, sequences, counts, WHAT))
        return [[float(sum(next(scores))) for _ in range(n)] for n in shape]

    def calculate_loss(self, batch) -> List[float]:
        """Per window, the summed negative log-likelihood of its scored tokens (after [BOS] + prompt)."""
        sequences, counts = [], []
        for prompt, text in zip(batch["prompt"], batch["text"]):
            sequences.append(self._context(prompt) + [int(t) for t in text])
            counts.append(len(text))
        return [-float(sum(lp)) for lp in target_logprobs(self.model, sequences, counts, WHAT)]

    def generate_text(self, batch, strategy, return_all_beams=False):
        """GLM's batch_filling_sequence + output trimming: generated token ids after the context, cut at
        the first -1 and before a final end token; beams best first."""
        import torch

        contexts = [self._context(t) for t in batch["tokens"]]
        max_gen_length = int(batch.get("max_gen_length") or 128)
        n_items = len(contexts)
        width = max(len(c) for c in contexts)
        # GLM left-aligns contexts in one tensor; proctor keeps each context's own length and pads on
        # the left with -1 (skipped when the model reads a sequence)
        tokens = torch.tensor([[-1] * (width - len(c)) + c for c in contexts], dtype=torch.long)
        # GLM's memory cache [layers, batch, beams, length, hidden]: reordered by beam search, unused here
        mems = torch.zeros((1, n_items, 1, 1, 1))
        tokens = tokens.reshape(n_items, 1, -1)
        for _ in range(max_gen_length):
            beams = tokens.shape[1]
            rows = tokens.reshape(n_items * beams, -1).tolist()
            logits = next_token_logits(self.model, [[t for t in row if t >= 0] for row in rows], WHAT)
            if logits.shape[-1] < GLM_VOCAB:
                logits = torch.nn.functional.pad(logits, (0, GLM_VOCAB - logits.shape[-1]), value=-65504.0)
            tokens, mems = strategy.forward(logits.reshape(n_items, beams, -1), tokens, mems)
            if strategy.is_done:
                break
        output, _ = strategy.finalize(tokens, mems)
        if isinstance(output, torch.Tensor):
            output = output.tolist()
        results = []
        for lines in output:
            lines = lines.tolist() if hasattr(lines, "tolist") else lines
            if not isinstance(lines, list) or (lines and not isinstance(lines[0], (list, torch.Tensor))):
                lines = [lines]
            trimmed = []
            for line in lines:
                line = line.tolist() if hasattr(line, "tolist") else list(line)
                unfinished = line.index(-1, width) if -1 in line[width:] else len(line)
                if unfinished > width and line[unfinished - 1] in strategy.end_tokens:
                    unfinished -= 1
                trimmed.append(line[width:unfinished])
            results.append(trimmed if return_all_beams else trimmed[0])
        return results
