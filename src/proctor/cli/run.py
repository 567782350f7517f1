"""``proctor run``: evaluate a model on tasks and write a run folder.

The flags' declarations are ``cli/run_flags.py`` (the Ray workers' ``cli/worker_flags.py``); this module turns
their values into a ``RunConfig``, runs it and prints the results."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import List, Optional, cast

import typer

from proctor.cli import habits, worker_flags
from proctor.cli import run_flags as flag
from proctor.cli.app import app
from proctor.cli.console import quiet_libraries
from proctor.cli.display import console, print_results, print_skipped, print_warnings
from proctor.cli.options import (
    ChatTemplate,
    DType,
    McFormat,
    batch_size_from,
    check_model_arg_flags,
    check_worker_flags,
    dialect_options,
    load_plugins,
    model_args_from,
    model_roles_from,
    resources_from,
    think_end_token_from,
    thinking_budget,
    uses_server_options,
    variables_from,
    with_dialect_options,
)
from proctor.cli.progress import progress_display
from proctor.cli.trackers import log_finished, tracker_targets
from proctor.core.dialect import OptionContext
from proctor.core.registry import backend_of


@app.command()
@with_dialect_options("run")
def run(
    paths: List[Path] = flag.PATHS,
    # -- which tasks, which rows
    tasks: Optional[List[str]] = flag.TASKS,
    limit: Optional[str] = flag.LIMIT,
    limit_per_part: Optional[str] = flag.LIMIT_PER_PART,
    sample_id: Optional[List[str]] = flag.SAMPLE_ID,
    data_dir: Optional[Path] = flag.DATA_DIR,
    var: Optional[List[str]] = flag.VAR,
    data_path: Optional[Path] = flag.DATA_PATH,
    plugin: Optional[List[Path]] = flag.PLUGIN,
    trust_task_code: bool = flag.TRUST_TASK_CODE,
    # -- the model
    model: str = flag.MODEL,
    dtype: DType = flag.DTYPE,
    device: str = flag.DEVICE,
    batch_size: str = flag.BATCH_SIZE,
    max_length: Optional[int] = flag.MAX_LENGTH,
    chat_template: ChatTemplate = flag.CHAT_TEMPLATE,
    model_arg: Optional[List[str]] = flag.MODEL_ARG,
    model_role: Optional[List[str]] = flag.MODEL_ROLE,
    base_url: Optional[str] = flag.BASE_URL,
    api_key_env: str = flag.API_KEY_ENV,
    mc_format: McFormat = flag.MC_FORMAT,
    mc_shuffle: Optional[int] = flag.MC_SHUFFLE,
    # -- run-time overrides of every task
    num_fewshot: Optional[int] = flag.NUM_FEWSHOT,
    gen_kwargs: Optional[str] = flag.GEN_KWARGS,
    temperature: Optional[float] = flag.TEMPERATURE,
    top_p: Optional[float] = flag.TOP_P,
    max_tokens: Optional[int] = flag.MAX_TOKENS,
    seed: Optional[str] = flag.SEED,  # the callback hands over an int
    epochs: int = flag.EPOCHS,
    epoch_reducer: str = flag.EPOCH_REDUCER,
    system_prompt: Optional[str] = flag.SYSTEM_PROMPT,
    think_end_token: Optional[str] = flag.THINK_END_TOKEN,
    max_thinking_tokens: Optional[int] = flag.MAX_THINKING_TOKENS,
    fewshot_as_multiturn: bool = flag.FEWSHOT_AS_MULTITURN,
    fewshot_in_one_turn: bool = flag.FEWSHOT_IN_ONE_TURN,
    no_log_samples: bool = flag.NO_LOG_SAMPLES,
    # -- the run folder
    predict_only: bool = flag.PREDICT_ONLY,
    output: Optional[Path] = flag.OUTPUT,
    update: bool = flag.UPDATE,
    restart: bool = flag.RESTART,
    cache: Optional[Path] = flag.CACHE,
    chunk_size: Optional[int] = flag.CHUNK_SIZE,
    skip_broken: bool = flag.SKIP_BROKEN,
    strict: bool = flag.STRICT,
    quiet: bool = flag.QUIET,
    log_to: Optional[List[str]] = flag.LOG_TO,
    # -- Ray workers
    workers: int = worker_flags.WORKERS,
    ray_address: Optional[str] = worker_flags.RAY_ADDRESS,
    cpus_per_worker: float = worker_flags.CPUS_PER_WORKER,
    gpus_per_worker: float = worker_flags.GPUS_PER_WORKER,
    worker_resources: Optional[List[str]] = worker_flags.WORKER_RESOURCES,
    worker_nodes: Optional[List[str]] = worker_flags.WORKER_NODES,
    # -- lm-eval's and Inspect's flags: taken in proctor's meaning or refused naming its equivalent (cli/habits.py)
    max_connections: Optional[int] = habits.MAX_CONNECTIONS,
    log_dir: Optional[str] = habits.LOG_DIR,
    write_out: bool = habits.WRITE_OUT,
    predict_only_spelled: bool = habits.PREDICT_ONLY,
    reasoning_tokens: Optional[int] = habits.REASONING_TOKENS,
    show_config: bool = habits.SHOW_CONFIG,
    log_samples: bool = habits.LOG_SAMPLES,
    system_instruction: Optional[str] = habits.SYSTEM_INSTRUCTION,
    apply_chat_template: bool = habits.APPLY_CHAT_TEMPLATE,
    max_samples: Optional[str] = habits.MAX_SAMPLES,
    wandb_args: Optional[str] = habits.WANDB_ARGS,
    dialect_values: Optional[dict[str, object]] = None,
) -> None:
    """Evaluate a model on tasks and write a run folder. Re-run with the same --output to resume."""
    from proctor.api import run_evaluation
    from proctor.core.run_overrides import RunOverrides
    from proctor.engine.run_config import ModelConfig, OutputOptions, PrepareOptions, RolesConfig, RowLimit, RunConfig
    from proctor.engine.sample_selection import parse_sample_ids

    if quiet:
        quiet_libraries()
    habits.refuse_habits(
        {
            "--log-dir": log_dir,
            "--write-out": write_out,
            "--show-config": show_config,
            "--log-samples": log_samples,
            "--system-instruction": system_instruction,
            "--apply-chat-template": apply_chat_template,
            "--max-samples": max_samples,
            "--wandb-args": wandb_args,
        }
    )
    trackers = tracker_targets(log_to)  # a typo or a missing library fails before any task is read
    load_plugins(plugin)
    if limit is not None and limit_per_part is not None:
        raise typer.BadParameter(
            "cannot be given with --limit (--limit cuts each task, --limit-per-part each part of a task)",
            param_hint="--limit-per-part",
        )
    if fewshot_as_multiturn and fewshot_in_one_turn:
        raise typer.BadParameter("cannot be given with --fewshot-in-one-turn", param_hint="--fewshot-as-multiturn")
    think_end_token, model_arg = think_end_token_from(think_end_token, model_arg)
    overrides = RunOverrides.from_flags(
        num_fewshot=num_fewshot,
        gen_kwargs=gen_kwargs,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=cast("int | None", seed),
        epochs=epochs,
        epoch_reducer=epoch_reducer,
        system_prompt=system_prompt,
        fewshot_as_multiturn=True if fewshot_as_multiturn else (False if fewshot_in_one_turn else None),
        log_samples=not no_log_samples,
        think_end_token=think_end_token,
        think_budget=thinking_budget(max_thinking_tokens, reasoning_tokens),
    )
    ids = parse_sample_ids(sample_id or ())  # --sample-id a,b: before anything is read
    values = dialect_values or {}
    roles = model_roles_from(model_role)
    context = OptionContext(model=model, base_url=base_url, api_key_env=api_key_env, command="run", roles=roles)
    dialect_opts = dialect_options(values, context, trust_task_code)
    backend = backend_of(model)  # None: an unknown prefix, refused with the list of backends before anything loads
    served = backend is not None and backend.server
    served_role = any(getattr(backend_of(spec), "server", False) for spec in roles.values())
    if base_url and not served and not served_role and not uses_server_options(values):
        raise typer.BadParameter(
            "applies to openai: models (and an openai: judge) only; it would be ignored", param_hint="--base-url"
        )
    chat = {"auto": None, "on": True, "off": False}[chat_template.value]
    options: dict[str, object] = {"dtype": dtype.value, "device": device, "batch_size": batch_size_from(batch_size)}
    if max_length is not None:
        options["max_length"] = max_length
    if served:
        given_args = model_args_from(model_arg)
        # local-model flags given on a served model change nothing there: passed on, so the run can say so
        # (not --batch-size: lm-eval users pass it out of habit, and a server batches as it likes)
        local = {"dtype": dtype.value != "float32", "device": device != "cpu", "max_length": max_length is not None}
        options = {
            **{k: v for k, v in options.items() if local.get(k)},
            "base_url": base_url,
            "api_key_env": api_key_env,
            **given_args,
        }
        options.update(habits.max_connections_option(max_connections, served, given_args))
    elif model_arg:
        given = model_args_from(model_arg)
        check_model_arg_flags(
            given, run, {"dtype": dtype, "device": device, "batch_size": batch_size, "max_length": max_length}
        )
        options.update(given)
    if not served:
        habits.max_connections_option(max_connections, served, {})  # refused: nothing here to limit
    if backend is not None and backend.tensor_parallel and gpus_per_worker >= 1:
        options["tensor_parallel_size"] = int(gpus_per_worker)
    worker_flags = {"--cpus-per-worker": cpus_per_worker != 1.0, "--gpus-per-worker": gpus_per_worker != 0.0}
    worker_flags.update({"--worker-resources": bool(worker_resources), "--worker-node": bool(worker_nodes)})
    check_worker_flags(workers > 1 or bool(ray_address), backend is not None and backend.tensor_parallel, worker_flags)
    cluster = None
    if workers > 1 or ray_address:
        cluster = dict(
            workers=workers,
            address=ray_address,
            cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker,
            resources=resources_from(worker_resources),
            nodes=tuple(worker_nodes or ()),
        )
    config = RunConfig(
        tasks=tuple(paths),
        model=ModelConfig(model, options, cluster=cluster),
        select=habits.split_globs(tasks),
        dialect_options=dialect_opts,
        # typer hands over what the callback limit_option returned: a count or a fraction (the annotation is
        # the flag's text)
        limit=RowLimit(cast("int | float | None", limit), per_part=False, sample_ids=ids)
        if limit_per_part is None
        else RowLimit(cast("int | float", limit_per_part), per_part=True, sample_ids=ids),
        prepare=PrepareOptions(
            variables_from(data_dir, var), data_path, chat, mc_format.value, mc_shuffle, overrides, strict_audit=strict
        ),
        output=OutputOptions(
            output, cache=cache, chunk_size=chunk_size, update=update, restart=restart, command=tuple(sys.argv)
        ),
        predict_only=predict_only or predict_only_spelled,
        # a role named openai:NAME takes the run's server settings where its dialect gives none
        roles=RolesConfig(roles, {"base_url": base_url, "api_key_env": api_key_env}),
    )
    with progress_display(quiet) as hook:
        result = run_evaluation(config, hook)
    if quiet:
        logging.getLogger("proctor").info("run folder: %s", result.run_dir)
    print_results(result.results)
    print_warnings(result.results)
    console.print(f"run folder: {result.run_dir}")
    logged = log_finished(result.run_dir, trackers)
    skipped = result.results.get("skipped") or []
    if skipped and not skip_broken:
        print_skipped(skipped)
        raise typer.Exit(1)
    if not logged:
        raise typer.Exit(1)
