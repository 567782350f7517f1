"""results.json records where a run ran (CPU, GPUs, the versions of the packages that change numbers) and, with
``--batch-size auto``, the generation batch sizes chosen, not only 'auto'."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from tests.conftest import REPO
from tests.support.cli_runs import proctor, results


def test_a_run_records_cpu_gpus_packages_and_the_batch_size_auto_chose(tiny_model_dir, tmp_path):
    proctor(
        "run", str(REPO / "examples" / "quickstart"), "--tasks", "quickstart_short_answers", "--limit", "3",
        "--batch-size", "auto", "--model", str(tiny_model_dir), "-o", "run", "-q", cwd=tmp_path,
    )  # fmt: skip
    recorded = results(tmp_path / "run")
    env = recorded["environment"]
    for name in ("torch", "transformers", "tokenizers", "numpy", "jinja2"):
        assert env["packages"][name] == metadata.version(name)
    assert "vllm" not in env["packages"] or env["packages"]["vllm"] == metadata.version("vllm")
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():  # Linux: the model name the kernel reports
        lines = cpuinfo.read_text().splitlines()
        cpu = next((line.partition(":")[2].strip() for line in lines if line.startswith("model name")), None)
        assert env["cpu"] == cpu
    assert isinstance(env["gpus"], list)
    info = recorded["model_info"]
    assert info["batch_size"] == "auto"
    sizes = info["batch_sizes"]
    assert sizes and all(isinstance(n, int) and 1 <= n <= 64 for n in sizes)  # the CPU's range: 1 to 64


def test_older_environment_records_still_read():
    from proctor.runs.results_schema import Environment

    old = Environment.model_validate({"python": "3.11.9", "platform": "Linux", "git_hash": None})
    assert (old.cpu, old.gpus, old.packages) == (None, [], {})
