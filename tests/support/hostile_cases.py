"""Hostile task folders for tests/cross_cutting/test_trust.py: code without consent, templates escaping their sandbox,
paths climbing out of the task's folder. Each case writes files (and symlinks) into a fresh folder; the
task lives in ``sub/`` and the "private" files one level up, so a path that climbs out has something to
read. Every case must exit non-zero with one message naming the file and the key (or row), before any
model loads, and no code it names may run: the code writes ``PWNED`` if it ever does."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tests.support.malformed_cases import GLM, GLM_ROWS, PROBSEM_PROMPT, PROBSEM_SUITE, ROWS, USECASE, jsonl

# Code that leaves a mark when it runs (imported, or called as a class)
EVIL = """\
import pathlib
pathlib.Path("PWNED").write_text("ran")
from proctor.tasks.custom import GenerationTask, MultipleChoiceTask


class Evil(MultipleChoiceTask):
    pass


class Task(MultipleChoiceTask):
    pass
"""
# A template that, outside a sandbox, reaches os through a Jinja global and runs a command
ESCAPE = "{{ cycler.__init__.__globals__.os.system('touch PWNED') }}"

NATIVE = """\
name: arith
kind: multiple_choice
data: data.jsonl
prompt: "Q: {{ question }}\\nA:"
choices: "{{ choices }}"
target: "{{ label }}"
"""
IMAGE_NATIVE = NATIVE + 'images: "{{ picture }}"\n'
SECRET = "root:x:0:0:the private file\n"


def png() -> bytes:
    """A small real PNG (Pillow), or a stand-in when Pillow is missing (image cases then fail differently)."""
    try:
        from tests.support.vision_fixtures import png_bytes
    except ImportError:  # pragma: no cover
        return b"\x89PNG"
    return png_bytes((200, 20, 20))


@dataclass
class Hostile:
    id: str
    args: list
    expect: list  # words the one message must contain (case-insensitive)
    files: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)  # name -> target, both relative to the case's folder


def native(old: str | None = None, new: str = "", *, base: str = NATIVE) -> str:
    if old is None:
        return base
    assert old in base, old
    return base.replace(old, new)


SUB = {
    "sub/task.yaml": NATIVE,
    "sub/data.jsonl": jsonl(ROWS),
    "secret.txt": SECRET,
    "secret.jsonl": jsonl(ROWS),
    "evil.py": EVIL,
}
RUN = ["run", "sub/task.yaml", "-o", "out"]
TRUSTED = RUN + ["--trust-task-code"]
CASES: list[Hostile] = []


def add(id, args, expect, files=None, links=None):
    CASES.append(Hostile(id, list(args), list(expect), {**SUB, **(files or {})}, dict(links or {})))


# --- templates: every field a task file templates, in the sandbox -----------------------------------
for name, old, new, fld in [
    ("prompt", 'prompt: "Q: {{ question }}\\nA:"', f'prompt: "{ESCAPE}"', "prompt"),
    ("choices", 'choices: "{{ choices }}"', f'choices: "{ESCAPE}"', "choices"),
    ("target", 'target: "{{ label }}"', f'target: "{ESCAPE}"', "target"),
    (
        "fewshot-template",
        'target: "{{ label }}"\n',
        f'target: "{{{{ label }}}}"\nfewshot: {{count: 1, template: "{ESCAPE}"}}\n',
        "fewshot.template",
    ),
    (
        "chat-system",
        'target: "{{ label }}"\n',
        f'target: "{{{{ label }}}}"\nchat: {{enabled: true, system: "{ESCAPE}"}}\n',
        "chat.system",
    ),
    ("data-filter", "data: data.jsonl", f'data: {{path: data.jsonl, filter: "{ESCAPE}"}}', "data.filter"),
    ("data-fields", "data: data.jsonl", f'data: {{path: data.jsonl, fields: {{x: "{ESCAPE}"}}}}', "data.fields.x"),
    ("images", 'target: "{{ label }}"\n', f'target: "{{{{ label }}}}"\nimages: "{ESCAPE}"\n', "images"),
    (
        "subclasses",
        'prompt: "Q: {{ question }}\\nA:"',
        "prompt: \"{{ ''.__class__.__mro__[1].__subclasses__() }}\"",
        "prompt",
    ),
    (
        "format-string",
        'prompt: "Q: {{ question }}\\nA:"',
        "prompt: \"{{ '{0.__class__.__mro__}'.format(question) }}\"",
        "prompt",
    ),
    ("mutates-row", 'prompt: "Q: {{ question }}\\nA:"', 'prompt: "{{ choices.append(question) }}"', "prompt"),
]:
    add(f"sandbox-native-{name}", RUN, ["sub/task.yaml", fld, "sandbox"], {"sub/task.yaml": native(old, new)})
add(
    "sandbox-native-perplexity-text",
    RUN,
    ["sub/task.yaml", "text", "sandbox"],
    {"sub/task.yaml": f'name: ppl\nkind: perplexity\ndata: data.jsonl\ntext: "{ESCAPE}"\n'},
)

# --- code named by a task file runs only with --trust-task-code --------------------------------------
for verb in ("run", "validate"):
    args = [verb, "sub/task.yaml"] + (["-o", "out"] if verb == "run" else [])
    add(
        f"consent-native-task-class-file-{verb}",
        args,
        ["sub/task.yaml", "task_class", "--trust-task-code"],
        {"sub/task.yaml": NATIVE + "task_class: evil.py:Evil\n", "sub/evil.py": EVIL},
    )
add(
    "consent-native-task-class-dotted",
    RUN,
    ["sub/task.yaml", "task_class", "--trust-task-code"],
    {"sub/task.yaml": NATIVE + "task_class: evil.Evil\n", "sub/evil.py": EVIL},
)
add(
    "consent-native-task-class-from-defaults",
    RUN,
    ["sub/task.yaml", "task_class", "--trust-task-code"],
    {
        "sub/task.yaml": "defaults: {task_class: evil.py:Evil}\ntasks:\n"
        + "".join(("  - " if i == 0 else "    ") + line + "\n" for i, line in enumerate(NATIVE.splitlines())),
        "sub/evil.py": EVIL,
    },
)
G = {"sub/glm.yaml": GLM, "sub/data/test.jsonl": jsonl(GLM_ROWS), "sub/evil.py": EVIL}
GRUN = ["run", "sub/glm.yaml", "-o", "out", "--data-path", "sub"]
add(
    "consent-glm-module",
    GRUN,
    ["sub/glm.yaml", "module", "--trust-task-code"],
    {**G, "sub/glm.yaml": GLM + 'module: "evil.Task"\n'},
)
add(
    "consent-glm-module-for-proctor",
    GRUN,
    ["sub/glm.yaml", "module", "--trust-task-code"],
    {**G, "sub/glm.yaml": GLM + 'module: "evil.Evil"\n'},
)
add(
    "consent-glm-module-validate",
    ["validate", "sub/glm.yaml", "--data-path", "sub"],
    ["sub/glm.yaml", "module", "--trust-task-code"],
    {**G, "sub/glm.yaml": GLM + 'module: "evil.Task"\n'},
)
add(
    "consent-usecase-config-metric-file",
    ["run", "sub/uc.py", "-o", "out", "--use-case-config", "sub/uc.yaml"],
    ["sub/uc.yaml", "evaluation_metrics", "--trust-task-code"],
    {"sub/uc.py": USECASE, "sub/uc.yaml": "evaluation_metrics: ['evil.py:Evil']\n", "sub/evil.py": EVIL},
)
add(
    "consent-usecase-config-metric-module",
    ["run", "sub/uc.py", "-o", "out", "--use-case-config", "sub/uc.yaml"],
    ["sub/uc.yaml", "evaluation_metrics", "--trust-task-code"],
    {"sub/uc.py": USECASE, "sub/uc.yaml": "evaluation_metrics: ['evil:Evil']\n", "sub/evil.py": EVIL},
)

# a model a use case config names that would import code (steer:FILE.py:NAME): the config's, not the user's
UCRUN = ["run", "sub/uc.py", "-o", "out", "--use-case-config", "sub/uc.yaml"]
STEER_EVIL = "steer:sub/evil.py:Evil"
for case_id, config, field_name in (
    (
        "judge-steer",
        f"evaluation_metrics:\n  - {{metric: LLMJudgeMetric, model_or_id: '{STEER_EVIL}', prompt_template: 'Rate'}}\n",
        "evaluation_metrics[0].model_or_id",
    ),
    (
        "metric-steer",
        f"evaluation_metrics: [{{metric: Perplexity, model_or_id: '{STEER_EVIL}'}}]\n",
        "evaluation_metrics[0].model_or_id",
    ),
    (
        "steer-spaces-case",
        "evaluation_metrics:\n  - {metric: Perplexity, model_or_id: ' STEER :sub/evil.py:Evil '}\n",
        "evaluation_metrics[0].model_or_id",
    ),
    ("kwargs-steer", f"use_case_kwargs: {{judges: [{{model: '{STEER_EVIL}'}}]}}\n", "use_case_kwargs.judges[0].model"),
):
    add(
        f"consent-usecase-config-{case_id}",
        UCRUN,
        ["sub/uc.yaml", field_name, "--trust-task-code"],
        {"sub/uc.py": USECASE, "sub/uc.yaml": config, "sub/evil.py": EVIL},
    )


# --- with consent, code still comes from the task's folder only ------------------------------------
add(
    "trusted-task-class-climbs-out",
    TRUSTED,
    ["sub/task.yaml", "task_class", "outside the task's folder"],
    {"sub/task.yaml": NATIVE + "task_class: ../evil.py:Evil\n"},
)
add(
    "trusted-task-class-absolute",
    TRUSTED,
    ["sub/task.yaml", "task_class", "outside the task's folder"],
    {"sub/task.yaml": NATIVE + "task_class: {root}/evil.py:Evil\n"},
)
add(
    "trusted-task-class-dotted-in-parent",
    TRUSTED,
    ["sub/task.yaml", "task_class", "outside the task's folder"],
    {"sub/task.yaml": NATIVE + "task_class: pkg.evil.Evil\n", "pkg/evil.py": EVIL},
)
add(
    "trusted-task-class-symlink-out",
    TRUSTED,
    ["sub/task.yaml", "task_class", "outside the task's folder"],
    {"sub/task.yaml": NATIVE + "task_class: linked.py:Evil\n"},
    {"sub/linked.py": "evil.py"},
)
add(
    "trusted-task-class-parent-package-init",
    ["run", "pkg/sub/task.yaml", "-o", "out", "--trust-task-code"],
    ["pkg/sub/task.yaml", "task_class", "pkg/__init__.py"],
    {
        "pkg/sub/task.yaml": NATIVE + "task_class: pkg.sub.code.Evil\n",
        "pkg/sub/data.jsonl": jsonl(ROWS),
        "pkg/sub/code.py": EVIL,
        "pkg/__init__.py": EVIL,
    },
)
add(
    "trusted-glm-module-in-parent",
    GRUN + ["--trust-task-code"],
    ["sub/glm.yaml", "module", "outside the task's folder"],
    {**G, "sub/glm.yaml": GLM + 'module: "pkg.evil.Task"\n', "pkg/evil.py": EVIL},
)
add(
    "trusted-glm-module-sibling-folder",
    ["run", "sub/glm/glm.yaml", "-o", "out", "--data-path", "sub/glm", "--trust-task-code"],
    ["sub/glm/glm.yaml", "module", "outside the task's folder"],
    {
        "sub/glm/glm.yaml": GLM + 'module: "sub.rules.evil.Task"\n',
        "sub/glm/data/test.jsonl": jsonl(GLM_ROWS),
        "sub/rules/evil.py": EVIL,
    },
)

# --- paths stay inside the task's folder and the folders given on the command line ------------------
add(
    "path-native-climbs-out",
    RUN,
    ["sub/task.yaml", "data.path", "../secret.jsonl"],
    {"sub/task.yaml": native("data: data.jsonl", "data: ../secret.jsonl")},
)
add(
    "path-native-etc-passwd",
    RUN,
    ["sub/task.yaml", "data.path", "etc/passwd"],
    {
        "sub/task.yaml": "name: leak\nkind: perplexity\n"
        'data: {path: ../../../../../../../../etc/passwd, format: text}\ntext: "{{ text }}"\n'
    },
)
add(
    "path-native-absolute",
    RUN,
    ["sub/task.yaml", "data.path", "secret.jsonl"],
    {"sub/task.yaml": native("data: data.jsonl", "data: {root}/secret.jsonl")},
)
add(
    "path-native-glob-climbs-out",
    RUN,
    ["sub/task.yaml", "data.path", "../*.jsonl"],
    {"sub/task.yaml": native("data: data.jsonl", "data: ../*.jsonl")},
)
add(
    "path-native-environment-variable",
    RUN,
    ["sub/task.yaml", "data.path", "${HOME}"],
    {"sub/task.yaml": native("data: data.jsonl", "data: {path: '${HOME}/.profile', format: text}")},
)
add(
    "path-native-join-climbs-out",
    RUN,
    ["sub/task.yaml", "data.join", "../secret.jsonl"],
    {"sub/task.yaml": native("data: data.jsonl", "data: {path: data.jsonl, join: [../secret.jsonl]}")},
)
add(
    "path-native-fewshot-source-climbs-out",
    RUN,
    ["sub/task.yaml", "fewshot.source", "../secret.jsonl"],
    {"sub/task.yaml": NATIVE + "fewshot: {count: 1, source: {path: ../secret.jsonl}}\n"},
)
add(
    "path-native-symlinked-data",
    RUN,
    ["sub/task.yaml", "data.path", "symlink"],
    {"sub/task.yaml": native("data: data.jsonl", "data: linked.jsonl")},
    {"sub/linked.jsonl": "secret.jsonl"},
)
add(
    "path-native-symlinked-folder",
    RUN,
    ["sub/task.yaml", "data.path", "symlink"],
    {"sub/task.yaml": native("data: data.jsonl", "data: shared/secret.jsonl")},
    {"sub/shared": "."},
)
IMAGE_ROWS = [{**r, "picture": "../secret.png"} for r in ROWS]
add(
    "path-image-climbs-out",
    RUN,
    ["sub/data.jsonl", "row 1", "picture", "../secret.png"],
    {"sub/task.yaml": IMAGE_NATIVE, "sub/data.jsonl": jsonl(IMAGE_ROWS), "secret.png": png()},
)
add(
    "path-image-absolute",
    RUN,
    ["sub/data.jsonl", "row 1", "picture", "secret.png"],
    {
        "sub/task.yaml": IMAGE_NATIVE,
        "sub/data.jsonl": jsonl([{**r, "picture": "{root}/secret.png"} for r in ROWS]),
        "secret.png": png(),
    },
)
add(
    "path-image-symlink",
    RUN,
    ["sub/data.jsonl", "row 1", "picture", "symlink"],
    {
        "sub/task.yaml": IMAGE_NATIVE,
        "sub/data.jsonl": jsonl([{**r, "picture": "img.png"} for r in ROWS]),
        "secret.png": png(),
    },
    {"sub/img.png": "secret.png"},
)
add(
    "path-glm-climbs-out",
    ["run", "sub/glm.yaml", "-o", "out"],
    ["sub/glm.yaml", "path", "../data"],
    {"sub/glm.yaml": GLM.replace('path: "data"', 'path: "../data"'), "data/test.jsonl": jsonl(GLM_ROWS)},
)
add(
    "path-glm-file-pattern-climbs-out",
    GRUN,
    ["sub/glm.yaml", "../", "data.path"],
    {**G, "sub/glm.yaml": GLM.replace('test: "**/test.jsonl"', 'test: "../../secret.jsonl"')},
)
add(
    "path-glm-module-climbs-out",
    GRUN + ["--trust-task-code"],
    ["sub/glm.yaml", "path", "../data"],
    {
        **G,
        "sub/glm.yaml": GLM.replace('path: "data"', 'path: "../data"') + 'module: "gtask.Task"\n',
        "sub/gtask.py": "from evaluation import MultiChoiceTask\n\nclass Task(MultiChoiceTask):\n    pass\n",
        "data/test.jsonl": jsonl(GLM_ROWS),
    },
)
SEAHELM = """\
quiz:
  name: quiz
  competency: nlu
  metric: accuracy
  languages:
    en:
      filepath: {filepath}
      max_tokens: 4
      prompt_template:
        task_template: "{{text}}"
        answer_tag: "Answer:"
"""
add(
    "path-seahelm-climbs-out",
    ["run", "sub/config.yaml", "-o", "out"],
    ["sub/config.yaml", "quiz.languages.en.filepath", "secret.jsonl"],
    {"sub/config.yaml": SEAHELM.format(filepath="../secret.jsonl")},
)
add(
    "path-seahelm-metric-file-climbs-out",
    ["run", "sub/config.yaml", "-o", "out", "--trust-task-code"],
    ["sub/config.yaml", "metric_file", "evil.py"],
    {
        "sub/config.yaml": SEAHELM.format(filepath="rows.jsonl") + "  metric_file: ../evil.py\n  metric_class: Evil\n",
        "sub/rows.jsonl": jsonl([{"id": 1, "label": "a", "prompts": [{"text": "x"}]}]),
    },
)
add(
    "path-probsem-symlinked-suite",
    ["run", "sub/p.txt", "-o", "out"],
    ["sub/p_a.json", "symlink"],
    {"sub/p.txt": PROBSEM_PROMPT, "secret.json": json.dumps(PROBSEM_SUITE)},
    {"sub/p_A.json": "secret.json"},
)
add(
    "path-probsem-symlinked-prompt",
    ["run", "sub/p_A.json", "-o", "out"],
    ["sub/p.txt", "symlink"],
    {"sub/p_A.json": json.dumps(PROBSEM_SUITE)},
    {"sub/p.txt": "secret.txt"},
)
add(
    "path-usecase-data-climbs-out",
    ["run", "sub/uc.py", "-o", "out"],
    ["sub/uc.py", "evaluation_data", "../secret.jsonl"],
    {"sub/uc.py": USECASE.replace('[{"id": "1", "question": "hi"}]', '"../secret.jsonl"')},
)
add(
    "path-usecase-config-data-climbs-out",
    ["run", "sub/uc.py", "-o", "out", "--use-case-config", "sub/uc.yaml"],
    ["sub/uc.yaml", "evaluation_data", "../secret.jsonl"],
    {"sub/uc.py": USECASE, "sub/uc.yaml": "evaluation_data: ../secret.jsonl\n"},
)
LMEVAL = """\
task: leak
dataset_path: json
dataset_kwargs:
  data_files: {{test: {data}}}
output_type: multiple_choice
test_split: test
doc_to_text: "{text}"
doc_to_choice: choices
doc_to_target: label
metric_list:
  - metric: acc
"""
add(
    "path-lmeval-data-files-climb-out",
    ["run", "sub/leak.yaml", "-o", "out"],
    ["sub/leak.yaml", "data_files", "secret.jsonl"],
    {"sub/leak.yaml": LMEVAL.format(data="../secret.jsonl", text="{{question}}")},
)
for name, key in (
    ("doc-to-text", "doc_to_text"),
    ("doc-to-choice", "doc_to_choice"),
    ("doc-to-target", "doc_to_target"),
):
    text = LMEVAL.format(data="{root}/sub/data.jsonl", text="{{question}}")
    text = text.replace(
        f"{key}: " + {"doc_to_text": '"{{question}}"', "doc_to_choice": "choices", "doc_to_target": "label"}[key],
        f'{key}: "{ESCAPE}"',
    )
    add(
        f"sandbox-lmeval-{name}",
        ["run", "sub/leak.yaml", "-o", "out"],
        ["sub/leak.yaml", key, "sandbox"],
        {"sub/leak.yaml": text},
    )
HOOKED = LMEVAL.format(data="{root}/sub/data.jsonl", text="{{question}}") + "process_docs: !function hook.shout\n"
add(
    "consent-lmeval-function",
    ["run", "sub/leak.yaml", "-o", "out"],
    ["sub", "!function hook.shout", "--trust-task-code"],
    {"sub/leak.yaml": HOOKED, "sub/hook.py": EVIL + "\ndef shout(docs):\n    return docs\n"},
)
add(
    "trusted-lmeval-function-symlink-out",
    ["run", "sub/leak.yaml", "-o", "out", "--trust-task-code"],
    ["sub", "!function", "outside the task's folder"],
    {"sub/leak.yaml": HOOKED, "evil.py": EVIL + "\ndef shout(docs):\n    return docs\n"},
    {"sub/hook.py": "evil.py"},
)
