"""Compressed data files (``.gz``, ``.bz2``, ``.xz``): read by the same readers as plain ones, with the same
checks, errors naming the file and the decompressed line; a file that is not what its name says, or a
compressed Parquet, is an error naming it."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import pytest

from proctor.core.errors import TaskDefinitionError
from proctor.core.model_requests import LoglikelihoodRequest
from proctor.data.readers import read_rows
from tests.support.cli_runs import QUESTIONS, QUIZ, proctor, results, run_in_process, samples, slow_model_plugin, write
from tests.support.fakes import FakeModel

COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}

JSONL = "".join(json.dumps(q) + "\n" for q in QUESTIONS)


def packed(path: Path, text: str) -> Path:
    """``text`` as UTF-8, compressed as the last suffix of ``path`` says."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(COMPRESS[path.suffix](text.encode("utf-8")))
    return path


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_each_text_format_reads_the_rows_of_its_plain_file(suffix, tmp_path):
    csv_text = "question,answer\nTwo plus two?,4\n\nCapital of France?,Paris\n"
    cases = {
        "data.jsonl": JSONL,
        "data.json": json.dumps(QUESTIONS),
        "data.csv": csv_text,
        "data.tsv": csv_text.replace(",", "\t"),
        "notes.txt": "one whole text\nof two lines\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        want = read_rows(tmp_path / name)
        got = read_rows(packed(tmp_path / (name + suffix), text))
        assert got == want, name
    assert [r["_row"] for r in read_rows(tmp_path / f"data.csv{suffix}")] == [2, 4]  # decompressed line numbers
    assert [r["id"] for r in read_rows(tmp_path / f"data.jsonl{suffix}")] == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(
    "name, content, expect",
    [  # each check of the plain reader holds for a compressed file, naming the decompressed line
        ("d.jsonl.gz", '{"a": 1}\n\n{"a": 2, "a": 3}\n', ("d.jsonl.gz:3", "field 'a'", "given twice")),
        ("d.jsonl.gz", '{"a": 1}\n{broken\n', ("d.jsonl.gz:2", "line 2 is not valid JSON")),
        ("d.jsonl.xz", '{"a": 1}\n[1, 2]\n', ("d.jsonl.xz:2", "is a list, expected a JSON object")),
        ("d.jsonl.gz", '{"a": 1}\n{"b": "\\ud800"}\n', ("d.jsonl.gz:2", "lone surrogate")),
        ("d.jsonl.bz2", '{"a": 1}\n{"a": "x\x00"}\n', ("d.jsonl.bz2:2", "NUL byte")),
        ("d.csv.gz", "q,a\n1,2\n3\n", ("d.csv.gz:3", "has 1 columns, expected 2")),
        ("d.csv.gz", "q,q\n1,2\n", ("d.csv.gz:1", "column 'q' is named twice")),
        ("d.csv.gz", "q,a\n", ("d.csv.gz", "only a header row")),
        ("d.jsonl.gz", "", ("d.jsonl.gz", "holds no rows")),
        ("d.json.gz", '{"rows": 1}', ("d.json.gz", "expected a list of records")),
    ],
)
def test_a_bad_compressed_file_is_an_error_naming_file_and_line(name, content, expect, tmp_path):
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(packed(tmp_path / name, content))
    for word in expect:
        assert word in str(caught.value), str(caught.value)


def test_bytes_that_are_not_utf8_name_the_decompressed_line(tmp_path):
    path = tmp_path / "d.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n{"a": "\xff"}\n'))
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(path)
    assert caught.value.line == 2 and "not valid UTF-8" in str(caught.value) and "d.jsonl.gz" in str(caught.value)


@pytest.mark.parametrize(
    "name, data, expect",
    [
        ("plain.jsonl.gz", JSONL.encode(), "cannot decompress the gzip file"),  # not gzip at all
        ("cut.jsonl.gz", gzip.compress(JSONL.encode(), mtime=0)[:40], "cannot decompress the gzip file"),  # cut short
        ("wrong.csv.bz2", gzip.compress(b"q,a\n1,2\n", mtime=0), "cannot decompress the bzip2 file"),
        ("wrong.json.xz", b"[]", "cannot decompress the xz file"),
        ("table.parquet.gz", gzip.compress(b"PAR1", mtime=0), "a gzip-compressed parquet file cannot be read"),
    ],
)
def test_a_file_that_is_not_what_its_suffix_says_is_an_error_naming_it(name, data, expect, tmp_path):
    (tmp_path / name).write_bytes(data)
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(tmp_path / name)
    assert str(caught.value).startswith(str(tmp_path / name)) and expect in str(caught.value), str(caught.value)


def test_a_task_names_the_bad_line_of_its_gzipped_data(tmp_path, monkeypatch):
    """Through the command's entry point: exit 2, the message names the file and the decompressed line."""
    write(tmp_path / "quiz.yaml", QUIZ.replace("data.jsonl", "data.jsonl.gz"))
    packed(tmp_path / "data.jsonl.gz", JSONL + '{"id": "f", "question": "x", "id": "g"}\n')
    monkeypatch.chdir(tmp_path)
    code, output = run_in_process(["validate", "quiz.yaml"])
    flat = " ".join(output.split())
    assert code == 2 and "data.jsonl.gz:6" in flat and "'id' is given twice" in flat, output
    assert "Traceback" not in output and "internal error" not in output


def expected_accuracy() -> float:
    """QUIZ's accuracy on the fake model, from its log-probs asked directly (the task's rule written out)."""
    model = FakeModel("fake", batch_size=1)
    hits = 0
    for q in QUESTIONS:
        requests = [LoglikelihoodRequest(f"Q: {q['question']}\nA:", " " + choice) for choice in q["choices"]]
        scores = [r.logprob for r in model.loglikelihood(requests)]
        hits += max(range(len(scores)), key=scores.__getitem__) == q["label"]
    return hits / len(QUESTIONS)


def test_a_native_task_runs_on_gzipped_and_xz_data(tmp_path):
    """The ``proctor`` command in a fresh interpreter: the five questions read from ``data.jsonl.gz`` (and from
    a JSON list in ``data.json.xz``), in order, with the accuracy the fake model's log-probs give."""
    slow_model_plugin(tmp_path, 0.0)
    write(tmp_path / "gz" / "quiz.yaml", QUIZ.replace("data.jsonl", "data.jsonl.gz"))
    packed(tmp_path / "gz" / "data.jsonl.gz", JSONL)
    write(tmp_path / "xz" / "quiz.yaml", QUIZ.replace("data.jsonl", "data.json.xz"))
    packed(tmp_path / "xz" / "data.json.xz", json.dumps(QUESTIONS))
    want = expected_accuracy()
    for folder in ("gz", "xz"):
        run = tmp_path / f"run-{folder}"
        proctor(
            "run", f"{folder}/quiz.yaml", "--model", "slow:fake", "--plugin", "slow_model.py", "-o", str(run), "-q",
            cwd=tmp_path,
        )  # fmt: skip
        task = results(run)["tasks"]["quiz"]
        assert task["n_samples"] == 5 and task["metrics"]["acc"]["value"] == pytest.approx(want), folder
        read = [(s["id"], s["source"]["row"]) for s in samples(run)]
        assert read == [(q["id"], n) for n, q in enumerate(QUESTIONS, 1)], folder


def test_a_file_that_unpacks_past_the_limit_is_an_error_not_a_full_memory(tmp_path, monkeypatch):
    """A few kilobytes may unpack to gigabytes: reading stops one byte past the limit (here 10,000 bytes)."""
    import proctor.data.file_text as file_text

    monkeypatch.setattr(file_text, "MOST_DECOMPRESSED", 10_000)
    packed(tmp_path / "small.jsonl.gz", JSONL)  # under the limit: read
    assert len(read_rows(tmp_path / "small.jsonl.gz")) == 5
    bomb = packed(tmp_path / "bomb.jsonl.gz", '{"a": "' + "x" * 10_000 + '"}\n')
    assert bomb.stat().st_size < 200
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(bomb)
    assert str(caught.value).startswith(str(bomb)) and "decompresses to more than 10,000 bytes" in str(caught.value)


@pytest.mark.parametrize(
    "name, content, expect",
    [  # compressed content the name does not say, said twice, or in a format not read: named as what it is
        ("d.jsonl", gzip.compress(JSONL.encode()), "gzip-compressed, but its name does not end in '.gz'"),
        ("d.csv", bz2.compress(b"q\x00,a\n\xff"), "bzip2-compressed, but its name does not end in '.bz2'"),
        ("d.jsonl.gz.gz", gzip.compress(gzip.compress(JSONL.encode())), "compressed twice?"),
        ("d.jsonl.xz", lzma.compress(gzip.compress(JSONL.encode())), "decompressed as xz, its content is gzip"),
        ("d.jsonl", b"(\xb5/\xfd\x00\x58\x11\x00", "zstd-compressed (.zst), which proctor does not read"),
        ("d.jsonl.zst", b"(\xb5/\xfd\x00\x58\x11\x00", "a zstd-compressed file ('.zst'), which proctor does not read"),
        ("d.parquet.zst", b"(\xb5/\xfd\x00\x58\x11\x00", "a zstd-compressed file ('.zst')"),
        ("d.csv.zip", b"PK\x03\x04\x14\x00", "a zip-compressed file ('.zip')"),
    ],
)
def test_compressed_content_is_named_not_read_as_text(name, content, expect, tmp_path):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(tmp_path / name)
    message = str(caught.value)
    assert expect in message and message.startswith(str(tmp_path / name)), message
    assert "gzip (.gz), bzip2 (.bz2), xz (.xz)" in message and "UTF-8" not in message and "NUL" not in message


def test_a_text_beginning_with_a_magic_number_is_still_text(tmp_path):
    (tmp_path / "d.txt").write_text("BZh91AY&SY is how a bzip2 file begins\n")  # text: read as text
    assert read_rows(tmp_path / "d.txt")[0]["text"].startswith("BZh91AY&SY")
