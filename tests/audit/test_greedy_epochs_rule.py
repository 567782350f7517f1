"""``generation.greedy-epochs``: --epochs K with greedy decoding repeats one answer K times (red team 11, 075)."""

from __future__ import annotations

import json

from proctor.cli import main
from tests.support.reply_faults import ToyLogprobServer

TASK = """\
name: capitals
kind: generate
data: {path: qa.jsonl, id: id}
prompt: "Q: {{ question }}\\nA:"
target: "{{ answer }}"
generation: {max_tokens: 4, stop: ["\\n"]GEN}
metrics: [exact_match]
"""


def _run(tmp_path, monkeypatch, capsys, temperature: str, *extra: str) -> tuple[str, list[str]]:
    (tmp_path / "t.yaml").write_text(TASK.replace("GEN", temperature))
    rows = [{"id": str(i), "question": f"Capital {i}?", "answer": "Paris"} for i in range(6)]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(tmp_path)
    with ToyLogprobServer() as server:
        try:
            main(["run", "t.yaml", "--model", "openai:toy", "--base-url", server.url, "-o", "out", *extra])
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr()
    said = capsys.readouterr()
    return said.out + said.err, json.loads((tmp_path / "out" / "results.json").read_text()).get("warnings") or []


def test_greedy_epochs_are_named_as_copies_of_one_answer(tmp_path, monkeypatch, capsys):
    said, warnings = _run(tmp_path, monkeypatch, capsys, "", "--epochs", "3", "--epoch-reducer", "pass@2")
    assert "audit [generation.greedy-epochs]" in said and "the 3 epochs are 3 copies of one" in said
    assert any("generation.greedy-epochs" in w and "t.yaml" in w for w in warnings)


def test_sampled_epochs_and_one_greedy_epoch_are_silent(tmp_path, monkeypatch, capsys):
    said, _ = _run(tmp_path, monkeypatch, capsys, ", temperature: 0.7", "--epochs", "3")
    assert "greedy-epochs" not in said
    said, _ = _run(tmp_path, monkeypatch, capsys, "", "-o", "out2")
    assert "greedy-epochs" not in said
