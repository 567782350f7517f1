"""Flags of lm-evaluation-harness and Inspect that users type out of habit, on ``proctor run``.

Each is declared (hidden from ``--help``) so that it is either taken in proctor's meaning or refused with the
proctor equivalent named: click's own "no such option" would suggest the nearest spelling, which misleads
(``--log-dir`` -> ``--data-dir``, ``--max-connections`` -> ``--max-tokens``). The README's lm-eval and Inspect
tables list each one.
"""

from __future__ import annotations

from typing import Mapping, Optional

import typer

# flag -> why proctor refuses it and what to type instead
REFUSED = {
    "--log-dir": "is Inspect's; proctor writes each run to a folder of its own: -o/--output DIR "
    "(default: a new folder under runs/)",
    "--write-out": "is lm-eval's; see the rendered prompts without a model with "
    "'proctor validate PATHS --show N' (after a run every prompt is in samples.jsonl)",
    "--log-samples": "is lm-eval's; proctor always logs the samples (the run folder's samples.jsonl; "
    "--no-log-samples turns that off)",
    "--system-instruction": "is lm-eval's; proctor's is --system-prompt TEXT (a system turn with the chat "
    "template, the prompt's start without it)",
    "--apply-chat-template": "is lm-eval's; proctor's is --chat-template on (auto: as each task says)",
    "--max-samples": "is Inspect's; proctor bounds the requests in flight with --max-connections N (openai: "
    "models) or --batch-size N (local models)",
    "--wandb-args": "is lm-eval's; proctor logs a run to Weights & Biases (offline) with --log-to "
    "wandb:project=NAME,name=RUN (or 'proctor log RUN_DIR --to wandb:...' after it finished; docs/trackers.md)",
    "--show-config": "is lm-eval's; each task's resolved config is saved in the run folder as tasks/NAME.yaml, "
    "and 'proctor validate PATHS --show N' prints prompts without a model",
}

HIDDEN = dict(hidden=True, rich_help_panel="Habits")
LOG_DIR = typer.Option(None, "--log-dir", "--log_dir", metavar="DIR", **HIDDEN)  # type: ignore[arg-type]
LOG_SAMPLES = typer.Option(False, "--log-samples", "--log_samples", **HIDDEN)  # type: ignore[arg-type]
SYSTEM_INSTRUCTION = typer.Option(
    None,
    "--system-instruction",
    "--system_instruction",
    metavar="TEXT",
    **HIDDEN,  # type: ignore[arg-type]
)
APPLY_CHAT_TEMPLATE = typer.Option(
    False,
    "--apply-chat-template",
    "--apply_chat_template",
    **HIDDEN,  # type: ignore[arg-type]
)
MAX_SAMPLES = typer.Option(None, "--max-samples", metavar="N", **HIDDEN)  # type: ignore[arg-type]
WRITE_OUT = typer.Option(False, "--write-out", "--write_out", **HIDDEN)  # type: ignore[arg-type]
# lm-eval's spelling of --predict-only, taken in its meaning (hidden: two names would not fit --help's column)
PREDICT_ONLY = typer.Option(False, "--predict_only", **HIDDEN)  # type: ignore[arg-type]
# Inspect's spelling of --max-thinking-tokens, taken in its meaning (hidden, as --predict_only)
REASONING_TOKENS = typer.Option(None, "--reasoning-tokens", min=1, metavar="N", **HIDDEN)  # type: ignore[arg-type]
SHOW_CONFIG = typer.Option(False, "--show-config", "--show_config", **HIDDEN)  # type: ignore[arg-type]
WANDB_ARGS = typer.Option(None, "--wandb-args", "--wandb_args", metavar="ARGS", **HIDDEN)  # type: ignore[arg-type]
MAX_CONNECTIONS = typer.Option(
    None,
    "--max-connections",
    min=1,
    metavar="N",
    help="openai: models: at most N requests at once (Inspect's flag; --model-arg concurrency=N).",
    rich_help_panel="Model",
)


def seed_option(value: Optional[str]) -> Optional[int]:
    """--seed S: one integer; lm-eval's four-seed list ("0,1234,1234,1234") is refused saying what S does here."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        pass
    if "," in value:
        raise typer.BadParameter(
            f"takes one integer S, got '{value}': lm-eval's list of four seeds (python, numpy, torch, few-shot) has "
            "no proctor spelling, as proctor seeds each request; --seed S is lm-eval's --seed S (all four S)"
        )
    raise typer.BadParameter(f"takes an integer, got '{value}'")


def refuse_habits(given: Mapping[str, object]) -> None:
    """A refused habit flag that was given (flag -> its value) ends the command, naming proctor's equivalent."""
    for flag, value in given.items():
        if value not in (None, False, ()):
            raise typer.BadParameter(REFUSED[flag], param_hint=flag)


def split_globs(tasks: Optional[list[str]]) -> Optional[tuple[str, ...]]:
    """``--tasks a,b`` (lm-eval's list) as ``--tasks a --tasks b``; a glob holds no comma."""
    if tasks is None:
        return None
    globs = tuple(part.strip() for item in tasks for part in item.split(",") if part.strip())
    if not globs:
        raise typer.BadParameter("names no task glob", param_hint="--tasks")
    return globs


def max_connections_option(count: Optional[int], served: bool, model_args: Mapping[str, object]) -> dict[str, int]:
    """``--max-connections N``: an openai: model's ``concurrency``; refused where it would be ignored."""
    if count is None:
        return {}
    if not served:
        raise typer.BadParameter(
            "limits requests to an openai: model's server, and this model runs here (its batch: --batch-size N)",
            param_hint="--max-connections",
        )
    if "concurrency" in model_args:
        raise typer.BadParameter(
            "is also given as --model-arg concurrency: give it once", param_hint="--max-connections"
        )
    return {"concurrency": count}
