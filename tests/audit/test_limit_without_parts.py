"""``data.limit-no-parts``: ``--limit-per-part N`` on a task with no parts cuts the whole task, as ``--limit N``
does; the run says so (red team 12, 133). A task with a breakdown is cut part by part, without the finding."""

from __future__ import annotations

from tests.support.cli_runs import jsonl, results, run_in_process, slow_model_plugin, write

RULE = "data.limit-no-parts"
TASK = """\
name: quiz
kind: multiple_choice
data: {path: data.jsonl, id: id}
prompt: "{{ q }}"
choices: "{{ options }}"
target: "{{ label }}"
"""


def test_a_limit_per_part_on_a_task_without_parts_is_named(tmp_path):
    rows = [{"id": str(i), "q": f"Q{i}?", "options": ["a", "b"], "label": i % 2, "part": "xy"[i % 2]} for i in range(8)]
    jsonl(tmp_path / "t" / "data.jsonl", rows)
    plugin = slow_model_plugin(tmp_path / "plugin", 0.0)
    found = {}
    for name, extra in (("whole", ""), ("parts", "breakdown: [part]\n")):
        write(tmp_path / "t" / "task.yaml", TASK + extra)
        args = ["run", str(tmp_path / "t"), "--plugin", str(plugin), "--model", "slow:x", "--limit-per-part", "2"]
        code, said = run_in_process([*args, "-o", str(tmp_path / name)])
        assert code == 0, said
        task = results(tmp_path / name)["tasks"]["quiz"]
        found[name] = [f for f in task.get("audit") or [] if f["rule"] == RULE]
        found[name + "_n"] = task["n_samples"]
    assert found["whole"] and found["whole"][0]["field"] == "--limit-per-part" and found["whole_n"] == 2
    assert "as --limit 2 takes them" in found["whole"][0]["message"]
    assert not found["parts"] and found["parts_n"] == 4  # two of each part
