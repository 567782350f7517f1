"""Resume: killed runs continue where they stopped and end with the same results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctor import evaluate
from proctor.runs.manifest import RunMismatchError
from tests.conftest import REPO
from tests.support.fakes import FakeModel, stable, write_tasks

WORKER = REPO / "tests" / "support" / "kill_worker.py"
CHUNK = 4  # FakeModel(batch_size=4): the engine calls the model with at most 4 requests


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return env


def _worker(tasks: Path, run: Path, log: Path, kill: str, sleep: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(tasks), str(run), str(log), kill, str(sleep)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def _calls(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.strip()]


def _comparable(run: Path) -> dict:
    results = stable(json.loads((run / "results.json").read_text()))
    results.pop("created")
    results.pop("run_id")  # each run folder's own
    return results


def test_sigkill_at_seven_points_then_resume_matches_an_uninterrupted_run(tmp_path):
    tasks = write_tasks(tmp_path / "tasks")
    base_log, kill_log = tmp_path / "base.log", tmp_path / "kill.log"
    code, err = _finish(_worker(tasks, tmp_path / "base", base_log, "none"))
    assert code == 0, err
    base_calls = _calls(base_log)
    assert max(base_calls) <= CHUNK and len(base_calls) > 20

    run = tmp_path / "run"
    kills = ["manifest:1", "call:4", "external:3", "store-commit:3", "commit-done:3", "samples:1", "results:3"]
    for kill in kills:
        before = len(_calls(kill_log))
        if kill.startswith("external"):
            # An outside SIGKILL at an arbitrary moment: while the model is slow, once 3 more calls started.
            proc = _worker(tasks, run, kill_log, "none", sleep=0.05)
            deadline = time.monotonic() + 60
            while len(_calls(kill_log)) < before + int(kill.split(":")[1]) and proc.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            code, err = _finish(proc)
        else:
            code, err = _finish(_worker(tasks, run, kill_log, kill))
        assert code == -signal.SIGKILL, f"{kill}: the worker was not killed (rc={code})\n{err}"
        assert (
            not (run / "results.json").exists() or json.loads((run / "results.json").read_text())["status"] == "running"
        )
    assert [p.name for p in run.glob(".results.json.*.tmp")]  # the last kill left its half-written file
    code, err = _finish(_worker(tasks, run, kill_log, "none"))
    assert code == 0, err
    assert not list(run.rglob("*.tmp"))  # the next run removed the interrupted writes' temporary files

    assert _comparable(run) == _comparable(tmp_path / "base")
    assert (run / "samples.jsonl").read_bytes() == (tmp_path / "base" / "samples.jsonl").read_bytes()
    calls = _calls(kill_log)
    # Every kill loses at most the one batch in flight: at most one extra model call per kill.
    assert len(calls) <= len(base_calls) + len(kills), (len(calls), len(base_calls))
    assert sum(calls) <= sum(base_calls) + CHUNK * len(kills)
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["command"] == ["proctor", "run", "tasks", "--output", "run"]
    assert (
        set(manifest["tasks"]) == {"mc_alpha", "mc_beta", "gen_gamma", "ppl_delta"}
        and manifest["model"]["backend"] == "fake"
    )
    attempts = manifest["attempts"]
    assert len(attempts) >= len(kills) and attempts[-1]["finished"]


def test_rerunning_a_finished_run_calls_the_model_zero_times(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=3)
    first = evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    model = FakeModel()
    second = evaluate([tasks], model, output_dir=tmp_path / "run")
    assert model.calls == []
    assert stable(second.results) == stable(first.results)


def test_changed_task_or_model_is_refused_with_a_clear_message(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=3)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    write_tasks(tasks, n_mc=6, n_gen=3, mc_prompt="Q: {{ question }}\\nA:")
    with pytest.raises(RunMismatchError) as info:
        evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    message = str(info.value)
    assert "task 'mc_alpha' changed" in message and "--update" in message and "--restart" in message
    assert "mc_beta" not in message
    write_tasks(tasks, n_mc=6, n_gen=3)  # back to the original: accepted again
    with pytest.raises(RunMismatchError, match="model changed"):
        evaluate([tasks], FakeModel(salt="other"), output_dir=tmp_path / "run")
    with pytest.raises(RunMismatchError, match="option limit changed"):
        evaluate([tasks], FakeModel(), output_dir=tmp_path / "run", limit=2)


def test_template_change_recomputes_only_that_tasks_requests(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=8, n_gen=4)
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "run")
    write_tasks(tasks, n_mc=8, n_gen=4, mc_prompt="Q: {{ question }}\\nA:")
    model = FakeModel(log_file=tmp_path / "calls.log")
    result = evaluate([tasks], model, output_dir=tmp_path / "run", update=True)
    computed = sum(n for _, n in model.calls)
    assert computed == result.tasks["mc_alpha"]["requests"]["unique"] == 32
    assert {kind for kind, _ in model.calls} == {"loglikelihood"}
    fresh = evaluate([tasks], FakeModel(), output_dir=tmp_path / "fresh")
    assert stable(result.results)["tasks"] == stable(fresh.results)["tasks"]
    restarted = FakeModel()
    evaluate([tasks], restarted, output_dir=tmp_path / "run", restart=True)
    assert sum(n for _, n in restarted.calls) == sum(t["requests"]["unique"] for t in fresh.tasks.values())


class _Interrupt(Exception):
    pass


class _StopAfter:
    """Wraps a real model; raises after ``n`` calls (the batch in flight is lost)."""

    def __init__(self, model, n: int) -> None:
        self.model, self.left = model, n
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def _wrap(self, method, requests, progress=None):
        self.calls += 1
        if self.left == 0:
            raise _Interrupt()
        self.left -= 1
        return method(requests, progress)

    def loglikelihood(self, requests, progress=None):
        return self._wrap(self.model.loglikelihood, requests, progress)

    def generate(self, requests, progress=None):
        return self._wrap(self.model.generate, requests, progress)

    def rolling_loglikelihood(self, requests, progress=None):
        return self._wrap(self.model.rolling_loglikelihood, requests, progress)


def test_resume_on_a_real_model_gives_identical_results(tiny_model, tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=3)
    # Chunks of 4 requests: 14 model calls in all, 8 of them done before the last attempt.
    full = evaluate([tasks], tiny_model, output_dir=tmp_path / "full", chunk_size=4)
    for stop in (2, 3, 3):
        with pytest.raises(_Interrupt):
            evaluate([tasks], _StopAfter(tiny_model, stop), output_dir=tmp_path / "run", chunk_size=4)
    wrapper = _StopAfter(tiny_model, 10_000)
    resumed = evaluate([tasks], wrapper, output_dir=tmp_path / "run", chunk_size=4)
    assert stable(resumed.results)["tasks"] == stable(full.results)["tasks"]
    assert (tmp_path / "run" / "samples.jsonl").read_bytes() == (tmp_path / "full" / "samples.jsonl").read_bytes()


def test_another_model_folder_is_refused_before_it_loads(tiny_model_dir, tmp_path):
    """Resuming a run folder with another local model: refused from the folder's path and weights, before the
    model loads (a 70B model takes minutes to load only to be turned away); the same model resumes."""
    import shutil

    from tests.support.audit_runner import run_cli
    from tests.support.cli_runs import QUESTIONS, QUIZ, proctor

    (tmp_path / "task.yaml").write_text(QUIZ)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    model = shutil.copytree(tiny_model_dir, tmp_path / "model")
    proctor("run", "task.yaml", "--model", str(model), "-o", "out", cwd=tmp_path)
    finished = json.loads((tmp_path / "out" / "results.json").read_text())["tasks"]["quiz"]["metrics"]

    def refused(folder: Path) -> str:
        # through the CLI's entry point in this process: a refusal's message (the fresh processes are the runs)
        code, output = run_cli(["run", "task.yaml", "--model", str(folder), "-o", "out"], tmp_path, limit_s=600)
        assert code not in (0, None) and "Traceback" not in output, output
        assert "cannot load" not in output  # weights that cannot load: the refusal came before loading
        return output.split("model changed (", 1)[1].split(")\n", 1)[0]

    # Weights that cannot load, in another folder, then in the run's own folder.
    other = shutil.copytree(model, tmp_path / "other")
    (other / "model.safetensors").write_bytes(b"not weights")
    changed = refused(other)
    assert changed.startswith("content: ") and f"path: '{model}' -> '{other}'" in changed
    weights = (model / "model.safetensors").read_bytes()
    (model / "model.safetensors").write_bytes(b"not weights")
    changed = refused(model)
    assert changed.startswith("content: ") and "path" not in changed
    code, output = run_cli(["run", "task.yaml", "--model", str(model), "-o", "out", "--update"], tmp_path, 600)
    assert code not in (0, None) and "cannot load" in output, output  # --update accepts the change
    # The original weights back: the run resumes, answering nothing again, with the same numbers.
    (model / "model.safetensors").write_bytes(weights)
    proctor("run", "task.yaml", "--model", str(model), "-o", "out", cwd=tmp_path)
    assert json.loads((tmp_path / "out" / "results.json").read_text())["tasks"]["quiz"]["metrics"] == finished


def test_a_hub_model_or_the_unconverted_default_is_refused_before_loading(tiny_model_dir, tmp_path):
    """Resuming a local model's run folder with a hub id, or with the embedded default before it was ever
    converted, is refused from the path alone: no hub lookup, and no conversion into PROCTOR_HOME first."""
    from tests.support.cli_runs import QUESTIONS, QUIZ, proctor, proctor_error

    (tmp_path / "task.yaml").write_text(QUIZ)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    proctor("run", "task.yaml", "--model", str(tiny_model_dir), "-o", "out", cwd=tmp_path)
    home = tmp_path / "home"
    cached = tmp_path / "hub" / "models--someorg--another-model"  # in the HF cache: it could load offline
    (cached / "refs").mkdir(parents=True)
    (cached / "refs" / "main").write_text("0" * 40)
    (cached / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (cached / "snapshots" / ("0" * 40) / "config.json").write_text('{"model_type": "llama"}')
    env = {"PROCTOR_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    hub = proctor_error("run", "task.yaml", "--model", "someorg/another-model", "-o", "out", cwd=tmp_path, env=env)
    assert f"model changed (path: '{tiny_model_dir}' -> 'someorg/another-model')" in hub, hub
    default = proctor_error("run", "task.yaml", "-o", "out", cwd=tmp_path, env=env)
    target = home / "models" / "smollm2-135m-instruct-f32"
    assert f"model changed (path: '{tiny_model_dir}' -> '{target}')" in default, default
    assert not (home / "models").exists()  # refused before converting the default model
