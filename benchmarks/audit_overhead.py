"""What the audit stage adds to `proctor validate` on a large task (issue 45: at most 5%).

    python benchmarks/audit_overhead.py [--rows 100000] [--repeat 3] [--fewshot 0] [--in-process 0]

Writes, in a temporary folder, a native multiple-choice task of ``--rows`` rows (a question, four choices of
a few words, a label; ``--fewshot N`` examples per row from a separate dev file), then runs `proctor validate`
on it as a user does, each run a fresh process: with the audit's rules in force, and with none (the same
command through a wrapper that gives the stage an empty rule list before proctor is imported, so that the
rule modules are not imported either: proctor as it would be without them), alternating, ``--repeat`` times
each. Both read proctor's compiled bytecode from a cache in the temporary folder, written by a first run that
is not counted, as an installed proctor does (a checkout run with PYTHONDONTWRITEBYTECODE would compile all
of proctor in every process, on both sides). Prints the medians of the wall clock and of the CPU seconds (the
process's user + system time, steadier on a shared machine) and the ratios; asserts nothing
(docs/performance.md records the figures).

``--in-process N`` also times ``stage.audit`` itself N times within one process, on the task as
``engine/prepare`` hands it over (each time a fresh subject, so that nothing the rules share is kept from the
time before): the CPU milliseconds of each, which the load of a shared machine moves less than a process's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = "red green blue amber violet teal ochre umber river stone cloud paper north south glass iron".split()
WITHOUT_RULES = (
    "import sys, types; rules = types.ModuleType('proctor.audit.rules'); rules.BUILTIN_RULES = (); "
    "sys.modules['proctor.audit.rules'] = rules; from proctor.cli import main; main(sys.argv[1:])"
)
IN_PROCESS = """
import dataclasses, sys, time
import proctor.engine.prepare as prepare
from proctor.audit import stage
from proctor.cli import main

subjects = []
audit = prepare.audit
prepare.audit = lambda subject, **options: subjects.append(subject) or audit(subject, **options)
try:
    main(["validate", sys.argv[1]])
except SystemExit:
    pass
for _ in range(int(sys.argv[2])):
    subject = dataclasses.replace(subjects[0])  # nothing cached from the time before
    started = time.process_time()
    stage.audit(subject)
    print(f"audit-ms {1000 * (time.process_time() - started):.1f}")
"""


def write_task(folder: Path, rows: int, fewshot: int) -> Path:
    rng = random.Random(0)

    def phrase(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    def row(i: int, prefix: str) -> dict:
        return {
            "id": f"{prefix}{i}",
            "question": f"Question {i}: which colour goes with {phrase(8)}?",
            "choices": [phrase(3) + f" {i}-{k}" for k in range(4)],
            "label": rng.randrange(4),
        }

    with (folder / "data.jsonl").open("w") as out:
        for i in range(rows):
            out.write(json.dumps(row(i, "q")) + "\n")
    (folder / "dev.jsonl").write_text("".join(json.dumps(row(i, "d")) + "\n" for i in range(20)))
    shots = f"fewshot: {{count: {fewshot}, source: {{path: dev.jsonl, id: id}}}}\n" if fewshot else ""
    task = folder / "big.yaml"
    task.write_text(
        "name: big\nkind: multiple_choice\ndata: {path: data.jsonl, id: id}\n"
        'prompt: "Q: {{ question }}\\nA:"\nchoices: "{{ choices }}"\ntarget: "{{ label }}"\n' + shots
    )
    return task


def environment(folder: Path) -> dict[str, str]:
    """This checkout's proctor, its bytecode cached in ``folder`` (as an installed proctor's is)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONPYCACHEPREFIX": str(folder / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fewshot", type=int, default=0)
    parser.add_argument("--in-process", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        task = write_task(Path(tmp), args.rows, args.fewshot)
        env = environment(Path(tmp))
        with_rules = [sys.executable, "-m", "proctor.cli", "validate", str(task)]
        without = [sys.executable, "-c", WITHOUT_RULES, "validate", str(task)]
        run(with_rules, env)  # the disk's cache, the bytecode cache, the template cache: not the audit's
        run(without, env)
        on: list[tuple[float, float]] = []
        off: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            on.append(run(with_rules, env))
            off.append(run(without, env))
        if args.in_process:
            inside = [sys.executable, "-c", IN_PROCESS, str(task), str(args.in_process)]
            done = subprocess.run(inside, env=env, capture_output=True, text=True, check=True)
            audits = [float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("audit-ms ")]
    print(f"`proctor validate`, {args.rows} rows, few-shot {args.fewshot}, {args.repeat} fresh processes each")
    for label, index in (("wall", 0), ("CPU", 1)):
        a = statistics.median(t[index] for t in on)
        b = statistics.median(t[index] for t in off)
        print(f"{label:4s}: without the audit {b:.2f} s, with it {a:.2f} s: +{a - b:.2f} s ({100 * (a - b) / b:.1f}%)")
    # the noise: each run's CPU seconds, and each alternating pair's difference (with minus the run after it)
    print("CPU runs without:", " ".join(f"{t[1]:.2f}" for t in off))
    print("CPU runs with:   ", " ".join(f"{t[1]:.2f}" for t in on))
    print("pairs (with - without):", " ".join(f"{x[1] - y[1]:+.2f}" for x, y in zip(on, off)))
    if args.in_process:
        print(
            f"stage.audit in one process, CPU ms: median {statistics.median(audits):.0f}, least {min(audits):.0f} "
            f"({' '.join(f'{a:.0f}' for a in audits)})"
        )


if __name__ == "__main__":
    main()
