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

from proctor.models.default import proctor_home

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
    lanes = ctypes.c_int  # the order of PyTorch's kernels to follow (``lanes``)
    lib.proctor_head_stats.argtypes = [*head, count, count, *outputs, lanes]
    lib.proctor_head_stats.restype = ctypes.c_int
    lib.proctor_head_stats_threads.argtypes = [*head, count, *outputs, lanes, ctypes.c_int]
    lib.proctor_head_stats_threads.restype = ctypes.c_int
    # (weight, width, hidden, maxima, log-sums, first maxima, rows, targets, pairs, log-probs, hits, lanes)
    lib.proctor_head_targets.argtypes = [
        *[pointer, count, pointer, *outputs, pointer, pointer, count, pointer, pointer],
        lanes,
    ]
    lib.proctor_head_targets.restype = None
    lib.proctor_tile.argtypes = []
    lib.proctor_tile.restype = ctypes.c_int
    return lib


def tile(lib: ctypes.CDLL) -> int:
    """The packed layout's tile the build reads: vocabulary entries per micro-tile, as wide as the
    registers it was built for (the order of every logit's operations does not depend on it)."""
    return int(lib.proctor_tile())


def lanes(torch) -> int:
    """Whose rounding the kernel follows: PyTorch's CPU kernels add a log-softmax's terms in as many
    float32 lanes as their instruction set holds (8 with AVX2, 16 with AVX-512) and MKL blocks a
    GEMM's k by it too, so the kernel computes in the order of the kernels PyTorch runs here (16
    where its capability is AVX-512, else 8); lm-evaluation-harness's numbers on this machine are
    PyTorch's."""
    return 16 if torch.backends.cpu.get_cpu_capability() == "AVX512" else 8


def version(lanes: int) -> str:
    """The fingerprint's name for the kernel computing in the order of ``lanes``."""
    return VERSION if lanes == 8 else f"{VERSION}-avx512"


def pack(torch, weight, tile: int):
    """The weight [vocab, width] as a build of the kernel reads it (``tile(lib)``): tiles of
    ``tile`` vocabulary entries, [padded / tile, width, tile], padded with zero rows to a multiple
    of ``tile`` entries."""
    vocab, width = weight.shape
    padded = -(-vocab // tile) * tile
    rows = torch.zeros((padded, width), dtype=torch.float32)
    rows[:vocab] = weight.detach()
    return rows.view(padded // tile, tile, width).permute(0, 2, 1).contiguous(), padded
