"""``proctor run``: evaluate a model on tasks and write a run folder."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import List, Optional, cast

import typer

from proctor.cli.app import app
from proctor.cli.console import quiet_libraries
from proctor.cli.display import console, print_results, print_skipped, print_warnings
from proctor.cli.options import (
    DEVICES,
    MODEL,
    OVERRIDES,
    RUN_FOLDER,
    TASKS,
    WORKERS,
    ChatTemplate,
    DType,
    McFormat,
    batch_size_from,
    check_model_arg_flags,
    check_worker_flags,
    choices,
    device_option,
    dialect_options,
    limit_option,
    load_plugins,
    model_args_from,
    reducer_option,
    resources_from,
    uses_server_options,
    variables_from,
    with_dialect_options,
)
from proctor.cli.progress import progress_display
from proctor.core.dialect import OptionContext
from proctor.core.registry import backend_of

DATA_PATH_HELP = (
    "GLM-130B tasks: the data root their 'path' is relative to (GLM's DATA_PATH); default: the YAML's folder."
)
PLUGIN_HELP = (
    "A Python file that registers metrics (register_metric) or defines register(registry): a model backend, "
    "exporter or dialect, as an installed plug-in (docs/extending.md; repeatable)."
)


@app.command()
@with_dialect_options("run")
def run(
    paths: List[Path] = typer.Argument(
        ..., metavar="PATHS", help="Task files or folders (searched recursively), or Python use case files (.py)."
    ),
    # -- which tasks, which rows
    tasks: Optional[List[str]] = typer.Option(
        None,
        "--tasks",
        "-t",
        metavar="GLOB",
        help="Only tasks whose name matches this glob (repeatable).",
        rich_help_panel=TASKS,
    ),
    limit: Optional[str] = typer.Option(
        None,
        "--limit",
        "-n",
        metavar="N",
        callback=limit_option,
        help="At most N samples per task, or a fraction (0 < N < 1) of each task's rows.",
        rich_help_panel=TASKS,
    ),
    limit_per_part: Optional[str] = typer.Option(
        None,
        "--limit-per-part",
        metavar="N",
        callback=limit_option,
        help="At most N samples (or a fraction) of each part of a task's breakdown (e.g. each MMLU subject), as "
        "lm-eval limits each subtask; a task without one: of the task.",
        rich_help_panel=TASKS,
    ),
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        metavar="DIR",
        help="Local data root: sets ${PROCTOR_DATA} in task files.",
        rich_help_panel=TASKS,
    ),
    var: Optional[List[str]] = typer.Option(
        None, "--var", metavar="KEY=VALUE", help="Fills ${KEY} in task files (repeatable).", rich_help_panel=TASKS
    ),
    data_path: Optional[Path] = typer.Option(
        None, "--data-path", metavar="DIR", help=DATA_PATH_HELP, rich_help_panel=TASKS
    ),
    plugin: Optional[List[Path]] = typer.Option(
        None, "--plugin", metavar="FILE", help=PLUGIN_HELP, rich_help_panel=TASKS
    ),
    trust_task_code: bool = typer.Option(
        False,
        "--trust-task-code",
        help="Run Python code that task files name (native task_class, GLM module:, SEA-HELM dataloaders, metrics, "
        "judges, lm-eval !function hooks beside your files, use case config metrics); see docs/trust.md.",
        rich_help_panel=TASKS,
    ),
    # -- the model
    model: str = typer.Option(
        "smollm2",
        "--model",
        "-m",
        metavar="MODEL",
        help="smollm2 (embedded default), a local HF folder, hf:HUB_ID, vllm:FOLDER|HUB_ID (vllm "
        "extra, a GPU), openai:NAME with --base-url, or steer:FILE.py:NAME (a steering "
        "pipeline; its base: --model-arg base=...).",
        rich_help_panel=MODEL,
    ),
    dtype: DType = typer.Option(
        DType.float32, "--dtype", metavar="DTYPE", help=f"Weights' precision: {choices(DType)}.", rich_help_panel=MODEL
    ),
    device: str = typer.Option(
        "cpu",
        "--device",
        metavar="DEVICE",
        callback=device_option,
        help=f"Where the model runs: {DEVICES}.",
        rich_help_panel=MODEL,
    ),
    batch_size: str = typer.Option(
        "8", "--batch-size", "-b", metavar="[N|auto]", help="Sequences per forward pass.", rich_help_panel=MODEL
    ),
    max_length: Optional[int] = typer.Option(
        None,
        "--max-length",
        min=1,
        metavar="N",
        help="Context length limit (default: the model's).",
        rich_help_panel=MODEL,
    ),
    chat_template: ChatTemplate = typer.Option(
        ChatTemplate.auto,
        "--chat-template",
        help="auto: as each task says; on: all tasks; off: none.",
        rich_help_panel=MODEL,
    ),
    model_arg: Optional[List[str]] = typer.Option(
        None,
        "--model-arg",
        metavar="KEY=VALUE",
        help="A backend option (repeatable), e.g. concurrency=16, endpoint=chat, price_prompt=0.15.",
        rich_help_panel=MODEL,
    ),
    base_url: Optional[str] = typer.Option(
        None,
        "--base-url",
        metavar="URL",
        help="openai: the server's API root, e.g. http://127.0.0.1:8000/v1.",
        rich_help_panel=MODEL,
    ),
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY",
        "--api-key-env",
        metavar="NAME",
        help="openai: the variable holding the API key (never written anywhere).",
        rich_help_panel=MODEL,
    ),
    mc_format: McFormat = typer.Option(
        McFormat.auto,
        "--mc-format",
        metavar="FORMAT",
        help="Multiple choice: auto (generate if the model cannot score log-likelihoods), "
        "loglikelihood, or generate (lettered options).",
        rich_help_panel=MODEL,
    ),
    mc_shuffle: Optional[int] = typer.Option(
        None,
        "--mc-shuffle",
        metavar="SEED",
        help="With the generate format: shuffle the lettered options, seeded per sample.",
        rich_help_panel=MODEL,
    ),
    # -- run-time overrides of every task
    num_fewshot: Optional[int] = typer.Option(
        None,
        "--num-fewshot",
        metavar="N",
        help="Few-shot examples per prompt (each task's fewshot.count).",
        rich_help_panel=OVERRIDES,
    ),
    gen_kwargs: Optional[str] = typer.Option(
        None,
        "--gen-kwargs",
        metavar="KEY=VALUE,...",
        help="Generation settings (lm-eval names too: max_gen_toks, until, do_sample).",
        rich_help_panel=OVERRIDES,
    ),
    temperature: Optional[float] = typer.Option(
        None,
        "--temperature",
        metavar="T",
        help="Sampling temperature for generate tasks (0: greedy).",
        rich_help_panel=OVERRIDES,
    ),
    top_p: Optional[float] = typer.Option(
        None, "--top-p", metavar="P", help="Nucleus sampling for generate tasks.", rich_help_panel=OVERRIDES
    ),
    max_tokens: Optional[int] = typer.Option(
        None, "--max-tokens", metavar="N", help="New tokens per generation.", rich_help_panel=OVERRIDES
    ),
    seed: Optional[int] = typer.Option(
        None,
        "--seed",
        metavar="S",
        help="Sampling seed; each sample and epoch draws from its own stream.",
        rich_help_panel=OVERRIDES,
    ),
    epochs: int = typer.Option(
        1,
        "--epochs",
        min=1,
        metavar="N",
        help="Generate tasks: run every sample N times (per-epoch scores, pass@k).",
        rich_help_panel=OVERRIDES,
    ),
    epoch_reducer: str = typer.Option(
        "mean",
        "--epoch-reducer",
        metavar="[mean|pass@K]",
        callback=reducer_option,
        help="A sample's score across epochs.",
        rich_help_panel=OVERRIDES,
    ),
    system_prompt: Optional[str] = typer.Option(
        None,
        "--system-prompt",
        metavar="TEXT",
        help="For every task (chat: a system turn; plain text: the prompt's start).",
        rich_help_panel=OVERRIDES,
    ),
    fewshot_as_multiturn: bool = typer.Option(
        False,
        "--fewshot-as-multiturn",
        help="Chat: few-shot examples as user/assistant turns.",
        rich_help_panel=OVERRIDES,
    ),
    fewshot_in_one_turn: bool = typer.Option(
        False, "--fewshot-in-one-turn", help="Chat: all few-shot examples in the user turn.", rich_help_panel=OVERRIDES
    ),
    no_log_samples: bool = typer.Option(
        False, "--no-log-samples", help="Write no samples.jsonl (nor samples.parquet).", rich_help_panel=OVERRIDES
    ),
    # -- the run folder
    output: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        metavar="DIR",
        help="Run folder (default: a new folder under runs/).",
        rich_help_panel=RUN_FOLDER,
    ),
    update: bool = typer.Option(
        False,
        "--update",
        help="Continue in an --output folder whose tasks, model or options changed, recomputing only changed requests.",
        rich_help_panel=RUN_FOLDER,
    ),
    restart: bool = typer.Option(
        False, "--restart", help="Discard what the --output folder holds and start over.", rich_help_panel=RUN_FOLDER
    ),
    cache: Optional[Path] = typer.Option(
        None,
        "--cache",
        envvar="PROCTOR_CACHE",
        metavar="DIR",
        help="A response cache folder shared across runs (opt-in).",
        rich_help_panel=RUN_FOLDER,
    ),
    chunk_size: Optional[int] = typer.Option(
        None,
        "--chunk-size",
        min=1,
        metavar="N",
        help="Requests per model call, each stored when it finishes (default: the backend's).",
        rich_help_panel=RUN_FOLDER,
    ),
    skip_broken: bool = typer.Option(
        False,
        "--skip-broken",
        help="A folder run in which tasks could not load, prepare or run still exits 0 (they "
        "are listed in the results either way).",
        rich_help_panel=RUN_FOLDER,
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="Print only the results: no progress, no library progress bars, no known deprecation notices.",
        rich_help_panel=RUN_FOLDER,
    ),
    # -- Ray workers
    workers: int = typer.Option(
        1,
        "--workers",
        "-w",
        min=1,
        metavar="N",
        help="Model replicas on Ray (ray extra); the same numbers as 1.",
        rich_help_panel=WORKERS,
    ),
    ray_address: Optional[str] = typer.Option(
        None,
        "--ray-address",
        metavar="HOST:PORT",
        help="Join a running Ray cluster (or 'auto') instead of starting a local one.",
        rich_help_panel=WORKERS,
    ),
    cpus_per_worker: float = typer.Option(
        1.0,
        "--cpus-per-worker",
        min=0.0,
        metavar="N",
        help="CPUs (and torch threads) per replica.",
        rich_help_panel=WORKERS,
    ),
    gpus_per_worker: float = typer.Option(
        0.0,
        "--gpus-per-worker",
        min=0.0,
        metavar="N",
        help="GPUs per replica; for vllm: its tensor-parallel size.",
        rich_help_panel=WORKERS,
    ),
    worker_resources: Optional[List[str]] = typer.Option(
        None,
        "--worker-resources",
        metavar="KEY=AMOUNT",
        help="A custom Ray resource each replica needs (repeatable).",
        rich_help_panel=WORKERS,
    ),
    worker_nodes: Optional[List[str]] = typer.Option(
        None,
        "--worker-node",
        metavar="IP",
        help="Node to place replicas on, round robin (repeatable).",
        rich_help_panel=WORKERS,
    ),
    dialect_values: Optional[dict] = None,
) -> None:
    """Evaluate a model on tasks and write a run folder. Re-run with the same --output to resume."""
    from proctor.api import run_evaluation
    from proctor.core.run_overrides import RunOverrides
    from proctor.engine.run_config import ModelConfig, OutputOptions, PrepareOptions, RowLimit, RunConfig

    if quiet:
        quiet_libraries()
    load_plugins(plugin)
    if limit is not None and limit_per_part is not None:
        raise typer.BadParameter(
            "cannot be given with --limit (--limit cuts each task, --limit-per-part each part of a task)",
            param_hint="--limit-per-part",
        )
    if fewshot_as_multiturn and fewshot_in_one_turn:
        raise typer.BadParameter("cannot be given with --fewshot-in-one-turn", param_hint="--fewshot-as-multiturn")
    overrides = RunOverrides.from_flags(
        num_fewshot=num_fewshot,
        gen_kwargs=gen_kwargs,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        epochs=epochs,
        epoch_reducer=epoch_reducer,
        system_prompt=system_prompt,
        fewshot_as_multiturn=True if fewshot_as_multiturn else (False if fewshot_in_one_turn else None),
        log_samples=not no_log_samples,
    )
    values = dialect_values or {}
    context = OptionContext(model=model, base_url=base_url, api_key_env=api_key_env, command="run")
    dialect_opts = dialect_options(values, context, trust_task_code)
    backend = backend_of(model)  # None: an unknown prefix, refused with the list of backends before anything loads
    served = backend is not None and backend.server
    if base_url and not served and not uses_server_options(values):
        raise typer.BadParameter(
            "applies to openai: models (and an openai: judge) only; it would be ignored", param_hint="--base-url"
        )
    chat = {"auto": None, "on": True, "off": False}[chat_template.value]
    options: dict[str, object] = {"dtype": dtype.value, "device": device, "batch_size": batch_size_from(batch_size)}
    if max_length is not None:
        options["max_length"] = max_length
    if served:
        options = {"base_url": base_url, "api_key_env": api_key_env, **model_args_from(model_arg)}
    elif model_arg:
        given = model_args_from(model_arg)
        check_model_arg_flags(
            given, run, {"dtype": dtype, "device": device, "batch_size": batch_size, "max_length": max_length}
        )
        options.update(given)
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
        select=None if tasks is None else tuple(tasks),
        dialect_options=dialect_opts,
        # typer hands over what the callback limit_option returned: a count or a fraction (the annotation is
        # the flag's text)
        limit=RowLimit(cast("int | float | None", limit), per_part=False)
        if limit_per_part is None
        else RowLimit(cast("int | float", limit_per_part), per_part=True),
        prepare=PrepareOptions(variables_from(data_dir, var), data_path, chat, mc_format.value, mc_shuffle, overrides),
        output=OutputOptions(
            output, cache=cache, chunk_size=chunk_size, update=update, restart=restart, command=tuple(sys.argv)
        ),
    )
    with progress_display(quiet) as hook:
        result = run_evaluation(config, hook)
    if quiet:
        logging.getLogger("proctor").info("run folder: %s", result.run_dir)
    print_results(result.results)
    print_warnings(result.results)
    console.print(f"run folder: {result.run_dir}")
    skipped = result.results.get("skipped") or []
    if skipped and not skip_broken:
        print_skipped(skipped)
        raise typer.Exit(1)
