"""Run provenance and flags without effect (red team 11, classes 4 and 5, and its false positives): backend
options that cannot change a number are information, not settings; a changed task is named beside a server's
address; compare prints only the keys that differ; a rerun of one command compares; a hand
edit of samples.jsonl or results.json is refused; answers from a cache or another server are told; flags
that had no effect are warned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from proctor.runs.task_settings import run_settings, settings_differences
from tests.support.cli_runs import generate_task, jsonl, quiz_task, results, run_proctor, served_run
from tests.support.reply_faults import SELF_CHECK_MARK, ToyLogprobServer

GEN_TASK = generate_task("capitals", "qa.jsonl", "Q: {{ question }}\nA:", "{{ answer }}", 4)


def _gen_task(folder: Path, question: str = "Capital of") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.yaml").write_text(GEN_TASK)
    rows = [
        {"id": str(i), "question": f"{question} {c}?", "answer": "Rome" if i % 2 else "Paris"}
        for i, c in enumerate("wxyz")
    ]
    jsonl(folder / "qa.jsonl", rows)
    return folder


def _run(tmp: Path, task: Path, out: str, url: str, *extra: str, env: dict | None = None):
    done = run_proctor(*served_run(task, url, out, *extra), cwd=tmp, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _settings(run: Path, task: str = "capitals") -> dict:
    return results(run)["tasks"][task]["settings"]


# ------------------------------------------------------------------ 1. inert backend options (048, 198, 202, 201)
def test_server_address_price_and_batch_are_information_and_revision_stays_a_setting(tmp_path):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as one, ToyLogprobServer() as two:
        _run(tmp_path, task, "a", one.url)
        _run(tmp_path, task, "b", two.url, "--model-arg", "price_prompt=0.15", "--model-arg", "batch=1")
        _run(tmp_path, task, "c", two.url, "--model-arg", "revision=v2")
    recorded = _settings(tmp_path / "b")
    assert "base_url" not in recorded["model_args"] and "price_prompt" not in recorded["model_args"]
    assert recorded["model_info"] == {"base_url": two.url, "batch": 1, "price_prompt": 0.15}
    done = run_proctor("compare", "a", "b", "-o", "ab.json", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "Not comparable" not in said, said
    assert "model_info.base_url" in said and "model_info.price_prompt" in said and "information" in said
    pair = json.loads((tmp_path / "ab.json").read_text())["comparisons"][0]
    assert pair["settings_differ"] == []
    assert {d["setting"] for d in pair["settings_info"]} == {
        "model_info.base_url",
        "model_info.batch",
        "model_info.price_prompt",
    }
    done = run_proctor("compare", "a", "c", "-o", "ac.json", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert "Not comparable" in said and "revision" in said, said


def _results(model_args: dict, content: str, **settings) -> dict:
    """A results.json as a run of this version writes it, for one task."""
    recorded = {"backend": "openai", "model_args": model_args, "limit": None, **settings}
    return {"tasks": {"t": {"settings": recorded, "hash": content, "metrics": {}, "n_samples": 1}}}


def test_a_run_of_an_earlier_version_with_base_url_among_its_settings_stays_comparable():
    a = _results({"base_url": "http://127.0.0.1:1/v1", "endpoint": "chat"}, "aaaa")
    b = _results({"base_url": "http://127.0.0.1:2/v1", "endpoint": "chat"}, "aaaa")
    read_a, read_b = run_settings(a), run_settings(b)
    assert read_a["t"]["values"]["model_args"] == {"endpoint": "chat"}
    assert read_a["t"]["info"] == {"base_url": "http://127.0.0.1:1/v1"}
    differ, _ = settings_differences(read_a, read_b, ["t"])
    assert differ == []


# ------------------------------------------------------------------ 2. a changed task beside a port (061)
def test_a_content_change_is_named_beside_settings_that_cannot_change_a_prompt():
    a = _results({"revision": "v1"}, "aaaa", dtype="float16")
    b = _results({"revision": "v2"}, "bbbb", dtype="bfloat16")
    differ, _ = settings_differences(run_settings(a), run_settings(b), ["t"])
    assert {d["setting"] for d in differ} == {"model_args", "dtype", "task_content"}
    # a setting that changes the samples explains the hash: the content is not named twice
    c = _results({"revision": "v1"}, "cccc", dtype="float16", limit=2)
    differ, _ = settings_differences(run_settings(a), run_settings(c), ["t"])
    assert {d["setting"] for d in differ} == {"limit"}


def test_a_task_edited_between_runs_on_two_ports_is_named_by_compare(tmp_path):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as one, ToyLogprobServer() as two:
        _run(tmp_path, task, "a", one.url)
        _gen_task(task, question="Which city is the capital of")
        _run(tmp_path, task, "b", two.url)
    done = run_proctor("compare", "a", "b", "-o", "ab.json", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert "Not comparable" in said and "task_content" in said and "the task file or its data changed" in said


# ------------------------------------------------------------------ 3. only the keys that differ (049)
def test_a_seed_under_greedy_decoding_is_no_difference_and_other_keys_are_shown_alone():
    greedy = {"temperature": 0.0, "max_tokens": 16, "stop": ["\n"], "length_penalty": 1.0, "seed": 0}
    a = _results({}, "aaaa", generation=greedy)
    b = _results({}, "bbbb", generation={**greedy, "seed": 1})  # --seed changes the spec, so the hash
    differ, _ = settings_differences(run_settings(a), run_settings(b), ["t"])
    assert differ == []  # greedy reads no seed; the seed explains the hash
    sampled = {**greedy, "temperature": 0.7}
    a = _results({}, "aaaa", generation=sampled)
    b = _results({}, "bbbb", generation={**sampled, "seed": 1})
    differ, _ = settings_differences(run_settings(a), run_settings(b), ["t"])
    assert [d["setting"] for d in differ] == ["generation"]
    from proctor.runs.task_settings import shown_difference

    long_key = {f"k{i:02d}": "x" * 10 for i in range(20)}
    text = shown_difference({**long_key, "zz_max_tokens": 16}, {**long_key, "zz_max_tokens": 8})
    assert text == "zz_max_tokens: A 16, B 8"


def test_compare_prints_only_the_generation_keys_that_differ(tmp_path):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as server:
        _run(tmp_path, task, "a", server.url)
        _run(tmp_path, task, "b", server.url, "--seed", "7")  # greedy: no difference
        _run(tmp_path, task, "c", server.url, "--max-tokens", "3")
    done = run_proctor("compare", "a", "b", "c", "-o", "abc.json", cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "…" not in said, said
    assert "capitals: generation: max_tokens: A 4, B 3" in said and "seed" not in said, said


# ------------------------------------------------------------------ 4. a rerun of the same command is two runs
def test_a_rerun_of_the_same_command_compares(tmp_path):
    """Two runs of one command within a second (a fake model: the same stamp and timings) are two runs: each has
    its own run_id (a copy of a folder keeps it, and is refused: test_flags_said_not_silent)."""
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as server:
        _run(tmp_path, task, "a", server.url)
        _run(tmp_path, task, "rerun", server.url)
    done = run_proctor("compare", "a", "rerun", "-o", "ar.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------ 5. hand edits (051, 053, 189, 054, 055)
def test_hand_edits_of_samples_or_numbers_are_refused_naming_the_file_and_a_resumed_run_reads(tmp_path):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as server:
        _run(tmp_path, task, "a", server.url, "--limit", "2")
        _run(tmp_path, task, "a", server.url, "--update")  # resumed: samples.jsonl grows, both digests follow
        _run(tmp_path, task, "b", server.url)
    for command in (["report", "a"], ["compare", "a", "b", "-o", "ab.json"], ["export", "a", "--format", "lm-eval"]):
        done = run_proctor(*command, cwd=tmp_path)
        assert done.returncode == 0, command + [done.stdout + done.stderr]
    samples = (tmp_path / "a" / "samples.jsonl").read_text()
    assert '"exact_match": 0.0' in samples
    shutil.copytree(tmp_path / "a", tmp_path / "flipped")
    (tmp_path / "flipped" / "samples.jsonl").write_text(samples.replace('"exact_match": 0.0', '"exact_match": 1.0', 1))
    assert len((tmp_path / "flipped" / "samples.jsonl").read_bytes()) == len(samples.encode())
    for command in (["report", "flipped"], ["compare", "flipped", "b"], ["export", "flipped", "--format", "lm-eval"]):
        done = run_proctor(*command, cwd=tmp_path)
        said = done.stdout + done.stderr
        assert done.returncode == 2 and "flipped/samples.jsonl" in said and "samples_digest" in said, said
    shutil.copytree(tmp_path / "a", tmp_path / "edited")
    written = (tmp_path / "edited" / "results.json").read_text()
    value = json.loads(written)["tasks"]["capitals"]["metrics"]["exact_match"]["value"]
    (tmp_path / "edited" / "results.json").write_text(written.replace(f'"value": {value}', '"value": 0.9', 1))
    for command in (["report", "edited"], ["export", "edited", "--format", "lm-eval"], ["compare", "b", "edited"]):
        done = run_proctor(*command, cwd=tmp_path)
        said = done.stdout + done.stderr
        assert done.returncode == 2 and "edited/results.json" in said and "numbers_digest" in said, said
    reordered = tmp_path / "reordered"  # lines in another order are the same samples: they read
    shutil.copytree(tmp_path / "a", reordered)
    (reordered / "samples.jsonl").write_text("".join(reversed(samples.splitlines(keepends=True))))
    done = run_proctor("report", "reordered", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # a re-run of a finished run reports results.json without the model only where it is as the run wrote it
    from proctor.runs.results import read_json
    from proctor.runs.run_digests import vouched

    assert vouched(tmp_path / "a", read_json(tmp_path / "a" / "results.json"))
    for edited in ("flipped", "edited"):
        assert not vouched(tmp_path / edited, read_json(tmp_path / edited / "results.json"))
    exported = tmp_path / "edited" / "lm_eval"  # the run's own export, copied with the folder
    assert exported.is_dir()
    assert "0.9" not in "".join(p.read_text() for p in exported.rglob("*.json") if "results" in p.name)


# ------------------------------------------------------------------ 6. whose answers (137, 059, 003)
class NamingServer(ToyLogprobServer):
    """The toy server whose replies name ``model`` (and ``system_fingerprint`` values in turn)."""

    def __init__(self, model: str, fingerprints: tuple[str, ...] = (), only_self_check: bool = False) -> None:
        self.named, self.fingerprints, self.served, self.only_self_check = model, fingerprints, 0, only_self_check
        super().__init__()

    def reply(self, path: str, body: dict):
        reply = super().reply(path, body)
        if self.only_self_check and SELF_CHECK_MARK not in json.dumps(body):
            return reply
        if isinstance(reply, dict):
            reply["model"] = self.named
            if self.fingerprints:
                self.served += 1
                reply["system_fingerprint"] = self.fingerprints[self.served % len(self.fingerprints)]
        return reply


MC_TASK = quiz_task("pick")
MC_ROWS = [
    {"id": str(i), "question": f"Capital {i}?", "choices": ["Rome", "Paris", "Milan"], "label": i % 3} for i in range(6)
]


def _warnings(run: Path) -> list[str]:
    return results(run).get("warnings") or []


def test_answers_read_from_an_environment_cache_are_counted_and_named(tmp_path):
    task = _gen_task(tmp_path / "t")
    env = {"PROCTOR_CACHE": str(tmp_path / "cache")}
    with ToyLogprobServer() as one:
        first = _run(tmp_path, task, "a", one.url, env=env)
    assert "response cache" not in first.stdout + first.stderr  # nothing was in it yet
    with ToyLogprobServer() as two:
        done = _run(tmp_path, task, "b", two.url, env=env)
        assert two.scoring_requests() == []  # the server given was never asked
    said = done.stdout + done.stderr
    assert "4 of 4 answers came from the response cache" in said and "$PROCTOR_CACHE" in said, said
    assert any("4 of 4 answers came from the response cache" in w for w in _warnings(tmp_path / "b"))


def test_replies_naming_another_model_or_two_configurations_are_warned_and_recorded(tmp_path):
    task = _gen_task(tmp_path / "t")
    with NamingServer("some-other-model-70b") as server:
        done = _run(tmp_path, task, "a", server.url)
    said = done.stdout + done.stderr
    assert "replies name another model than 'toy': 'some-other-model-70b'" in said, said
    info = results(tmp_path / "a")["model_info"]
    assert info["reply_origins"]["models"] == {"some-other-model-70b": 4}
    with NamingServer("toy", fingerprints=("fp_1", "fp_2")) as server:
        done = _run(tmp_path, task, "b", server.url)
    assert "2 system_fingerprint values" in done.stdout + done.stderr
    mc = tmp_path / "mc"
    mc.mkdir()
    (mc / "task.yaml").write_text(MC_TASK)
    jsonl(mc / "data.jsonl", MC_ROWS)
    with NamingServer("some-other-model-70b", only_self_check=True) as server:  # the self-check's replies only
        done = _run(tmp_path, mc, "check", server.url)
    assert "replies name another model" not in done.stdout + done.stderr and _warnings(tmp_path / "check") == []
    with NamingServer("toy-2024-08-06") as server:  # a dated snapshot of the model asked for: no warning
        done = _run(tmp_path, task, "c", server.url)
    assert _warnings(tmp_path / "c") == [] and "another model" not in done.stdout + done.stderr


def test_a_resumed_run_whose_answers_come_from_two_server_addresses_is_warned(tmp_path):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as one:
        _run(tmp_path, task, "a", one.url, "--limit", "2")
        _run(tmp_path, task, "same", one.url, "--limit", "2")
        _run(tmp_path, task, "same", one.url, "--update")  # the same server: nothing to say
    assert _warnings(tmp_path / "same") == []
    with ToyLogprobServer() as two:
        done = _run(tmp_path, task, "a", two.url, "--update")
    said = done.stdout + done.stderr
    assert f"2 answers were stored by an earlier attempt against {one.url} and 2 were asked now of {two.url}" in said


# ------------------------------------------------------------------ 7. flags without effect (153, 107, 152, 083, 085)
def _main(tmp_path, monkeypatch, capsys, *args: str) -> tuple[int, str]:
    from proctor.cli import main

    monkeypatch.chdir(tmp_path)
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    said = capsys.readouterr()
    return code, said.out + said.err


def test_chat_template_off_on_a_chat_endpoint_is_recorded_as_chat_and_warned(tmp_path):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as server:
        done = _run(tmp_path, task, "a", server.url, "--chat-template", "off", "--model-arg", "endpoint=chat")
        generations = [path for path, body in server.requests if "messages" in body or not body.get("echo")]
        assert generations and all(path.endswith("/chat/completions") for path in generations)
    said = done.stdout + done.stderr
    assert "--chat-template off had no effect on generation" in said, said
    recorded = results(tmp_path / "a")
    assert recorded["chat_applied"] is True and recorded["tasks"]["capitals"]["settings"]["chat"] is True
    assert any("--chat-template off had no effect" in w for w in recorded["warnings"])


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--max-length", "4"], "--max-length 4 had no effect"),
        (["--dtype", "bfloat16"], "--dtype bfloat16 had no effect"),
        (["--device", "cuda:3"], "--device cuda:3 had no effect"),
        (["--batch-size", "64"], None),  # lm-eval users pass it out of habit: silent
    ],
)
def test_local_model_flags_on_a_served_model_are_warned_as_without_effect(tmp_path, monkeypatch, capsys, flags, said):
    task = _gen_task(tmp_path / "t")
    with ToyLogprobServer() as server:
        code, text = _main(tmp_path, monkeypatch, capsys, *served_run(task, server.url, "a", *flags))
    recorded = results(tmp_path / "a")
    if said is None:
        assert code == 0 and "had no effect" not in text and not recorded.get("warnings"), text
        return
    assert code == 0 and said in text, text
    assert any(said in w for w in recorded["warnings"])
    assert recorded["tasks"]["capitals"]["settings"]["model_args"] == {}  # information, not a setting


def test_limit_one_point_zero_is_refused_and_a_whole_number_that_keeps_two_rows_is_warned(
    tmp_path, monkeypatch, capsys
):
    task = _gen_task(tmp_path / "t")
    code, text = _main(
        tmp_path, monkeypatch, capsys, "run", str(task), "--model", "openai:toy", "--base-url", "http://127.0.0.1:9/v1",
        "--limit", "1.0",
    )  # fmt: skip
    assert code == 2 and "one row" in text and "not the whole set" in text, text
    with ToyLogprobServer() as server:
        code, text = _main(tmp_path, monkeypatch, capsys, *served_run(task, server.url, "two", "--limit", "2"))
        assert code == 0 and "audit [data.limit-tiny]" in text and "--limit 2 keeps 2 of the 4 rows" in text, text
        code, text = _main(tmp_path, monkeypatch, capsys, *served_run(task, server.url, "three", "--limit", "3"))
    assert code == 0 and "limit-tiny" not in text, text
