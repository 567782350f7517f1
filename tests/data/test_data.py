"""Data readers and sources, on files written here and on the real sets in ../shared/data."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proctor.core.data_spec import DataSpec
from proctor.core.errors import TaskDefinitionError
from proctor.data.readers import read_rows
from proctor.data.sources import load_samples
from tests.conftest import shared_path

pytestmark = pytest.mark.fast

ROWS = [{"q": "one", "a": 1}, {"q": "two", "a": 2}]


def test_every_format_reads_the_same_rows(tmp_path):
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "d.json").write_text(json.dumps(ROWS))
    (tmp_path / "wrapped.json").write_text(json.dumps({"data": ROWS}))
    (tmp_path / "d.csv").write_text("q,a\none,1\ntwo,2\n")
    (tmp_path / "d.tsv").write_text("q\ta\none\t1\ntwo\t2\n")
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "d.parquet")
    with pa.OSFile(str(tmp_path / "d.arrow"), "wb") as sink:
        table = pa.Table.from_pylist(ROWS)
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    strip = lambda rows: [{k: str(v) for k, v in r.items() if not k.startswith("_")} for r in rows]  # noqa: E731
    expected = strip(ROWS)
    for name in ("d.jsonl", "d.json", "d.csv", "d.tsv", "d.parquet", "d.arrow"):
        assert strip(read_rows(tmp_path / name)) == expected, name
    assert strip(read_rows(tmp_path / "wrapped.json", records_key="data")) == expected


def test_header_less_csv_takes_column_names(tmp_path):
    (tmp_path / "m.csv").write_text('"What, exactly?",x,y,z,w,B\n')
    (row,) = read_rows(tmp_path / "m.csv", columns=["question", "A", "B", "C", "D", "answer"])
    assert row["question"] == "What, exactly?" and row["answer"] == "B"


def test_glob_join_fields_and_filter(tmp_path):
    (tmp_path / "x_test.jsonl").write_text('{"q": "a"}\n{"q": "b"}\n')
    (tmp_path / "y_test.jsonl").write_text('{"q": "c"}\n')
    (tmp_path / "keys.jsonl").write_text('{"k": 1}\n{"k": 2}\n')
    spec = DataSpec(
        path="*_test.jsonl", fields={"subject": "{{ _file | replace('_test', '') }}"}, filter="{{ q != 'b' }}"
    )
    samples = load_samples([spec], tmp_path)
    assert [(s.fields["q"], s.fields["subject"], s.id) for s in samples] == [
        ("a", "x", "x_test/1"),
        ("c", "y", "y_test/1"),
    ]
    joined = load_samples([DataSpec(path="x_test.jsonl", join=["keys.jsonl"])], tmp_path)
    assert [s.fields["k"] for s in joined] == [1, 2]
    with pytest.raises(TaskDefinitionError, match="row-aligned"):
        load_samples([DataSpec(path="y_test.jsonl", join=["keys.jsonl"])], tmp_path)


def test_first_available_source_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("MY_DATA", raising=False)
    (tmp_path / "local.jsonl").write_text('{"q": "local"}\n')
    sources = [DataSpec(path="${MY_DATA}/local.jsonl"), DataSpec(path="local.jsonl")]
    assert load_samples(sources, tmp_path)[0].fields["q"] == "local"
    assert load_samples(sources, tmp_path, {"MY_DATA": str(tmp_path)})[0].fields["q"] == "local"
    with pytest.raises(TaskDefinitionError, match=r"\$\{MY_DATA\} is not set"):
        load_samples(sources[:1], tmp_path)


def test_hub_source_offline_says_so(tmp_path):
    with pytest.raises(TaskDefinitionError, match="dataset not available offline: someone/some-set"):
        load_samples([DataSpec(hub="someone/some-set")], tmp_path)


def test_duplicate_ids_are_an_error(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"id": 1}\n{"id": 1}\n')
    with pytest.raises(TaskDefinitionError) as info:
        load_samples([DataSpec(path="d.jsonl", id="id")], tmp_path)
    assert info.value.row == 2


def test_real_hf_arrow_folder_and_csv_files():
    hellaswag = read_rows(shared_path("data", "hellaswag", "hf_arrow_validation"))
    assert len(hellaswag) == 10042 and {"ctx_a", "ctx_b", "endings", "label"} <= set(hellaswag[0])
    mmlu = load_samples(
        [DataSpec(path="mmlu/*_test.csv", columns=["question", "A", "B", "C", "D", "answer"])], shared_path("data")
    )
    assert len(mmlu) == 1416 and {s.fields["answer"] for s in mmlu} == {"A", "B", "C", "D"}


def test_a_line_repeating_the_header_is_an_error_naming_it(tmp_path):
    """Two CSVs joined with `cat`, each with its header: the second header would be a sample ('q', 'label')."""
    (tmp_path / "d.csv").write_text("q,label\nSay alpha,alpha\nSay beta,beta\nq,label\nSay gamma,gamma\n")
    with pytest.raises(TaskDefinitionError) as caught:
        read_rows(tmp_path / "d.csv")
    assert caught.value.line == 4 and "repeats the header (q, label)" in str(caught.value)
    (tmp_path / "d.tsv").write_text("q\tlabel\nq \t label\n")  # spaced as a header is: the same line
    with pytest.raises(TaskDefinitionError, match="line 2 repeats the header"):
        read_rows(tmp_path / "d.tsv")
    (tmp_path / "ok.csv").write_text("q,label\nq,other\nlabel,q\n")  # a value that is a column's name: a row
    assert [(r["q"], r["label"]) for r in read_rows(tmp_path / "ok.csv")] == [("q", "other"), ("label", "q")]


def test_a_binary_column_of_text_is_an_error_naming_it(tmp_path):
    """Strings written without their UTF8 annotation (older Spark, Hive) read as bytes: a prompt would show
    b'caf\\xc3\\xa9'. Refused, naming file, row and column; bytes that are not text (an image's) stay bytes."""
    words = ["café", "naïve", "Zürich"]
    table = pa.table({"id": [1, 2, 3], "w": pa.array([w.encode() for w in words], pa.binary())})
    pq.write_table(table, tmp_path / "d.parquet")
    with pa.OSFile(str(tmp_path / "d.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    for name in ("d.parquet", "d.arrow"):
        with pytest.raises(TaskDefinitionError) as caught:
            read_rows(tmp_path / name)
        assert (caught.value.field, caught.value.row) == ("w", 1) and "column 'w' is binary" in str(caught.value)
    png = b"\x89PNG\r\n\x1a\n\x00\x00"
    pq.write_table(pa.table({"w": ["x"], "image": pa.array([png], pa.binary())}), tmp_path / "img.parquet")
    assert read_rows(tmp_path / "img.parquet")[0]["image"] == png
    pq.write_table(pa.table({"w": pa.array(words, pa.large_string())}), tmp_path / "s.parquet")
    assert [r["w"] for r in read_rows(tmp_path / "s.parquet")] == words
