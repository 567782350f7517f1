"""PyTorch as the local backends load it computes the same bits in every process (``torch_runtime``).

Without the set-up, about one fresh process in four computed its first multi-threaded ``cos`` (a
Llama's rotary embedding) wrong in the second thread's half, by up to ~1e-4: the same command
then gave other log-likelihoods in a few percent of the values from one run to the next.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

# In a fresh process: load torch as the backends do, then the first parallel call of each
# function (a tensor large enough for two threads) must equal a later one.
FIRST_CALLS = """
from proctor.models.torch_runtime import load_torch
torch = load_torch("hf", "the test")
torch.set_num_threads(2)
x = torch.linspace(0, 400, 5888)
wrong = 0
for name in ("cos", "sin", "exp", "tanh", "log"):
    f = getattr(torch, name)
    first = f(x)
    wrong += int((first != f(x)).sum())
print(wrong)
"""


def test_the_first_parallel_math_call_of_a_process_is_right():
    procs = []
    for _ in range(12):  # a one-in-four failure is caught 31 times in 32
        procs.append(subprocess.Popen([sys.executable, "-c", FIRST_CALLS], stdout=subprocess.PIPE, text=True))
        if len(procs) % 2 == 0:  # two at a time: the machine has two cores
            for proc in procs[-2:]:
                proc.wait(timeout=300)
    outputs = [proc.communicate(timeout=300)[0].strip() for proc in procs]
    assert outputs == ["0"] * len(procs)
