"""Overhead outside the model: building prompts and requests, and indexing task files.

    python benchmarks/overhead.py

Targets (issue: fastest scoring engine): under 1 ms per 3-shot multiple-choice sample for
prompts + requests, and under 1 s to index a folder of 1,000 task files.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROCTOR_DATA", REPO.parent / "shared" / "data")).resolve()


def prompt_building() -> tuple[float, int]:
    from proctor.api import load_tasks
    from proctor.core.data_spec import FewShotSpec
    from proctor.core.task import Task
    from proctor.data.sources import load_samples
    from proctor.engine.prepare import prepare_task
    from proctor.kinds.handlers import kind_handler

    (task,) = load_tasks([REPO / "examples" / "benchmarks" / "arc_easy.yaml"])
    spec = task.spec.model_copy(update={"fewshot": FewShotSpec(count=3)})
    task = Task(spec, task.file, task.base_dir, task.dialect, task.line, task.lines)
    handler = kind_handler("multiple_choice")
    variables = {"PROCTOR_DATA": str(DATA)}
    start = time.perf_counter()
    load_samples(spec.data, task.base_dir, variables)
    reading = time.perf_counter() - start
    start = time.perf_counter()
    prepared = prepare_task(task, variables)
    requests = [handler.requests(spec, s, s.prompt.text) for s in prepared.samples]
    seconds = time.perf_counter() - start
    return seconds - reading, len(requests)


def indexing(n: int = 1000) -> float:
    from proctor.api import load_tasks

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            folder = Path(tmp) / f"group{i % 20}"
            folder.mkdir(exist_ok=True)
            (folder / f"task{i}.yaml").write_text(
                textwrap.dedent(
                    f"""
                    name: task_{i}
                    kind: multiple_choice
                    version: 1
                    data: data_{i}.jsonl
                    prompt: "Question: {{{{ question }}}}\\nAnswer:"
                    choices: "{{{{ choices }}}}"
                    target: "{{{{ label }}}}"
                    metrics: [acc, acc_norm]
                    """
                )
            )
        start = time.perf_counter()
        tasks = load_tasks([tmp])
        seconds = time.perf_counter() - start
        assert len(tasks) == n
    return seconds


def main() -> None:
    seconds, n = prompt_building()
    print(
        f"prompts + requests, 3-shot ARC-Easy: {n} samples in {seconds:.3f} s = {1000 * seconds / n:.3f} "
        "ms per sample (data reading excluded)"
    )
    print(f"indexing 1000 task files: {indexing():.3f} s")


if __name__ == "__main__":
    main()
