"""Run SEA-HELM's own ONERULER generator once on the files of ``tests/support/oneruler_inputs.py`` and record its rows.

Not a test: it needs a SEA-HELM checkout (its ``src`` package and its ``seahelm_tasks/long_context/oneruler``
dataloaders, nothing of which is in this project) and SEA-HELM's own dependencies (``omegaconf``, ``ujson``,
``datasets``, ``pandas``, ``transformers``; CWE's ``batch_encode_plus``, gone from transformers 5, is given the
tokenizer's ``__call__``, as proctor gives it):

    python tests/support/data/seahelm_oneruler/record_upstream.py SEAHELM_CHECKOUT TOKENIZER_DIR OUT.json

It lays out a SEA-HELM root in a temporary folder (the checkout's ``src``, its NIAH / CWE dataloader and metric
files, this project's configs, books and vocabularies), then, from that root as SEA-HELM runs, builds each
task's ``TaskConfig`` from the OmegaConf-loaded config, the dataloader with ``model_name=TOKENIZER_DIR``, calls
``load_dataset(None)`` and ``prepare_conversations_for_inference(1, True)``, and records per row the label, the
conversation's roles, and the SHA-256 (UTF-8) and length of its last message, the prompt the model is sent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[4]))  # the repository root, for tests.support.oneruler_inputs

WORKER = r"""
import hashlib, json, sys
from omegaconf import OmegaConf
from transformers.tokenization_utils_base import PreTrainedTokenizerBase
from src.task_config import TaskConfig

# CWE calls tokenizer.batch_encode_plus, which transformers 5 (SEA-HELM pins 5.12.0) no longer has; under
# transformers 4 it returned what __call__ returns for a list of texts
if not hasattr(PreTrainedTokenizerBase, "batch_encode_plus"):
    PreTrainedTokenizerBase.batch_encode_plus = PreTrainedTokenizerBase.__call__

tokenizer, out = sys.argv[1], sys.argv[2]
recorded = {}
for config_file in ("seahelm_tasks/long_context/oneruler/niah/config.yaml", "seahelm_tasks/long_context/oneruler/cwe/config.yaml"):
    tasks = OmegaConf.load(config_file)
    OmegaConf.resolve(tasks)
    for task_name in tasks:
        for lang in tasks[task_name]["languages"]:
            task_config = TaskConfig(config=tasks[task_name], task_name=task_name, lang=lang, seed=0)
            loader = task_config.get_dataloader_class()(task_config, 0, model_name=tokenizer)
            loader.load_dataset(None)
            conversations = loader.prepare_conversations_for_inference(1, True)
            labels = loader.dataset["label"]
            recorded[f"{task_name}/{lang}"] = [
                {"label": list(label), "roles": [m["role"] for m in c],
                 "sha256": hashlib.sha256(c[-1]["content"].encode()).hexdigest(), "chars": len(c[-1]["content"])}
                for label, c in zip(labels, conversations)
            ]
json.dump(recorded, open(out, "w"), indent=1, ensure_ascii=False)
"""


def main(checkout: str, tokenizer: str, out: str) -> None:
    from tests.support.oneruler_inputs import write_inputs

    source = Path(checkout)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(source / "src", root / "src")
        write_inputs(root)
        for task, files in {"niah": ("niah_dataloader.py", "niah_metric.py"), "cwe": ("cwe_dataloader.py", "cwe_metric.py")}.items():
            for name in files:
                shutil.copy(source / "seahelm_tasks" / "long_context" / "oneruler" / task / name, root / "seahelm_tasks" / "long_context" / "oneruler" / task / name)
        (root / "worker.py").write_text(WORKER)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
        subprocess.run([sys.executable, "worker.py", str(Path(tokenizer).resolve()), str(Path(out).resolve())], cwd=root, env=env, check=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
