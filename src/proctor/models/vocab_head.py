"""The vocabulary projection at scored nodes: log-probs of the targets and greedy hits.

On a small model this is most of the scoring time (on the tests' 2-layer, width-64 Llama with
SmolLM2's 49,152-token vocabulary, the head is ~3/4 of the model phase), so it runs in fixed
blocks of nodes and, on the CPU, into buffers allocated once: a fresh [64, 49,152] float32 tensor
per block is 12.6 MB that the allocator maps and unmaps, and the page faults cost as much as the
log-softmax. Each node's numbers depend on its own row of logits alone (row-wise kernels, blocks
padded to ``packing.aligned`` sizes), so neither the block size nor the buffers change a bit.
"""

from __future__ import annotations

from proctor.models.packing import aligned

# Scored nodes per block. On the CPU a [64, vocab] block stays in cache for the log-softmax and the
# maximum that follow the projection (1,024-node blocks ran the head 2.5x slower); on CUDA, larger
# blocks mean fewer kernel launches.
BLOCK_CPU = 64
BLOCK_CUDA = 1024


class VocabularyHead:
    """A model's output embedding, applied to blocks of hidden states (see ``scores``)."""

    def __init__(self, torch, head, device: str, softcap: float | None = None) -> None:
        self.torch = torch
        self.head = head
        self.softcap = softcap
        self.cuda = str(device).startswith("cuda")
        self.block_size = BLOCK_CUDA if self.cuda else BLOCK_CPU
        weight = getattr(head, "weight", None)
        # The buffered path computes exactly what nn.Linear computes (F.linear is addmm / mm of the
        # transposed weight); any other head module, or a non-float32 one, is called as it is.
        self._buffered = (
            not self.cuda
            and type(head) is torch.nn.Linear
            and weight is not None
            and weight.dtype == torch.float32
            and getattr(head, "_hf_hook", None)
            is None  # an accelerate-placed head (offloaded weights) runs as a module
        )
        self._buffers: dict = {}  # CPU only: name -> [block_size, vocab] float32, made on first use
        self.nodes_projected = 0  # hidden states projected so far (padding included): what benchmarks count

    def _hooked(self) -> bool:
        """Forward hooks on the head (a steering control that edits logits) need the module called."""
        modules = self.torch.nn.modules.module
        return bool(
            self.head._forward_hooks
            or self.head._forward_pre_hooks
            or modules._global_forward_hooks
            or modules._global_forward_pre_hooks
        )

    def _buffer(self, name: str, rows: int, width: int):
        """The first ``rows`` rows of the CPU buffer ``name``, ``width`` wide."""
        if name not in self._buffers:
            self._buffers[name] = self.torch.empty((self.block_size, width))
        return self._buffers[name][:rows]

    def _project(self, hidden):
        torch = self.torch
        if not self._buffered or self._hooked():
            logits = self.head(hidden).float()
        else:
            logits = self._buffer("logits", len(hidden), self.head.weight.shape[0])
            if self.head.bias is None:
                torch.mm(hidden, self.head.weight.t(), out=logits)
            else:
                torch.addmm(self.head.bias, hidden, self.head.weight.t(), out=logits)
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits

    def scores(self, hidden, rows, targets):
        """Log-probs of ``targets`` and greedy hits, for a block of hidden states [nodes, width]
        (at most ``block_size``, padded to an aligned count) and (row, target) pairs into it.

        The log-prob is ``log_softmax(logits.float())[row, target]`` bit for bit; a hit means the
        target is the first index of the row's maximum (``argmax``, as lm-evaluation-harness checks
        greedy continuations)."""
        torch = self.torch
        assert len(hidden) == aligned(len(hidden)) and len(hidden) <= self.block_size
        self.nodes_projected += len(hidden)
        logits = self._project(hidden)
        if rows.device != logits.device:  # a head on another device than the inputs (a sharded model)
            rows, targets = rows.to(logits.device), targets.to(logits.device)
        if self.cuda:
            return torch.log_softmax(logits, dim=-1)[rows, targets], logits.max(dim=-1).indices[rows] == targets
        logprobs = torch.log_softmax(logits, dim=-1, out=self._buffer("logprobs", *logits.shape))
        return logprobs[rows, targets], greedy_hits(torch, logits, rows, targets)


def greedy_hits(torch, logits, rows, targets):
    """Is each (row, target)'s target the first index of the row's maximum? ``argmax`` (and ``max``
    with indices) is several times slower than the value-only ``amax`` on the CPU, so values are
    compared, and only rows where the target reaches the maximum (where a tie before the target
    would decide) go through ``argmax``."""
    at_target = logits[rows, targets]
    hits = at_target == logits.amax(dim=-1)[rows]
    candidates = torch.nonzero(hits).flatten()
    if len(candidates):
        hits[candidates] = logits[rows[candidates]].argmax(dim=-1) == targets[candidates]
    return hits
