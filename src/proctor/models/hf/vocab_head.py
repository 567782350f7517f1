"""The vocabulary projection at scored nodes: log-probs of the targets and greedy hits.

On a small model this is most of the scoring time (on the tests' 2-layer, width-64 Llama with
SmolLM2's 49,152-token vocabulary, the head is ~3/4 of the model phase). Two implementations,
``--model-arg vocab_head``:

- ``fused`` (the backend's default): a plain float32 ``nn.Linear`` head on the CPU runs as a C
  kernel built on the machine (``head_kernel``) that computes PyTorch's own numbers — MKL's
  logits and ATen's log-softmax, the same IEEE operations in the same order — without the
  separate passes over a [block, vocab] tensor: about twice as fast, bit-identical to PyTorch's
  head where MKL and ATen run their AVX2 code (a last-bit difference in ~0.3% of values, from the
  log). Where PyTorch runs AVX-512 kernels the kernel follows their order instead (ATen's 16
  lanes; MKL's k in halves where it runs its AVX-512 GEMM, which it does on Intel processors and
  not on AMD ones, so that is probed: ``head_kernel.order``), so its numbers are PyTorch's on each
  machine, as lm-evaluation-harness's are. The probe compares the whole head (log-probs and greedy
  hits, ATen's lanes included) with PyTorch's on the head's own weight when the model loads; where no
  order gives every bit, the kernel does not run: PyTorch's ops do, with a warning, and the
  fingerprint says ``torch (...)`` with the probe's best share.
- ``torch``, and every head the kernel does not take (CUDA, a bias, a softcap, hooks, another
  dtype or module): PyTorch's projection and log-softmax in fixed blocks and, on the CPU, into
  buffers allocated once (a fresh [64, 49,152] float32 tensor per block is 12.6 MB that the
  allocator maps and unmaps): lm-evaluation-harness's kernels.

Either way each node's numbers depend on its own hidden state alone (row-wise kernels, blocks
padded to ``packing.aligned`` sizes), so neither the block size, nor the buffers, nor the threads
change a bit.
"""

from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from proctor.models.hf import head_kernel
from proctor.models.hf.packing import aligned

if TYPE_CHECKING:
    import torch

# Scored nodes per block. On the CPU a [64, vocab] block stays in cache for the log-softmax and the
# maximum that follow the projection (1,024-node blocks ran the head 2.5x slower); on CUDA, larger
# blocks mean fewer kernel launches.
BLOCK_CPU = 64
BLOCK_CUDA = 1024
# The fused kernel keeps no [block, vocab] buffer; a larger block reads the weights from memory
# fewer times (once per block and thread).
BLOCK_FUSED = 1024
HEADS = ("torch", "fused")  # --model-arg vocab_head


class VocabularyHead:
    """A model's output embedding, applied to blocks of hidden states (see ``scores``)."""

    def __init__(self, head: torch.nn.Module, device: str, softcap: float | None = None, fused: bool = False) -> None:
        import torch

        self.head = head
        self.softcap = softcap
        self.cuda = str(device).startswith("cuda")
        self.block_size = BLOCK_CUDA if self.cuda else BLOCK_CPU
        weight = getattr(head, "weight", None)
        self._hook = getattr(head, "_hf_hook", None)  # accelerate's, on a sharded or offloaded head
        cpu_float32_linear = (
            not self.cuda and type(head) is torch.nn.Linear and weight is not None and weight.dtype == torch.float32
        )
        # The buffered path computes exactly what nn.Linear computes (F.linear is addmm / mm of the
        # transposed weight); any other head module, or a non-float32 one, is called as it is, and so is
        # an accelerate-placed head (offloaded weights).
        self._buffered = cpu_float32_linear and self._hook is None
        self._buffers: dict[str, torch.Tensor] = {}  # CPU only: name -> [block_size, vocab] float32, made on first use
        self.nodes_projected = 0  # hidden states projected so far (padding included): what benchmarks count
        # The fused C kernel, when asked for, for such a Linear without a bias or softcap, placed on the CPU
        # by accelerate or not (its weight brought in for the call): the same numbers either way.
        fusable = (
            fused and cpu_float32_linear and head.bias is None and not softcap and _computes_on_cpu(self._hook, weight)
        )
        self._kernel: ctypes.CDLL | None = head_kernel.load() if fusable else None
        # whose order the kernel follows: PyTorch's kernels' here, at this width, as the probe found it; where no
        # order reproduces PyTorch's head exactly, the kernel does not run (``refused`` says why)
        self.order = 0
        self.refused: str | None = None
        if self._kernel is not None and weight is not None:
            chosen = head_kernel.order(weight.shape[1], weight)
            if chosen is None:
                share = head_kernel.best_share(weight.shape[1], weight)
                self.refused = f"no order of the fused kernel reproduces PyTorch's head here (best {share:.2%} of bits)"
                self._kernel = None
            else:
                self.order = chosen
        # (weight's data pointer and version, packed weight, padded vocab)
        self._packed: tuple[tuple[int, int], torch.Tensor, int] | None = None
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (threads, pool)
        if self._kernel is not None:
            self.block_size = BLOCK_FUSED

    @property
    def implementation(self) -> str | None:
        """The fused kernel's version where it computes this head (part of the model fingerprint),
        None where PyTorch's ops do."""
        return head_kernel.version(self.order) if self._kernel is not None else None

    def _hooked(self) -> bool:
        """Forward hooks on the head (a steering control that edits logits) need the module called."""
        import torch

        modules = torch.nn.modules.module
        return bool(
            self.head._forward_hooks
            or self.head._forward_pre_hooks
            or modules._global_forward_hooks
            or modules._global_forward_pre_hooks
        )

    def _buffer(self, name: str, rows: int, width: int) -> torch.Tensor:
        """The first ``rows`` rows of the CPU buffer ``name``, ``width`` wide."""
        import torch

        if name not in self._buffers:
            self._buffers[name] = torch.empty((self.block_size, width))
        return self._buffers[name][:rows]

    def _project(self, hidden: torch.Tensor) -> torch.Tensor:
        import torch

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

    def fixed_rows(self, n: int) -> int:
        """Rows to pad a block of ``n`` nodes to so that no node's numbers depend on ``n``: the fused
        kernel works row by row, but MKL's product sums a row differently for other row counts
        (AVX2: 16, 32 and 48 rows against 64), so PyTorch's head on the CPU always gets full blocks."""
        if (self._kernel is not None and not self._hooked()) or self.cuda:
            return aligned(n)
        return self.block_size

    def scores(
        self, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs of ``targets`` and greedy hits, for a block of hidden states [nodes, width]
        (at most ``block_size``, padded to an aligned count) and (row, target) pairs into it.

        The log-prob is ``log_softmax(logits.float())[row, target]`` bit for bit; a hit means the
        target is the first index of the row's maximum (``argmax``, as lm-evaluation-harness checks
        greedy continuations)."""
        import torch

        assert len(hidden) == aligned(len(hidden)) and len(hidden) <= self.block_size
        self.nodes_projected += len(hidden)
        if self._kernel is not None and not self._hooked():
            return self._fused(hidden, rows, targets)
        logits = self._project(hidden)
        if rows.device != logits.device:  # a head on another device than the inputs (a sharded model)
            rows, targets = rows.to(logits.device), targets.to(logits.device)
        if self.cuda:
            return torch.log_softmax(logits, dim=-1)[rows, targets], logits.max(dim=-1).indices[rows] == targets
        logprobs = torch.log_softmax(logits, dim=-1, out=self._buffer("logprobs", *logits.shape))
        return logprobs[rows, targets], greedy_hits(logits, rows, targets)

    def _weights(self) -> tuple[torch.Tensor, int]:
        """The packed weight, made again if the weight was replaced or edited in place."""
        weight = self.head.weight
        stamp = (weight.data_ptr(), weight._version)
        if self._packed is None or self._packed[0] != stamp:
            assert self._kernel is not None  # packed only for the fused kernel
            packed, padded = head_kernel.pack(weight, head_kernel.tile(self._kernel))
            self._packed = (stamp, packed, padded)
        return self._packed[1], self._packed[2]

    def _fused(
        self, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``scores`` by the C kernel: log-sum-exp and first maximum per node (the nodes split over
        the intra-op threads), then each target's logit, in the same order of operations. An
        accelerate-placed head has its weight brought in (from disk or elsewhere) for the call, as
        its own forward would."""
        if self._hook is None:
            return self._fused_here(hidden, rows, targets)
        self._hook.pre_forward(self.head)
        try:
            return self._fused_here(hidden, rows, targets)
        finally:
            self._hook.post_forward(self.head, None)

    def _fused_here(
        self, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        kernel = self._kernel
        assert kernel is not None  # called only where the fused kernel computes the head
        packed, padded = self._weights()
        weight = self.head.weight.detach().contiguous()
        vocab, width = weight.shape
        hidden = hidden.detach().float().contiguous()
        rows, targets = rows.to(torch.int64).contiguous(), targets.to(torch.int64).contiguous()
        n = len(hidden)
        if len(targets) and not 0 <= int(targets.min()) <= int(targets.max()) < vocab:  # as indexing would refuse
            raise IndexError(f"a scored token id is outside the head's vocabulary of {vocab}")
        maxima, logsums, first = torch.empty(n), torch.empty(n), torch.empty(n, dtype=torch.int64)
        threads = max(1, min(torch.get_num_threads(), n // 16))
        args = (packed.data_ptr(), vocab, padded, width, hidden.data_ptr())
        outs = (maxima.data_ptr(), logsums.data_ptr(), first.data_ptr())
        codes = [kernel.proctor_head_stats_threads(*args, n, *outs, self.order, threads)]
        if codes == [-2]:  # built without OpenMP: the ranges on Python threads (ctypes releases the GIL)
            step = -(-n // threads)
            ranges = [(start, min(start + step, n)) for start in range(0, n, step)]
            if self._pool is None or self._pool[0] < threads:
                self._pool = (threads, ThreadPoolExecutor(max_workers=threads, thread_name_prefix="proctor-head"))
            stats = kernel.proctor_head_stats
            codes = list(self._pool[1].map(lambda r: stats(*args, *r, *outs, self.order), ranges))
        if any(codes):
            raise MemoryError("the fused vocabulary head could not allocate its buffers")
        logprobs, hits = head_kernel.pair_logprobs(
            kernel, weight, hidden, maxima, logsums, first, rows, targets, self.order
        )
        return logprobs, hits.bool()


def _computes_on_cpu(hook: Any, weight: torch.Tensor) -> bool:
    """Whether the head computes on the CPU: its weight is there, or accelerate's hook brings it
    there (an offloaded weight waits on the meta device; ``execution_device`` says where it runs)."""
    import torch

    if hook is None:
        return bool(weight.device.type == "cpu")
    device = getattr(hook, "execution_device", None)
    if device is None or isinstance(device, int):  # an int is a CUDA device index
        return device is None and bool(weight.device.type == "cpu")
    return bool(torch.device(device).type == "cpu")


def greedy_hits(logits: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Is each (row, target)'s target the first index of the row's maximum? ``argmax`` (and ``max``
    with indices) is several times slower than the value-only ``amax`` on the CPU, so values are
    compared, and only rows where the target reaches the maximum (where a tie before the target
    would decide) go through ``argmax``."""
    import torch

    at_target = logits[rows, targets]
    hits = at_target == logits.amax(dim=-1)[rows]
    candidates = torch.nonzero(hits).flatten()
    if len(candidates):
        hits[candidates] = logits[rows[candidates]].argmax(dim=-1) == targets[candidates]
    return hits
