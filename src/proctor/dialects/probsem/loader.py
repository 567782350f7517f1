"""probsem test suites read into tasks: ``<prompt>.txt`` + ``<prompt>_<suite>.json``, one proctor task per suite.

Scoring follows probsem (reference §1): every context of a suite is a sample, every query a choice.
The text scored is ``"\\n".join([prompt, text, query])`` where ``text`` joins the non-empty pretext,
context text and posttext with newlines; a query's log-prob is the sum over exactly its own tokens in
that joint tokenisation (no BOS off-by-one), optionally divided by its token count (``norm``), then by
``temp``; a softmax over the queries gives the distribution. Unlike probsem, a multi-line query is
scored whole (probsem scores only its last line).

Suites of the CogSci2023 / CoCoSci2022 branches (``premise``, ``context``, ``query``, ``programs``) run
as that branch scores them: see ``proctor.dialects.probsem.cogsci``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Callable

from proctor.core.data_spec import DataSpec
from proctor.core.errors import TaskDefinitionError
from proctor.core.task import Task
from proctor.core.task_spec import ExportSpec, HandlerSpec, MetricSpec, TaskSpec
from proctor.data.file_text import decode_utf8, read_lines_text
from proctor.data.readers import parse_json
from proctor.dialects.probsem.options import ProbsemOptions
from proctor.dialects.probsem.task_options import CogSci2023Options, ProbsemSuiteOptions

log = logging.getLogger(__name__)

Suite = dict[str, Any]  # a suite file's JSON object as read_suite checked it (its keys as probsem's formats name them)


def prompt_for_suite(path: Path) -> Path | None:
    """The prompt a suite file belongs to: the longest ``<prompt>.txt`` whose name + '_' starts the suite's."""
    stem = path.stem
    best = None
    for index in [m.start() for m in re.finditer("_", stem)]:
        candidate = path.with_name(stem[:index] + ".txt")
        if candidate.is_file():
            best = candidate
    return best


def suites_of(prompt: Path) -> list[Path]:
    return sorted(
        p
        for p in prompt.parent.glob(f"{glob_escape(prompt.stem)}_*.json")
        if p.is_file() and prompt_for_suite(p) == prompt  # a folder named like a suite is not one
    )


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def find_in_folder(folder: Path) -> list[Path]:
    """Prompt files under ``folder`` (recursively) that have at least one suite beside them."""
    return sorted(p for p in folder.rglob("*.txt") if p.is_file() and suites_of(p))


def claims_path(path: Path) -> bool:
    if path.suffix == ".txt":
        return bool(suites_of(path))
    return path.suffix == ".json" and prompt_for_suite(path) is not None


def _line_of(text: str, key: str) -> int | None:
    match = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def read_suite(path: Path) -> Suite:
    """Parse and check one suite file; every problem names the file, the line where known, and the field."""
    text = decode_utf8(path)
    if not text.strip():
        raise TaskDefinitionError(
            "the suite file is empty; a probsem suite is a JSON object with pretext, context, posttext and queries",
            file=path,
        )
    suite = parse_json(text, path)  # the data reader's checks: a key given twice is an error, not the last kept
    if not isinstance(suite, dict):
        raise TaskDefinitionError(f"a probsem suite is a JSON object, got {type(suite).__name__}", file=path)

    def fail(message: str, field: str, key: str | None = None) -> TaskDefinitionError:
        return TaskDefinitionError(message, file=path, line=_line_of(text, key or field), field=field)

    if "premise" in suite or "programs" in suite:
        return _read_cogsci2023(suite, fail)
    for key in ("pretext", "context", "posttext", "queries"):
        if key not in suite:
            raise TaskDefinitionError(
                f"missing required key '{key}' (a suite has pretext, context, posttext and queries)",
                file=path,
                field=key,
            )
    for key in ("pretext", "posttext"):
        if not isinstance(suite[key], str):
            raise fail(f"'{key}' must be a string (use \"\" for none), got {type(suite[key]).__name__}", key)
    queries = suite["queries"]
    if not isinstance(queries, list) or not queries:
        raise fail("'queries' must be a non-empty list of strings", "queries")
    for i, query in enumerate(queries):
        if not isinstance(query, str):
            raise fail(f"query {i} must be a string, got {type(query).__name__}", f"queries[{i}]", "queries")
        if not query.strip():
            raise fail(f"query {i} is empty", f"queries[{i}]", "queries")
    contexts = suite["context"]
    if not isinstance(contexts, list) or not contexts:
        raise fail('\'context\' must be a non-empty list of {"text": ..., "expected": ...} objects', "context")
    for i, item in enumerate(contexts):
        field = f"context[{i}]"
        if not isinstance(item, dict):
            raise fail(
                f"{field} must be an object with 'text' and 'expected', got {type(item).__name__}", field, "context"
            )
        for key in ("text", "expected"):
            if key not in item:
                raise fail(f"{field} is missing '{key}'", f"{field}.{key}", "context")
        if not isinstance(item["text"], str):
            raise fail(f"{field}.text must be a string", f"{field}.text", "context")
        expected = item["expected"]
        if isinstance(expected, bool) or not isinstance(expected, int):
            raise fail(
                f"{field}.expected must be an integer (a query index, or -1 for none), got {expected!r}",
                f"{field}.expected",
                "context",
            )
        if not -1 <= expected < len(queries):
            raise fail(
                f"{field}.expected is {expected}, out of range: there are {len(queries)} queries "
                f"(0..{len(queries) - 1}, or -1 for none)",
                f"{field}.expected",
                "context",
            )
    return suite


def _read_cogsci2023(suite: Suite, fail: Callable[..., TaskDefinitionError]) -> Suite:
    """The CogSci2023 (and CoCoSci2022) branch's format, checked as that branch's TestSuite asserts it:
    premise / query are strings starting with ';;' (";;" alone means none), every context text starts
    with ';;', programs are strings written "(...)"."""
    for key in ("premise", "context", "query", "programs"):
        if key not in suite:
            raise fail(
                f"missing required key '{key}' (a CogSci2023 suite has premise, context, query and programs)", key
            )
    for key in ("premise", "query"):
        if not isinstance(suite[key], str) or not suite[key].startswith(";;"):
            raise fail(
                f"'{key}' must be a string starting with ';;' (\";;\" alone for none), got {suite[key]!r:.60}", key
            )
    programs = suite["programs"]
    if not isinstance(programs, list) or not programs:
        raise fail("'programs' must be a non-empty list of strings", "programs")
    for i, program in enumerate(programs):
        if not isinstance(program, str) or not (program.startswith("(") and program.endswith(")")):
            raise fail(
                f'program {i} must be a string written "(...)", got {program!r:.60}', f"programs[{i}]", "programs"
            )
    contexts = suite["context"]
    if not isinstance(contexts, list) or not contexts:
        raise fail('\'context\' must be a non-empty list of {"text": ..., "expected": ...} objects', "context")
    for i, item in enumerate(contexts):
        field = f"context[{i}]"
        if not isinstance(item, dict) or "text" not in item or "expected" not in item:
            raise fail(f"{field} must be an object with 'text' and 'expected'", field, "context")
        if not isinstance(item["text"], str) or not item["text"].startswith(";;"):
            raise fail(f"{field}.text must be a string starting with ';;'", f"{field}.text", "context")
        expected = item["expected"]
        if isinstance(expected, bool) or not isinstance(expected, int) or not -1 <= expected < len(programs):
            raise fail(
                f"{field}.expected must be a program index 0..{len(programs) - 1} or -1, got {expected!r}",
                f"{field}.expected",
                "context",
            )
    suite["_format"] = "cogsci2023"
    return suite


def _cogsci2023_task(path: Path, prompt: Path, suite: Suite) -> Task:
    """A spec of its own: the suite's contexts are the data, its prompt, premise, query and programs the handler's
    options; the handler gives each context's prompt and choices (``cogsci.CogSci2023Task``)."""
    prompt_name = prompt.stem
    suite_name = path.stem[len(prompt_name) + 1 :]
    options = CogSci2023Options(
        prompt=read_lines_text(prompt, keep_bom=True),  # as probsem's open() reads it
        premise=suite["premise"],
        query=suite["query"],
        programs=tuple(suite["programs"]),
    )
    spec = TaskSpec(
        name=path.stem,
        kind="multiple_choice",
        description=f"probsem (CogSci2023 format) suite '{suite_name}' of prompt '{prompt_name}'",
        data=[DataSpec(path=str(path.resolve()), format="json", records_key="context")],
        target_delimiter="",
        unscored_target=-1,
        choice_normalization="sqrt_tokens",  # the branch's Model.score(normalize=True): logp / sqrt(n)
        metrics=[MetricSpec(name="distribution_acc")],
        handler=HandlerSpec(name="probsem.cogsci2023", options=options),
    )
    return Task(spec=spec, file=path, base_dir=path.parent, dialect="probsem", line=None, lines={})


def suite_task(path: Path, prompt: Path, options: ProbsemOptions | None = None) -> Task:
    options = options or ProbsemOptions()
    norm, temp = options.probsem_norm, options.probsem_temp
    suite = read_suite(path)
    if suite.get("_format") == "cogsci2023":
        if norm or temp != 1.0:
            log.warning(
                "%s: --norm / --temp do not apply to the CogSci2023 suite format (that branch always divides by "
                "the square root of the program's token count, at temperature 1)",
                path,
            )
        return _cogsci2023_task(path, prompt, suite)
    return _suite_task(path, prompt, suite, norm, temp)


def _suite_task(path: Path, prompt: Path, suite: Suite, norm: bool, temp: float) -> Task:
    """A spec of its own: the suite's contexts are the data, its prompt, pretext, posttext and queries the
    handler's options; the handler gives each context's prompt, choices and target (``suite.ProbsemSuiteTask``)."""
    prompt_name = prompt.stem
    suite_name = path.stem[len(prompt_name) + 1 :]
    options = ProbsemSuiteOptions(
        prompt=read_lines_text(prompt, keep_bom=True),  # as probsem's open() reads it
        pretext=suite["pretext"],
        posttext=suite["posttext"],
        queries=tuple(suite["queries"]),
    )
    csv_file = f"{prompt_name}_{suite_name}_{{model}}_results.csv"
    spec = TaskSpec(
        name=path.stem,
        kind="multiple_choice",
        description=f"probsem suite '{suite_name}' of prompt '{prompt_name}'",
        data=[DataSpec(path=str(path.resolve()), format="json", records_key="context")],
        target_delimiter="",
        move_whitespace=False,
        unscored_target=-1,
        choice_normalization="tokens" if norm else "none",
        choice_temperature=temp,
        metrics=[MetricSpec(name="distribution_acc")],
        exports=[
            ExportSpec(
                format="choices_csv",
                options={"file": csv_file, "pretext": suite["pretext"], "posttext": suite["posttext"]},
            )
        ],
        handler=HandlerSpec(name="probsem.suite", options=options),
    )
    return Task(spec=spec, file=path, base_dir=path.parent, dialect="probsem", line=None, lines={})


def _beside(file: Path, named: Path) -> Path:
    """A prompt or suite found beside the file named: in its folder, not a symlink pointing out (docs/trust.md)."""
    if not file.resolve().is_relative_to(named.parent.resolve()):
        raise TaskDefinitionError(
            f"is a symlink to {file.resolve()}, outside the folder {named.parent}; probsem reads "
            "prompts and suites from the task's folder only",
            file=file,
        )
    return file


def load_path(path: Path, explicit: bool, options: ProbsemOptions | None = None) -> list[Task]:
    """Tasks from a prompt ``.txt`` (all its suites) or one suite ``.json``."""
    if path.suffix == ".txt":
        suites = [_beside(suite, path) for suite in suites_of(path)]
        if not suites:
            if explicit:
                raise TaskDefinitionError(
                    f"no probsem suites beside this prompt: expected files named {path.stem}_<suite>.json", file=path
                )
            return []
        return [suite_task(suite, path, options) for suite in suites]
    prompt = prompt_for_suite(path)
    if prompt is None:
        if explicit:
            stem = path.stem
            wanted = [path.with_name(stem[: m.start()] + ".txt").name for m in re.finditer("_", stem)]
            raise TaskDefinitionError(
                "a probsem suite is named <prompt>_<suite>.json beside its <prompt>.txt; no prompt file found "
                f"(looked for {', '.join(wanted) or 'a <prompt>.txt: the name has no _'} in {path.parent})",
                file=path,
            )
        return []
    return [suite_task(path, _beside(prompt, path), options)]
