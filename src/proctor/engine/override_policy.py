"""Run-time overrides (``proctor run --num-fewshot/--gen-kwargs/--seed/--epochs/...``).

An override rewrites a task's spec before it is prepared, so it enters the task's content hash
(and with it the resume check) and the task's saved config. Each dialect takes the overrides that
mean something for it; one that means nothing for any selected task is an error naming the task.
"""

from __future__ import annotations

from typing import Any, Sequence

from proctor.core.data_spec import FewShotSpec
from proctor.core.errors import ProctorError
from proctor.core.registry import registry
from proctor.core.run_overrides import RunOverrides, sampling_at_own_temperature, with_spec_changes
from proctor.core.task import Task
from proctor.core.task_spec import ChatSpec, GenerationSpec


def _uses_chat(task: Task, chat: bool | None) -> bool:
    return chat if chat is not None else bool(task.spec.chat and task.spec.chat.enabled)


def _generation(task: Task, o: RunOverrides) -> GenerationSpec | None:
    changes = dict(o.gen_kwargs)
    if o.seed is not None:
        changes["seed"] = o.seed
    if not changes:
        return None
    if task.spec.kind == "generate":  # do_sample=true alone: this task's own temperature must sample
        sampling_at_own_temperature(changes, task.spec.generation.temperature, f"task '{task.name}' ({task.dialect})")
    changes.pop("do_sample", None)  # a task that generates nothing skips --gen-kwargs (apply_one says so)
    return GenerationSpec(**{**task.spec.generation.model_dump(), **changes})


GENERATION = "--gen-kwargs/--seed"  # the generation settings, whichever flags gave them
LETTERED = frozenset({"max_tokens"})  # what a lettered reply (--mc-format generate) takes: it is read greedily


def _lettered(task: Task, mc_format: str) -> bool:
    """A multiple-choice task that answers by lettered generation (kinds/mc_generate.py): it generates, with
    the budget --max-tokens gives it (engine/prepare.PreparedTask.lettered_max_tokens), and nothing else."""
    return mc_format == "generate" and task.spec.kind == "multiple_choice"


def apply_one(task: Task, o: RunOverrides, chat: bool | None = None) -> tuple[Task, set[str]]:
    """The task with the overrides that apply to it, and the names of those that did not."""
    skipped: set[str] = set()
    dialect = registry().dialect(task.dialect)
    if dialect is not None:  # a dialect with its own rules (SEA-HELM's config knobs, lm-eval's task objects)
        own = dialect.apply_overrides(task, o, chat)
        if own is not None:
            return own
    fixed = dialect is not None and dialect.fixed_prompts  # prompt files scored as written (probsem)
    spec = task.spec
    where = f"task '{task.name}' ({task.dialect})"
    changes: dict[str, Any] = {}
    if o.num_fewshot is not None:
        if fixed or spec.kind == "perplexity" or spec.handled_by:
            raise ProctorError(
                f"--num-fewshot has no meaning for {where}: its prompts carry no few-shot examples to draw"
            )
        base = spec.fewshot.model_dump() if spec.fewshot else {}
        changes["fewshot"] = FewShotSpec(**{**base, "count": o.num_fewshot})
    generation = _generation(task, o)
    if generation is not None or o.epochs != 1:
        if fixed or spec.kind != "generate":
            skipped.update(k for k, on in ((GENERATION, generation is not None), ("--epochs", o.epochs != 1)) if on)
        elif spec.handled_by and o.epochs != 1:
            raise ProctorError(
                f"--epochs has no meaning for {where}: its task class ({spec.handled_by}) makes its own requests"
            )
        if generation is not None and spec.kind == "generate":
            changes["generation"] = generation
    if spec.kind == "perplexity":  # its texts are scored as written: no chat turn, no system prompt reaches them
        given = (("--system-prompt", o.system_prompt), ("--fewshot-as-multiturn", o.fewshot_as_multiturn))
        skipped.update(flag for flag, value in given if value is not None)
    elif o.system_prompt is not None or o.fewshot_as_multiturn is not None:
        if fixed:
            raise ProctorError(
                f"--system-prompt / --fewshot-as-multiturn have no meaning for {where}: "
                "its prompt files are scored as written"
            )
        chat_on = _uses_chat(task, chat)
        base = spec.chat.model_dump() if spec.chat else {"enabled": False}
        if o.fewshot_as_multiturn is not None:
            if not chat_on:
                raise ProctorError(
                    f"--fewshot-as-multiturn needs the chat template ({where} runs without it; add --chat-template on)"
                )
            base["fewshot_as_turns"] = o.fewshot_as_multiturn
        if o.system_prompt is not None:
            base["system"] = o.system_prompt
            if not chat_on:  # plain text: the system prompt starts the prompt (prompts/builder)
                base["enabled"] = False
        changes["chat"] = ChatSpec(**base)
    return (with_spec_changes(task, **changes) if changes else task), skipped


def _given(o: RunOverrides) -> list[str]:
    return sorted(o.gen_kwargs) + (["seed"] if o.seed is not None else [])


def apply_overrides(
    tasks: Sequence[Task], o: RunOverrides, chat: bool | None = None, mc_format: str = "auto"
) -> list[Task]:
    """Every task with its overrides; an override that no selected task can take is an error naming the settings
    given (not every flag that could have given them)."""
    out, skipped_by = [], []
    for task in tasks:
        new, skipped = apply_one(task, o, chat)
        # a lettered reply takes max_tokens, whatever the dialect; temperature, a seed or a stop string would
        # change nothing but what is recorded, so those stay skipped (and refused when no task takes them)
        if _lettered(task, mc_format) and set(_given(o)) <= LETTERED:
            skipped.discard(GENERATION)
        out.append(new)
        skipped_by.append(skipped)
    for flag in (GENERATION, "--epochs"):
        if tasks and all(flag in s for s in skipped_by):
            names = ", ".join(t.name for t in tasks[:5])
            what = (
                "--epochs has" if flag == "--epochs" else f"the generation settings given ({', '.join(_given(o))}) have"
            )
            choice = any(t.spec.kind == "multiple_choice" for t in tasks)
            hint = ""
            if choice and flag == GENERATION and mc_format == "generate":
                hint = "; lettered replies (--mc-format generate) are read greedily: they take max_tokens only"
            elif choice and mc_format == "auto":
                hint = "; multiple-choice tasks generate (lettered replies) only under --mc-format generate"
            raise ProctorError(f"{what} no meaning for the selected tasks ({names}): none of them generates text{hint}")
    for flag, why in _NOT_TAKEN.items():
        if tasks and all(flag in s for s in skipped_by):
            names = ", ".join(t.name for t in tasks[:5])
            raise ProctorError(f"{flag} has no meaning for the selected tasks ({names}): {why}")
    return out


# an override a perplexity task skips (apply_one's ``skipped``), and why no task of a run can take it when none does
_NOT_TAKEN = {
    "--system-prompt": "each scores its texts as written (perplexity): no system prompt reaches them",
    "--fewshot-as-multiturn": "each scores its texts as written (perplexity): no chat turns reach them",
}


def epochs_of(task: Task, o: RunOverrides) -> int:
    """Repeats the engine runs for this task (SEA-HELM runs its own seeded runs instead)."""
    dialect = registry().dialect(task.dialect)
    if (
        o.epochs == 1
        or (dialect is not None and not dialect.engine_epochs)
        or task.spec.kind != "generate"
        or task.spec.handled_by
    ):
        return 1
    return o.epochs
