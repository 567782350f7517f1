"""The lm-eval dialect's audit rule: few-shot examples that lm-eval's own sampler draws from the evaluated docs.

lm-eval picks a task's examples itself (its ``fewshot_split``, else the training or validation split, else the
test split with the document itself left out), so the generic ``fewshot.*`` rules, which read a native task's
``fewshot:``, cannot see them. This rule reads the task lm-eval built (``handler.task``).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from proctor.audit import answer_shapes
from proctor.core.audit import Hit


def _key(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)


def _at_task(subject: Any, message: str, field: str, sample: str | None = None) -> Hit:
    """A hit at the task's file and line (lm-eval's YAML), naming ``field`` and, where one is named, the document."""
    return Hit(
        message,
        file=str(subject.task.file) if subject.task.file else None,
        line=subject.task.line,
        field=field,
        sample=sample,
    )


def fewshot_from_evaluated(subject: Any) -> Iterator[Hit]:
    task = getattr(subject.handler, "task", None)
    shots = getattr(getattr(task, "config", None), "num_fewshot", None) or 0
    if task is None or shots <= 0:
        return
    try:
        pool = [_key(doc) for doc in task.fewshot_docs()]
        evaluated = [_key(doc) for doc in task.eval_docs]
    except Exception:  # noqa: BLE001 - a task whose docs lm-eval cannot list has no pool to compare
        return
    shared = len(set(evaluated) & set(pool))
    if not shared:
        return
    config = task.config
    split = getattr(config, "fewshot_split", None)
    how = f"fewshot_split '{split}'" if split else "no fewshot_split (lm-eval then draws from the test split)"
    yield _at_task(
        subject,
        f"{shared} of {len(evaluated)} evaluated documents are also in the pool lm-eval draws its {shots} few-shot "
        f"example(s) from ({how}; test_split '{getattr(config, 'test_split', None)}'): examples are test items, "
        "and a copy of the document itself can be shown with its answer",
        "fewshot_split",
    )


PROBE_DOCS = 200  # documents whose targets are scored as answers: each one a document scored 0 whatever is said
_SAFE_METRICS = "lm_eval."  # metrics of lm-eval's own modules: pure functions of the texts (no code is run)


def _golds(task: Any, doc: Any) -> list[str]:
    """The texts lm-eval compares an answer with, as its ``process_results`` finds them."""
    gold = task.doc_to_target(doc)
    if task.config.doc_to_choice is not None and isinstance(gold, int):
        gold = task.doc_to_choice(doc)[gold]
    golds = gold if isinstance(gold, list) else [gold]
    return [g for g in golds if isinstance(g, str) and g.strip()]


def _written(gold: str, delimiter: str, until: list[str]) -> str:
    """The target as the model would write it: after the delimiter, and ending at the first stop string."""
    text = delimiter + gold
    for stop in until:
        if stop and stop in text:
            text = text[: text.index(stop)]
    return text


def _scorable(task: Any) -> bool:
    """A generation task scored by exact_match with lm-eval's own functions: scoring a target then runs no
    code of the task's (a ``process_results`` or metric hook of its own could execute the answer)."""
    config = task.config
    metrics = getattr(task, "_metric_fn_list", {}) or {}
    return (
        task.OUTPUT_TYPE == "generate_until"
        and config.process_results is None
        and "exact_match" in metrics
        and all(getattr(fn, "__module__", "").startswith(_SAFE_METRICS) for fn in metrics.values())
    )


def _misread_shaped(
    subject: Any, task: Any, docs: list[Any], steps: list[Any], fallbacks: set[Any], delimiter: str, until: list[str]
) -> tuple[Any, answer_shapes.Misread] | None:
    """A filter with a regex, tried on each document's target written as a model writes it (after the reasoning
    a chain-of-thought prompt asks for, as the prompt offers it, with a full stop): the shape it misreads in
    most documents, and the first such document's id (``answer_shapes``)."""
    regexes = [step.regex_pattern for step in steps if isinstance(getattr(step, "regex_pattern", None), str)]
    if not regexes:
        return None  # a filter that reads no regex reads the answer whole: the target's own round trip says it
    probed = docs[:PROBE_DOCS]
    rows = [(i, _golds(task, doc)) for i, (_, doc) in enumerate(probed)]
    prefix, suffix = subject.fixed_text
    shape_plan = answer_shapes.plan(
        subject.prompt_texts, prefix + suffix, [g for _, gs in rows for g in gs], regexes[0]
    )

    def score(position: int, text: str, golds: Any) -> tuple[object, bool]:
        doc = probed[position][1]
        resps: Any = [[_written(text.lstrip(), delimiter, until)]]
        for step in steps:
            resps = step.apply(resps, [doc])
        first = list(resps)[0]  # a filter may hand back an iterator
        value = first[0] if isinstance(first, list) else first
        right = bool(task.process_results(doc, [value]).get("exact_match", 1))
        return (None if value in fallbacks else value), right

    misread = answer_shapes.first_misread(shape_plan, rows, score)
    return (probed[misread.position][0], misread) if misread is not None else None


def filter_cuts_reference(subject: Any) -> Iterator[Hit]:
    """A document's own target, written as the model's answer, scores exact_match 0 through one of the task's
    filters (its regex reads '2' out of '2,125', or the answer's last number out of a worked solution that the
    metric compares whole): every such document is scored 0 whatever the model says."""
    task = getattr(subject.handler, "task", None)
    docs = getattr(subject.handler, "docs", None)
    if task is None or not isinstance(docs, list) or not _scorable(task):
        return
    until = (task.config.generation_kwargs or {}).get("until") or []
    until = [until] if isinstance(until, str) else [u for u in until if isinstance(u, str)]
    delimiter = task.config.target_delimiter or ""
    try:
        for ensemble in getattr(task, "_filters", []):
            steps = [make() for make in ensemble.filters]
            fallbacks = {getattr(step, "fallback", None) for step in steps} - {None}
            cut: list[tuple[Any, str, Any]] = []
            read = 0
            for doc_id, doc in docs[:PROBE_DOCS]:
                golds = _golds(task, doc)
                if not golds:
                    continue
                resps: Any = [[_written(gold, delimiter, until)] for gold in golds]
                for step in steps:
                    resps = step.apply(resps, [doc] * len(golds))
                values = [r for r in resps if r not in fallbacks]
                if not values:
                    continue  # the filter finds nothing in the target: an answer is written in another form
                read += 1
                scores = [task.process_results(doc, [value]).get("exact_match", 1) for value in values]
                if not any(score for score in scores):
                    cut.append((doc_id, golds[0], values[0]))
            if cut:
                doc_id, gold, value = cut[0]
                spaced = isinstance(value, str) and value != value.strip() and value.strip() == gold.strip()
                how = (
                    "the answer keeps the space the model writes after the prompt, and exact_match compares it; "
                    "add lm-eval's remove_whitespace filter before take_first"
                    if spaced
                    else "the regex should capture the whole answer, or the target (or the metric's "
                    "regexes_to_ignore) give the part it captures"
                )
                yield _at_task(
                    subject,
                    f"filter '{ensemble.name}' reads {value!r:.40} out of document {doc_id}'s own target {gold!r:.60}, "
                    f"written as the model's answer, and exact_match scores it 0 ({len(cut)} of the {read} documents "
                    f"whose targets the filter reads): an answer written as the target is scored wrong; {how}",
                    f"filter_list[{ensemble.name}]",
                    str(doc_id),
                )
                continue
            # a filter that reads no target as it stands wants a form the targets lack (a phrase in another
            # language, as MGSM's): its shapes are the prompt's to say, and none is guessed
            shaped = _misread_shaped(subject, task, docs, steps, fallbacks, delimiter, until) if read else None
            if shaped is not None:
                doc_id, misread = shaped
                yield _at_task(
                    subject,
                    f"filter '{ensemble.name}' misreads answers shaped as a model writes them: "
                    f"{answer_shapes.describe(misread)} (exact_match, document {doc_id}): a right answer is scored "
                    f"wrong; {misread.hint}",
                    f"filter_list[{ensemble.name}]",
                    str(doc_id),
                )
    except Exception:  # noqa: BLE001 - a filter or target lm-eval cannot apply here is reported when the task runs
        return


PROBE_POOL = 400  # a pool lm-eval draws from at random is read whole up to this many documents


def example_answers(handler: Any) -> Any:
    """The answers (``doc_to_target``) of the examples lm-eval shows: the first ``num_fewshot`` documents of the
    pool under the ``first_n`` sampler, else every document it draws from (a pool of one answer teaches it however
    drawn); a ``ShownAnswers`` for ``fewshot.constant-label``, or None."""
    from proctor.audit.shown_answers import ShownAnswers

    task = getattr(handler, "task", None)
    config = getattr(task, "config", None)
    shots = getattr(config, "num_fewshot", None) or 0
    if task is None or shots < 2:
        return None
    settings = getattr(config, "fewshot_config", None) or {}  # a mapping, or lm-eval's FewshotConfig
    sampler = settings.get("sampler") if isinstance(settings, dict) else getattr(settings, "sampler", None)
    split = getattr(config, "fewshot_split", None)
    try:
        docs = task.fewshot_docs()
        if docs is None:
            return None
        first = sampler == "first_n"
        if not first and len(docs) > PROBE_POOL:
            return None
        answers: list[object] = []
        for i in range(min(shots, len(docs)) if first else len(docs)):
            answers.append(task.doc_to_target(docs[i]))
            if answers[-1] != answers[0]:
                return None  # two answers: nothing to say (most pools, within the first documents)
    except Exception:  # noqa: BLE001 - a pool lm-eval cannot list or answer is reported when it runs
        return None
    pool = f"fewshot_split '{split}'" if split else "the split lm-eval draws examples from"
    source = f"the first {len(answers)} documents of {pool}, sampler first_n" if first else f"every document of {pool}"
    return ShownAnswers(tuple(answers), source, "fewshot_split" if split else "num_fewshot", shots)
