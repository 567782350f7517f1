"""``generation.greedy-epochs``: --epochs K with greedy decoding repeats one answer K times (red team 11, 075)."""

from __future__ import annotations

from proctor.cli import main
from tests.support.cli_runs import generate_task, jsonl, results, served_run
from tests.support.reply_faults import ToyLogprobServer


def _run(tmp_path, monkeypatch, capsys, temperature: float | None, *extra: str) -> tuple[str, list[str]]:
    task = generate_task("capitals", "qa.jsonl", "Q: {{ question }}\nA:", "{{ answer }}", 4, temperature=temperature)
    (tmp_path / "t.yaml").write_text(task)
    jsonl(tmp_path / "qa.jsonl", [{"id": str(i), "question": f"Capital {i}?", "answer": "Paris"} for i in range(6)])
    monkeypatch.chdir(tmp_path)
    with ToyLogprobServer() as server:
        try:
            main(served_run("t.yaml", server.url, "out", *extra))
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr()
    said = capsys.readouterr()
    return said.out + said.err, results(tmp_path / "out").get("warnings") or []


def test_greedy_epochs_are_named_as_copies_of_one_answer(tmp_path, monkeypatch, capsys):
    said, warnings = _run(tmp_path, monkeypatch, capsys, None, "--epochs", "3", "--epoch-reducer", "pass@2")
    assert "audit [generation.greedy-epochs]" in said and "the 3 epochs are 3 copies of one" in said
    assert any("generation.greedy-epochs" in w and "t.yaml" in w for w in warnings)


def test_sampled_epochs_and_one_greedy_epoch_are_silent(tmp_path, monkeypatch, capsys):
    said, _ = _run(tmp_path, monkeypatch, capsys, 0.7, "--epochs", "3")
    assert "greedy-epochs" not in said
    said, _ = _run(tmp_path, monkeypatch, capsys, None, "-o", "out2")
    assert "greedy-epochs" not in said
