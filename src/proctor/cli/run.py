"""``proctor run``: evaluate a model on tasks and write a run folder."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer

from proctor.cli.app import app
from proctor.cli.display import console, print_results, print_warnings
from proctor.cli.console import quiet_libraries
from proctor.cli.progress import progress_display
from proctor.cli.options import (
    batch_size_from,
    dialect_options,
    load_plugins,
    model_args_from,
    resources_from,
    uses_server_options,
    variables_from,
    with_dialect_options,
)
from proctor.core.dialect import OptionContext

DATA_PATH_HELP = "GLM-130B tasks: the data root their 'path' is relative to (GLM's DATA_PATH); default: the YAML's folder."
PLUGIN_HELP = "A Python file that registers metrics with proctor.scoring.metrics.register_metric (repeatable)."


@app.command()
@with_dialect_options("run")
def run(
    paths: List[Path] = typer.Argument(..., help="Task files or folders (searched recursively), or Python use case files (.py)."),
    model: str = typer.Option("smollm2", "--model", "-m", help="'smollm2' (embedded default), a local HF folder, hf:<hub id>, or vllm:<folder or hub id> (needs the vllm extra and a GPU), or openai:<name> with --base-url, or steer:<file.py>:<NAME> (a steering pipeline; base model: --model-arg base=...)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Run folder (default: a new folder under runs/)."),
    tasks: Optional[List[str]] = typer.Option(None, "--tasks", "-t", help="Only tasks whose name matches this glob (repeatable)."),
    limit: Optional[str] = typer.Option(None, "--limit", "-n", help="At most this many samples per task, or a fraction (0 < x < 1) of each task's rows."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local data root: sets ${PROCTOR_DATA} in task files."),
    var: Optional[List[str]] = typer.Option(None, "--var", help="KEY=VALUE for ${KEY} in task files (repeatable)."),
    num_fewshot: Optional[int] = typer.Option(None, "--num-fewshot", help="Few-shot examples per prompt (overrides each task's fewshot.count)."),
    gen_kwargs: Optional[str] = typer.Option(None, "--gen-kwargs", help="Generation settings KEY=VALUE,... (lm-eval names too: max_gen_toks, until, do_sample)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", help="Sampling temperature for generate tasks (0: greedy)."),
    top_p: Optional[float] = typer.Option(None, "--top-p", help="Nucleus sampling for generate tasks."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="New tokens per generation."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Sampling seed; each sample and epoch draws from its own stream."),
    epochs: int = typer.Option(1, "--epochs", help="Generate tasks: run every sample N times (per-epoch scores, pass@k)."),
    epoch_reducer: str = typer.Option("mean", "--epoch-reducer", help="Per-sample score across epochs: mean or pass@K."),
    system_prompt: Optional[str] = typer.Option(None, "--system-prompt", help="System prompt for every task (chat: a system turn; plain text: the prompt's start)."),
    fewshot_as_multiturn: Optional[bool] = typer.Option(None, "--fewshot-as-multiturn/--fewshot-in-one-turn", help="Chat: few-shot examples as user/assistant turns, or all in the user turn."),
    log_samples: bool = typer.Option(True, "--log-samples/--no-log-samples", help="Write samples.jsonl (and samples.parquet)."),
    dtype: str = typer.Option("float32", help="float32, bfloat16, float16 or auto."),
    device: str = typer.Option("cpu", help="cpu, cuda, cuda:N or auto."),
    batch_size: str = typer.Option("8", "--batch-size", "-b", help="Sequences per forward pass, or 'auto'."),
    max_length: Optional[int] = typer.Option(None, min=1, help="Context length limit (default: the model's)."),
    chat_template: str = typer.Option("auto", help="auto (as each task says), on (all tasks), off (none)."),
    data_path: Optional[Path] = typer.Option(None, "--data-path", help=DATA_PATH_HELP),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help=PLUGIN_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display (for logs)."),
    cache: Optional[Path] = typer.Option(None, "--cache", envvar="PROCTOR_CACHE", help="Response cache folder shared across runs (opt-in; env PROCTOR_CACHE)."),
    chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="Requests per model call, each stored when it finishes (default: the backend's)."),
    update: bool = typer.Option(False, "--update", help="Continue in an --output folder whose tasks/model/options changed, recomputing only changed requests."),
    restart: bool = typer.Option(False, "--restart", help="Discard what the --output folder holds and start over."),
    workers: int = typer.Option(1, "--workers", "-w", min=1, help="Model replicas on Ray (data parallel; needs the ray extra). Same numbers as 1."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Join a running Ray cluster (host:port or 'auto') instead of starting a local one."),
    cpus_per_worker: float = typer.Option(1.0, "--cpus-per-worker", min=0.0, help="CPUs (and torch threads) per replica."),
    gpus_per_worker: float = typer.Option(0.0, "--gpus-per-worker", min=0.0, help="GPUs per replica; for vllm: its tensor-parallel size."),
    worker_resources: Optional[List[str]] = typer.Option(None, "--worker-resources", help="KEY=AMOUNT: a custom Ray resource each replica needs (repeatable)."),
    worker_nodes: Optional[List[str]] = typer.Option(None, "--worker-node", help="Node IP to place replicas on, round robin (repeatable)."),
    trust_task_code: bool = typer.Option(False, "--trust-task-code", help="Run Python code that ships with task files (SEA-HELM dataloaders/metrics/judges, lm-eval !function hooks beside your files)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai: the server's API root, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="openai: environment variable holding the API key (never written anywhere)."),
    model_arg: Optional[List[str]] = typer.Option(None, "--model-arg", help="KEY=VALUE backend option (repeatable), e.g. concurrency=16, endpoint=chat, loglikelihood=top_logprobs, price_prompt=0.15."),
    mc_format: str = typer.Option("auto", "--mc-format", help="Multiple choice: auto (generate if the model cannot score log-likelihoods), loglikelihood, or generate (lettered options)."),
    mc_shuffle: Optional[int] = typer.Option(None, "--mc-shuffle", help="With the generate format: shuffle the lettered options, seeded per sample by this seed."),
    dialect_values: Optional[dict] = None,
) -> None:
    """Evaluate a model on tasks and write a run folder. Re-run with the same --output to resume."""
    from proctor.api import evaluate
    from proctor.engine.overrides import RunOverrides, parse_limit

    if quiet:
        quiet_libraries()
    load_plugins(plugin)
    limit = parse_limit(limit)
    overrides = RunOverrides.from_flags(
        num_fewshot=num_fewshot, gen_kwargs=gen_kwargs, temperature=temperature, top_p=top_p, max_tokens=max_tokens,
        seed=seed, epochs=epochs, epoch_reducer=epoch_reducer, system_prompt=system_prompt,
        fewshot_as_multiturn=fewshot_as_multiturn, log_samples=log_samples,
    )

    if chat_template not in ("auto", "on", "off"):
        raise typer.BadParameter(f"takes auto, on or off, got '{chat_template}'", param_hint="--chat-template")
    values = dialect_values or {}
    context = OptionContext(model=model, base_url=base_url, api_key_env=api_key_env, command="run")
    dialect_opts = dialect_options(values, context, trust_task_code)
    if base_url and not model.startswith("openai:") and not uses_server_options(values):
        raise typer.BadParameter("applies to openai: models (and an openai: judge) only; it would be ignored", param_hint="--base-url")
    chat = {"auto": None, "on": True, "off": False}[chat_template]
    options = {"dtype": dtype, "device": device, "batch_size": batch_size_from(batch_size)}
    if max_length is not None:
        options["max_length"] = max_length
    if model.startswith("openai:"):
        options = {"base_url": base_url, "api_key_env": api_key_env, **model_args_from(model_arg)}
    elif model_arg:
        options.update(model_args_from(model_arg))
    if model.startswith("vllm:") and gpus_per_worker >= 1:
        options["tensor_parallel_size"] = int(gpus_per_worker)
    cluster = None
    if workers > 1 or ray_address:
        cluster = dict(
            workers=workers, address=ray_address, cpus_per_worker=cpus_per_worker, gpus_per_worker=gpus_per_worker,
            resources=resources_from(worker_resources), nodes=tuple(worker_nodes or ()),
        )
    with progress_display(quiet) as hook:
        result = evaluate(
            paths,
            model,
            output_dir=output,
            select=tasks,
            limit=limit,
            variables=variables_from(data_dir, var),
            data_path=data_path,
            dialect_options=dialect_opts,
            chat=chat,
            model_options=options,
            progress=hook,
            command=sys.argv,
            cache=cache,
            chunk_size=chunk_size,
            update=update,
            restart=restart,
            cluster=cluster,
            mc_format=mc_format,
            mc_shuffle_seed=mc_shuffle,
            overrides=overrides,
        )
    if quiet:
        logging.getLogger("proctor").info("run folder: %s", result.run_dir)
    print_results(result.results)
    print_warnings(result.results)
    console.print(f"run folder: {result.run_dir}")
