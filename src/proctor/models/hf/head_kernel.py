"""The fused CPU vocabulary head (``kernels/vocab_head.c``): built once per machine, loaded with ctypes.

The C file ships with proctor and is compiled by the machine's C compiler (``$CC``, else ``cc``)
the first time a CPU model scores log-likelihoods (``vocab_head=fused``, the default), into
``PROCTOR_HOME/kernels`` (a temporary folder where that cannot be written), keyed by the source,
the compiler and the processor, so a home folder shared by machines of other kinds never loads a
build made for another. Where no compiler works, ``load`` gives None and the head runs as PyTorch
ops (``vocab_head``); the model's fingerprint says where the kernel computed its numbers (``VERSION``).

A block's hidden states are split over threads: built with OpenMP, the kernel runs them on the
process's OpenMP threads — PyTorch's own, whose libgomp is the one already loaded — so they do the
work instead of spinning beside it after each decoder call; built without, its calls release the
GIL (ctypes) and the head runs them on Python threads.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from proctor.core.home import proctor_home

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("kernels") / "vocab_head.c"
# In the model fingerprint where this kernel computes the head; raise it with any change to its numbers.
VERSION = "fused-2"
# IEEE order as written: fused multiply-adds only where the source asks for them, no fast-math reassociation.
FLAGS = ["-O3", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC", "-shared"]


def _compiler() -> str | None:
    name = os.environ.get("CC") or "cc"
    return shutil.which(name)


def _cpu_features() -> str:
    """The processor's feature flags (a -march=native build runs only where they match)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _build(compiler: str, folder: Path, flags: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "vocab_head.so"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        out = Path(tmp) / "vocab_head.so"
        command = [compiler, *FLAGS, *flags, "-o", str(out), str(SOURCE), "-lm"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise OSError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "compiler failed")
        os.replace(out, target)  # whole or not at all: a concurrent build writes the same bytes
    return target


def _key(compiler: str, flags: list[str]) -> str:
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    parts = [SOURCE.read_bytes().decode(), compiler, version, " ".join(FLAGS + flags), platform.machine()]
    if "-march=native" in flags:
        parts.append(_cpu_features())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


@lru_cache(maxsize=None)
def load() -> ctypes.CDLL | None:
    """The built kernel, or None (no compiler, or a failed build)."""
    compiler = _compiler()
    if compiler is None or not SOURCE.exists():
        log.info("no C compiler (set CC): the vocabulary head runs as PyTorch ops")
        return None
    reason: Exception | None = None
    homes = [proctor_home() / "kernels", Path(tempfile.gettempdir()) / f"proctor-kernels-{os.getuid()}"]
    # For this processor with OpenMP first; a compiler that refuses either builds without it.
    for flags in (["-march=native", "-fopenmp"], ["-march=native"], ["-fopenmp"], []):
        for home in homes:
            try:
                path = _build(compiler, home / _key(compiler, flags), flags)
                return _bind(ctypes.CDLL(str(path)))
            except (OSError, subprocess.SubprocessError) as exc:
                reason = exc
    log.info("the fused vocabulary head could not be built (%s): it runs as PyTorch ops", reason)
    return None


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    pointer, count = ctypes.c_void_p, ctypes.c_int64
    # (packed, vocab, padded, width, hidden, ...) then the outputs: maxima, log-sums, first maxima
    head = [pointer, count, count, count, pointer]
    outputs = [pointer, pointer, pointer]
    order = ctypes.c_int  # the order of PyTorch's kernels to follow (``order``)
    lib.proctor_head_stats.argtypes = [*head, count, count, *outputs, order]
    lib.proctor_head_stats.restype = ctypes.c_int
    lib.proctor_head_stats_threads.argtypes = [*head, count, *outputs, order, ctypes.c_int]
    lib.proctor_head_stats_threads.restype = ctypes.c_int
    # (weight, width, hidden, maxima, log-sums, first maxima, rows, targets, pairs, log-probs, hits, order)
    lib.proctor_head_targets.argtypes = [
        *[pointer, count, pointer, *outputs, pointer, pointer, count, pointer, pointer],
        order,
    ]
    lib.proctor_head_targets.restype = None
    lib.proctor_tile.argtypes = []
    lib.proctor_tile.restype = ctypes.c_int
    return lib


def tile(lib: ctypes.CDLL) -> int:
    """The packed layout's tile the build reads: vocabulary entries per micro-tile, as wide as the
    registers it was built for (the order of every logit's operations does not depend on it)."""
    return int(lib.proctor_tile())


# ``order`` (the kernel's argument): the log-softmax's lanes (8 or 16) in the low byte, and this bit
# where a logit's k is summed in halves (MKL's AVX-512 GEMM) rather than in blocks of 192 (its AVX2 one).
HALVES = 0x100
PROBE_ENTRIES = 2048  # weight rows of a probe without the head's weight (MKL's k order was the same from 512 to 49,152)
_PROBED: dict[tuple[int, int, int], dict[int, float]] = {}  # (width, weight rows, lanes) -> _probe's answer


def sum_lanes() -> int:
    """The lanes ATen's CPU log-softmax adds its terms in: as many float32 as its instruction set
    holds (16 where its capability is AVX-512, else 8)."""
    import torch

    return 16 if torch.backends.cpu.get_cpu_capability() == "AVX512" else 8


def pair_logprobs(
    lib: ctypes.CDLL,
    weight: torch.Tensor,
    hidden: torch.Tensor,
    maxima: torch.Tensor,
    logsums: torch.Tensor,
    first: torch.Tensor,
    rows: torch.Tensor,
    targets: torch.Tensor,
    order: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``proctor_head_targets``: the log-probs of (row, target) pairs, (logit - maximum) - log-sum,
    and their greedy hits (1.0 where the target is the row's first maximum). ``weight`` [vocab,
    width] and ``hidden`` [nodes, width] float32 and contiguous; rows and targets int64."""
    import torch

    logprobs, hits = torch.empty(len(rows)), torch.empty(len(rows))
    lib.proctor_head_targets(
        weight.data_ptr(),
        weight.shape[1],
        hidden.data_ptr(),
        maxima.data_ptr(),
        logsums.data_ptr(),
        first.data_ptr(),
        rows.data_ptr(),
        targets.data_ptr(),
        len(rows),
        logprobs.data_ptr(),
        hits.data_ptr(),
        order,
    )
    return logprobs, hits


def pair_logits(
    lib: ctypes.CDLL, weight: torch.Tensor, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor, order: int
) -> torch.Tensor:
    """The kernel's logits at (row, target) pairs, in ``order``: ``pair_logprobs`` with maximum and log-sum 0."""
    import torch

    zeros, first = torch.zeros(len(hidden)), torch.zeros(len(hidden), dtype=torch.int64)
    return pair_logprobs(lib, weight, hidden, zeros, zeros, first, rows, targets, order)[0]


def candidates() -> tuple[int, ...]:
    """The kernel's orders a probe tries: ATen's lanes (8 or 16), MKL's k in blocks or in halves; the order of
    PyTorch's reported capability first (the one kept where several reproduce PyTorch's head)."""
    lanes = sum_lanes()
    default = lanes | (HALVES if lanes == 16 else 0)
    others = [order for order in (8, 16, 8 | HALVES, 16 | HALVES) if order != default]
    return (default, *others)


def _probe(width: int, weight: torch.Tensor | None = None) -> dict[int, float]:
    """For each of the kernel's orders at ``width`` (``candidates``): the share of its log-probs and greedy hits
    that are PyTorch's head's, every bit (1.0: all) — ``log_softmax(mm(hidden, weight.t()))`` at 16 nodes (random,
    seeded) and 256 targets each (each node's greedy token among them), ``weight`` the head's own where it is on the
    CPU in float32, else ``PROBE_ENTRIES`` random rows. The whole head is compared, so both the GEMM's order of a
    logit (MKL's, which MKL picks by processor) and the log-softmax's lanes (ATen's) are read off this machine."""
    import torch

    lib = load()
    if lib is None:
        return {}
    if weight is not None and (weight.device.type != "cpu" or weight.dtype != torch.float32):
        weight = None  # an offloaded head's weight waits on the meta device
    key = (width, PROBE_ENTRIES if weight is None else len(weight), sum_lanes())
    if key in _PROBED:
        return _PROBED[key]
    generator = torch.Generator().manual_seed(width)
    if weight is None:
        weight = torch.randn(PROBE_ENTRIES, width, generator=generator)
    weight = weight.detach().contiguous()
    vocab, nodes, per_node = len(weight), 16, 256
    hidden = torch.randn(nodes, width, generator=generator) * 3.0
    with torch.no_grad():
        logits = torch.mm(hidden, weight.t())
        expected = torch.log_softmax(logits, dim=-1)
        greedy = logits.argmax(dim=-1)
    rows = torch.arange(nodes).repeat_interleave(per_node)
    targets = torch.randint(0, vocab, (nodes * per_node,), generator=generator)
    targets[::per_node] = greedy  # every node's greedy token once: the hits are compared too
    want_values, want_hits = expected[rows, targets], greedy[rows] == targets
    packed, padded = pack(weight, tile(lib))
    found: dict[int, float] = {}
    for candidate in candidates():
        maxima, logsums, first = torch.empty(nodes), torch.empty(nodes), torch.empty(nodes, dtype=torch.int64)
        outs = (maxima.data_ptr(), logsums.data_ptr(), first.data_ptr())
        if lib.proctor_head_stats(
            packed.data_ptr(), vocab, padded, width, hidden.data_ptr(), 0, nodes, *outs, candidate
        ):
            return {}  # out of memory in a probe: no verdict, so no kernel
        values, hits = pair_logprobs(lib, weight, hidden, maxima, logsums, first, rows, targets, candidate)
        found[candidate] = float(((values == want_values) & (hits.bool() == want_hits)).double().mean())
    _PROBED[key] = found
    return found


def order(width: int, weight: torch.Tensor | None = None) -> int | None:
    """The kernel's order that reproduces PyTorch's head at ``width`` exactly (``_probe``, with the head's
    ``weight`` where it is given), or None where none does (a PyTorch, MKL or processor whose order the kernel
    does not follow): the head then runs as PyTorch's ops. Where several do, the order of PyTorch's capability
    (``candidates``' first). So lm-evaluation-harness's numbers, which are PyTorch's, are the kernel's on each
    machine, or the kernel does not run."""
    shares = _probe(width, weight)
    exact = [candidate for candidate in candidates() if shares.get(candidate) == 1.0]
    return exact[0] if exact else None


def best_share(width: int, weight: torch.Tensor | None = None) -> float:
    """The probe's closest order's share of PyTorch's bits (for the fingerprint and the warning where none is exact)."""
    return max(_probe(width, weight).values(), default=0.0)


def follows_pytorch(width: int, weight: torch.Tensor | None = None) -> bool:
    """Whether one of the kernel's orders reproduces PyTorch's head at ``width``, every bit (the probe's verdict)."""
    return order(width, weight) is not None


def version(order: int) -> str:
    """The fingerprint's name for the kernel computing in ``order`` (the names of the two orders
    that were all there were are kept: 8 lanes with blocks, 16 with halves)."""
    lanes = order & 0xFF
    name = VERSION if lanes == 8 else f"{VERSION}-avx512"
    if bool(order & HALVES) != (lanes == 16):
        name += "-khalves" if order & HALVES else "-kblocks"
    return name


def pack(weight: torch.Tensor, tile: int) -> tuple[torch.Tensor, int]:
    """The weight [vocab, width] as a build of the kernel reads it (``tile(lib)``): tiles of
    ``tile`` vocabulary entries, [padded / tile, width, tile], padded with zero rows to a multiple
    of ``tile`` entries."""
    import torch

    vocab, width = weight.shape
    padded = -(-vocab // tile) * tile
    rows = torch.zeros((padded, width), dtype=torch.float32)
    rows[:vocab] = weight.detach()
    return rows.view(padded // tile, tile, width).permute(0, 2, 1).contiguous(), padded
