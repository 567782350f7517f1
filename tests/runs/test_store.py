"""The response store and the shared cache."""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from proctor import evaluate
from proctor.core.model_requests import (
    GenerateRequest,
    GenerateResult,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResult,
)
from proctor.runs.store import ResponseStore, decode_result, encode_result, fingerprint_hash, request_hash
from tests.support.fakes import FakeModel, stable, write_tasks

RESULTS = [
    LoglikelihoodResult(-1.2345678901234567, (-0.1, -1.1345678901234567), False),
    LoglikelihoodResult(float("-inf"), (float("-inf"),), True),
    GenerateResult("héllo\nwörld </script>", "stop", 12, 3),
    RollingLoglikelihoodResult(-100.000000000001, 7, (-1e-300, -5.5)),
]


@pytest.mark.fast
@pytest.mark.parametrize("result", RESULTS, ids=lambda r: type(r).__name__)
def test_results_round_trip_exactly(result):
    assert decode_result(encode_result(result)) == result


@pytest.mark.parametrize(
    "request_",
    [
        LoglikelihoodRequest("ctx", " cont"),
        GenerateRequest("p", stop=("\n",)),
        RollingLoglikelihoodRequest("text", 64, 32),
    ],
    ids=lambda r: type(r).__name__,
)
def test_every_request_field_changes_the_key(request_):
    key = request_hash(request_)
    for field in dataclasses.fields(request_):
        value = getattr(request_, field.name)
        if field.name == "images":  # images enter the key by their content digest
            from proctor.core.images import ImageInput

            other = (ImageInput("sha256:" + "0" * 64, b""),)
        elif isinstance(value, bool):
            other = not value
        elif isinstance(value, (int, float)):
            other = value + 1
        elif isinstance(value, tuple):
            other = value + ("x",)
        elif value is None:
            other = 5
        else:
            other = value + "x"
        assert request_hash(dataclasses.replace(request_, **{field.name: other})) != key, field.name
    assert request_hash(request_) == key


@pytest.mark.fast
def test_request_type_is_part_of_the_key():
    @dataclasses.dataclass(frozen=True)
    class Other:
        context: str
        continuation: str
        move_whitespace: bool = True

    assert request_hash(Other("a", "b")) != request_hash(LoglikelihoodRequest("a", "b"))


@pytest.mark.fast
def test_store_is_wal_and_keyed_by_model(tmp_path):
    store = ResponseStore(tmp_path / "s.sqlite")
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    request = LoglikelihoodRequest("a", " b")
    model_a = store.register_model({"model": "a"})
    model_b = store.register_model({"model": "b"})
    store.put_many(model_a, [(request_hash(request), request, RESULTS[0])])
    assert store.get_many(model_a, [request_hash(request)]) == {request_hash(request): RESULTS[0]}
    assert store.get_many(model_b, [request_hash(request)]) == {}
    assert fingerprint_hash({"a": 1, "b": 2}) == fingerprint_hash({"b": 2, "a": 1})
    store.close()


@pytest.mark.fast
def test_a_failed_batch_write_leaves_nothing_behind(tmp_path):
    store = ResponseStore(tmp_path / "s.sqlite")
    model = store.register_model({"model": "a"})
    store._db.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON responses WHEN NEW.kind = 'GenerateRequest' BEGIN "
        "SELECT RAISE(ABORT, 'disk full'); END"
    )
    good, bad = LoglikelihoodRequest("a", " b"), GenerateRequest("p")
    with pytest.raises(Exception, match="disk full"):
        store.put_many(model, [(request_hash(good), good, RESULTS[0]), (request_hash(bad), bad, RESULTS[2])])
    assert store.count() == 0  # all or nothing: the first row of the batch was rolled back too
    other = sqlite3.connect(tmp_path / "s.sqlite")
    assert other.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 0
    store.close()


@pytest.mark.fast
def test_shared_cache_serves_a_second_run_and_never_another_model(tmp_path, monkeypatch):
    tasks = write_tasks(tmp_path / "tasks", n_mc=6, n_gen=4)
    cache = tmp_path / "cache"
    first = evaluate([tasks], FakeModel(), output_dir=tmp_path / "one", cache=cache)
    model = FakeModel()
    second = evaluate([tasks], model, output_dir=tmp_path / "two", cache=cache)
    assert model.calls == []
    assert stable(second.results)["tasks"] == stable(first.results)["tasks"]
    other = FakeModel(salt="another model")
    evaluate([tasks], other, output_dir=tmp_path / "three", cache=cache)
    assert sum(n for _, n in other.calls) == sum(t["requests"]["unique"] for t in first.tasks.values())
    # The environment variable turns the cache on too; nothing is read when it is unset.
    monkeypatch.setenv("PROCTOR_CACHE", str(cache))
    env_model = FakeModel()
    evaluate([tasks], env_model, output_dir=tmp_path / "four")
    assert env_model.calls == []
    monkeypatch.delenv("PROCTOR_CACHE")
    no_cache = FakeModel()
    evaluate([tasks], no_cache, output_dir=tmp_path / "five")
    assert no_cache.calls


@pytest.mark.fast
def test_generation_settings_are_part_of_the_cache_key(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=4, n_gen=5)
    cache = tmp_path / "cache"
    evaluate([tasks], FakeModel(), output_dir=tmp_path / "one", cache=cache)
    text = (tasks / "tasks.yaml").read_text().replace("max_tokens: 8", "max_tokens: 9")
    (tasks / "tasks.yaml").write_text(text)
    model = FakeModel()
    evaluate([tasks], model, output_dir=tmp_path / "two", cache=cache)
    assert [(kind, n) for kind, n in model.calls] == [("generate", 4), ("generate", 1)]


@pytest.mark.fast
def test_chunks_follow_the_batch_size_and_can_be_set(tmp_path):
    tasks = write_tasks(tmp_path / "tasks", n_mc=5, n_gen=2)
    # A chunk reaches its size, then runs on to the end of its question (4 choices share a
    # context and go to the model together), so it holds at most size + 3 requests.
    model = FakeModel(batch_size=3)
    evaluate([tasks], model, output_dir=tmp_path / "one")
    sizes = [n for kind, n in model.calls if kind == "loglikelihood"]
    assert all(n % 4 == 0 and 3 <= n <= 3 + 3 for n in sizes)  # whole questions, never split
    model = FakeModel(batch_size=3)
    evaluate([tasks], model, output_dir=tmp_path / "two", chunk_size=7)
    sizes = [n for kind, n in model.calls if kind == "loglikelihood"]
    assert all(n % 4 == 0 and n <= 7 + 3 for n in sizes[:-1]) and max(sizes) == 8
    assert max(n for kind, n in model.calls if kind == "generate") <= 7


def test_later_generation_settings_keep_earlier_request_hashes():
    """top_k / repetition_penalty enter a request's identity only when set: stores written before
    they existed still answer (the hash is computed here from the fields as they were)."""
    import hashlib

    from proctor.core.model_requests import GenerateRequest
    from proctor.runs.store import canonical_json, request_hash

    old = {
        "prompt": "x",
        "max_tokens": 64,
        "stop": [],
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
        "num_beams": 1,
        "length_penalty": 1.0,
        "no_repeat_ngram_size": 0,
        "min_tokens": 0,
        "max_length": None,
    }
    expected = hashlib.sha256(canonical_json({"type": "GenerateRequest", "fields": old}).encode()).hexdigest()
    assert request_hash(GenerateRequest("x")) == expected
    assert request_hash(GenerateRequest("x", top_k=5)) != expected
    assert request_hash(GenerateRequest("x", repetition_penalty=1.2)) != expected
    assert request_hash(GenerateRequest("x", top_k=0)) != request_hash(GenerateRequest("x", top_k=5))


@pytest.mark.parametrize(
    "request_",
    [
        LoglikelihoodRequest('a "quoted"\n context é\\', " ending"),
        GenerateRequest("prompt", max_tokens=7),
        RollingLoglikelihoodRequest("text", window=3),
    ],
)
def test_a_requests_hash_is_the_hash_of_its_type_and_fields_as_before(request_):
    """Run folders written before keep answering: the hash is sha256 of the canonical JSON of
    {"type", "fields"} (as written out here), and the stored fields are the fields' JSON."""
    import hashlib
    import json

    from proctor.runs.store import _plain, request_key

    fields = _plain(request_)
    text = json.dumps(
        {"type": type(request_).__name__, "fields": fields},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=True,
    )
    key, stored = request_key(request_)
    assert key == hashlib.sha256(text.encode()).hexdigest() == request_hash(request_)
    assert stored == json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
