"""The ``proctor`` command: run, ls, validate, report, compare, export."""

from __future__ import annotations

import json
import logging
import math
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from proctor.cli.display import _fmt, _progress, console, err_console, print_results, print_warnings
from proctor.core.errors import ProctorError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Evaluate language models on tasks you define.")


def _show_version(value: bool) -> None:
    if value:
        from proctor import __version__

        console.print(f"proctor {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True, help="Print proctor's version and exit."),
) -> None:
    """Evaluate language models on tasks you define."""


def _variables(data_dir: Optional[Path], var: Optional[List[str]]) -> dict[str, str]:
    variables: dict[str, str] = {}
    if data_dir is not None:
        if not data_dir.is_dir():
            raise typer.BadParameter(f"no such folder: {data_dir}", param_hint="--data-dir")
        variables["PROCTOR_DATA"] = str(data_dir.resolve())
    for item in var or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"takes KEY=VALUE, got '{item}'", param_hint="--var")
        variables[key] = value
    return variables


def _batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        size = int(value)
    except ValueError:
        raise typer.BadParameter(f"takes a positive integer or 'auto', got '{value}'", param_hint="--batch-size") from None
    if size < 1:
        raise typer.BadParameter(f"takes a positive integer or 'auto', got '{value}'", param_hint="--batch-size")
    return size


def _resources(items: Optional[List[str]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        try:
            out[key] = float(value) if sep else 1.0
        except ValueError:
            raise typer.BadParameter(f"takes KEY=AMOUNT, got '{item}'", param_hint="--worker-resources") from None
    return out


_SEAHELM_TASKS_HELP = "SEA-HELM: task set(s) from task_config.yaml (repeatable or comma-separated; default: seahelm; 'all': every task)."


def _dialect_options(norm: bool, temp: float, **seahelm) -> dict:
    options = {"probsem_norm": norm, "probsem_temp": temp}
    mapping = {}
    for item in seahelm.pop("seahelm_data", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"takes DATASET_ID=PATH, got '{item}'", param_hint="--seahelm-data")
        if not Path(value).expanduser().exists():
            raise typer.BadParameter(f"{key}={value}: no such file or folder {value}", param_hint="--seahelm-data")
        mapping[key] = value
    if mapping:
        options["seahelm_data"] = mapping
    judge_tokens = seahelm.pop("seahelm_judge_max_tokens", None)
    if judge_tokens:
        options["seahelm_judge_generation"] = {"max_tokens": judge_tokens}
    options.update({k: v for k, v in seahelm.items() if v is not None})
    return options


def _model_args(items: Optional[List[str]]) -> dict:
    """KEY=VALUE strings; values that read as JSON (numbers, true/false, null) are converted."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"takes KEY=VALUE, got '{item}'", param_hint="--model-arg")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _judge_options(judge: Optional[str], base_url: Optional[str], api_key_env: str, args: Optional[List[str]]) -> Optional[dict]:
    """Server settings for an ``openai:`` judge (the key stays in its environment variable)."""
    if not judge or not judge.startswith("openai:"):
        if args:
            raise typer.BadParameter("applies to an openai: --seahelm-judge only", param_hint="--judge-arg")
        return None
    return {"base_url": base_url, "api_key_env": api_key_env, **_model_args(args)}


def _load_plugins(plugins: Optional[List[Path]]) -> None:
    from proctor.scoring.metrics import load_metric_file

    for plugin in plugins or []:
        load_metric_file(str(plugin))


_DATA_PATH_HELP = "GLM-130B tasks: the data root their 'path' is relative to (GLM's DATA_PATH); default: the YAML's folder."
_NORM_HELP = "probsem suites: divide each query's log-prob by its number of tokens (probsem's --norm)."
_TEMP_HELP = "probsem suites: softmax temperature over the queries (probsem's --temp)."
_LMEVAL_DATA_HELP = "lm-eval tasks: ID[:CONFIG[:SPLIT]]=PATH, a local copy of a hub dataset (repeatable; see docs/lmeval.md)."
_LMEVAL_FILE_HELP = "lm-eval tasks: a YAML/JSON file of ID[:CONFIG[:SPLIT]]: PATH entries."
_LMEVAL_INCLUDE_HELP = "lm-eval tasks: a folder of task YAMLs searched for lm_eval:NAME besides the installed catalogue (repeatable)."


def _lmeval_options(data: Optional[List[str]], data_file: Optional[Path], include: Optional[List[Path]]) -> dict:
    mapping = {}
    for item in data or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise typer.BadParameter(f"--lmeval-data takes ID[:CONFIG[:SPLIT]]=PATH, got '{item}'")
        mapping[key] = value
    return {"lmeval_data": mapping or None, "lmeval_data_file": str(data_file) if data_file else None,
            "lmeval_include": [str(p) for p in include] if include else None}


_PLUGIN_HELP = "A Python file that registers metrics with proctor.scoring.metrics.register_metric (repeatable)."


@app.command()
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
    data_path: Optional[Path] = typer.Option(None, "--data-path", help=_DATA_PATH_HELP),
    norm: bool = typer.Option(False, "--norm", "--probsem-norm", help=_NORM_HELP),
    temp: float = typer.Option(1.0, "--temp", "--probsem-temp", help=_TEMP_HELP),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help=_PLUGIN_HELP),
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
    trust_task_code: bool = typer.Option(False, "--trust-task-code", help="SEA-HELM: run dataloader/metric/judge classes from task folders (Python code)."),
    seahelm_data: Optional[List[str]] = typer.Option(None, "--seahelm-data", help="SEA-HELM: DATASET_ID=PATH, a local copy of a hub dataset (repeatable)."),
    seahelm_judge: Optional[str] = typer.Option(None, "--seahelm-judge", help="SEA-HELM: the judge model (as --model, e.g. openai:NAME; default: the evaluated model)."),
    judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url", help="openai judge: its server's API root (default: --base-url)."),
    judge_api_key_env: Optional[str] = typer.Option(None, "--judge-api-key-env", help="openai judge: environment variable holding its API key (default: --api-key-env)."),
    judge_arg: Optional[List[str]] = typer.Option(None, "--judge-arg", help="KEY=VALUE backend option for the judge (repeatable), as --model-arg."),
    seahelm_runs: int = typer.Option(1, "--seahelm-runs", min=1, help="SEA-HELM: seeded runs per task, bootstrapped per question."),
    seahelm_tasks: Optional[List[str]] = typer.Option(None, "--seahelm-tasks", help=_SEAHELM_TASKS_HELP),
    base_model: Optional[bool] = typer.Option(None, "--base-model/--instruct-model", help="SEA-HELM: base (plain template, 5 shots) or instruct (chat template, 0 shots); default: by chat template."),
    reasoning: bool = typer.Option(False, "--reasoning-model", help="SEA-HELM: add the thinking budget and strip thinking before scoring."),
    seahelm_max_tokens: Optional[int] = typer.Option(None, "--seahelm-max-tokens", min=1, help="SEA-HELM: cap every language's max_tokens (quick runs)."),
    seahelm_judge_max_tokens: Optional[int] = typer.Option(None, "--seahelm-judge-max-tokens", min=1, help="SEA-HELM: the judge's max_tokens (overrides judge_generation_kwargs)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai: the server's API root, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="openai: environment variable holding the API key (never written anywhere)."),
    model_arg: Optional[List[str]] = typer.Option(None, "--model-arg", help="KEY=VALUE backend option (repeatable), e.g. concurrency=16, endpoint=chat, loglikelihood=top_logprobs, price_prompt=0.15."),
    mc_format: str = typer.Option("auto", "--mc-format", help="Multiple choice: auto (generate if the model cannot score log-likelihoods), loglikelihood, or generate (lettered options)."),
    mc_shuffle: Optional[int] = typer.Option(None, "--mc-shuffle", help="With the generate format: shuffle the lettered options, seeded per sample by this seed."),
    use_case_data: Optional[Path] = typer.Option(None, "--use-case-data", help="Use case files (.py): the evaluation data (.json/.jsonl) for a file that defines only the class."),
    use_case_metric: Optional[List[str]] = typer.Option(None, "--use-case-metric", help="Use case files: a metric (built-in name, FILE.py:CLASS or module:CLASS; repeatable)."),
    use_case_arg: Optional[List[str]] = typer.Option(None, "--use-case-arg", help="Use case files: KEY=VALUE keyword argument of the use case (JSON value; repeatable)."),
    use_case_config: Optional[Path] = typer.Option(None, "--use-case-config", help="Use case files: a YAML/JSON file with evaluation_data, evaluation_metrics, use_case_kwargs, gen_kwargs, batch_size."),
    lmeval_data: Optional[List[str]] = typer.Option(None, "--lmeval-data", help=_LMEVAL_DATA_HELP),
    lmeval_data_file: Optional[Path] = typer.Option(None, "--lmeval-data-file", help=_LMEVAL_FILE_HELP),
    lmeval_include: Optional[List[Path]] = typer.Option(None, "--lmeval-include", help=_LMEVAL_INCLUDE_HELP),
) -> None:
    """Evaluate a model on tasks and write a run folder. Re-run with the same --output to resume."""
    from proctor.api import evaluate
    from proctor.engine.overrides import RunOverrides, parse_limit

    _load_plugins(plugin)
    limit = parse_limit(limit)
    overrides = RunOverrides.from_flags(
        num_fewshot=num_fewshot, gen_kwargs=gen_kwargs, temperature=temperature, top_p=top_p, max_tokens=max_tokens,
        seed=seed, epochs=epochs, epoch_reducer=epoch_reducer, system_prompt=system_prompt,
        fewshot_as_multiturn=fewshot_as_multiturn, log_samples=log_samples,
    )

    if chat_template not in ("auto", "on", "off"):
        raise typer.BadParameter(f"takes auto, on or off, got '{chat_template}'", param_hint="--chat-template")
    if not (math.isfinite(temp) and temp > 0):
        raise typer.BadParameter(f"probsem's softmax temperature must be > 0 and finite, got {temp}", param_hint="--temp")
    for flag, value in (("--judge-base-url", judge_base_url), ("--judge-api-key-env", judge_api_key_env)):
        if value and not (seahelm_judge or "").startswith("openai:"):
            raise typer.BadParameter("applies to an openai: --seahelm-judge only; it would be ignored", param_hint=flag)
    if base_url and not model.startswith("openai:") and not (seahelm_judge or "").startswith("openai:"):
        raise typer.BadParameter("applies to openai: models (and an openai: --seahelm-judge) only; it would be ignored", param_hint="--base-url")
    chat = {"auto": None, "on": True, "off": False}[chat_template]
    options = {"dtype": dtype, "device": device, "batch_size": _batch_size(batch_size)}
    if max_length is not None:
        options["max_length"] = max_length
    if model.startswith("openai:"):
        options = {"base_url": base_url, "api_key_env": api_key_env, **_model_args(model_arg)}
    elif model_arg:
        options.update(_model_args(model_arg))
    python_files = [p for p in paths if p.suffix == ".py"]
    if python_files and len(python_files) < len(paths):
        others = [str(p) for p in paths if p.suffix != ".py"]
        raise typer.BadParameter(
            f"give either Python use case files or task files/folders, not both: {', '.join(map(str, python_files))} "
            f"(.py) with {', '.join(others)}", param_hint="PATHS",
        )
    if python_files:  # Python use case files (proctor.dialects.aisteer.runfile)
        from proctor.api import check_run_options
        from proctor.models.registry import check_model_options
        from proctor.dialects.aisteer.runconfig import UseCaseConfig, command_line_config, read_config
        from proctor.dialects.aisteer.runfile import run_use_case_files

        if overrides.recorded() or isinstance(limit, float):
            raise ProctorError(
                "use case files (.py) set their own prompts and generation in Python; of the run-time overrides they take "
                "--limit as a count only"
            )
        check_run_options(output, cache, update, restart, None)
        check_model_options(model, options)
        config = command_line_config(use_case_data, use_case_metric, use_case_arg).over(
            read_config(use_case_config) if use_case_config else UseCaseConfig()
        )
        with _progress(quiet) as hook:
            run_dir, results = run_use_case_files(
                paths, model, output_dir=output, limit=limit, model_options=options, command=sys.argv,
                cache=cache, chunk_size=chunk_size, progress=hook, update=update, restart=restart, config=config,
            )
        print_results(results)
        console.print(f"run folder: {run_dir}")
        return
    if use_case_data or use_case_metric or use_case_arg or use_case_config:
        raise typer.BadParameter("apply to Python use case files (.py) only", param_hint="--use-case-data/-metric/-arg/-config")
    if model.startswith("vllm:") and gpus_per_worker >= 1:
        options["tensor_parallel_size"] = int(gpus_per_worker)
    cluster = None
    if workers > 1 or ray_address:
        cluster = dict(
            workers=workers, address=ray_address, cpus_per_worker=cpus_per_worker, gpus_per_worker=gpus_per_worker,
            resources=_resources(worker_resources), nodes=tuple(worker_nodes or ()),
        )
    with _progress(quiet) as hook:
        result = evaluate(
            paths,
            model,
            output_dir=output,
            select=tasks,
            limit=limit,
            variables=_variables(data_dir, var),
            data_path=data_path,
            dialect_options=_dialect_options(
                norm, temp, trust_task_code=trust_task_code, seahelm_data=seahelm_data, seahelm_judge=seahelm_judge,
                seahelm_runs=seahelm_runs, seahelm_tasks=seahelm_tasks, seahelm_model_name=model, is_base_model=base_model, reasoning=reasoning,
                seahelm_max_tokens=seahelm_max_tokens, seahelm_judge_max_tokens=seahelm_judge_max_tokens,
                seahelm_judge_options=_judge_options(seahelm_judge, judge_base_url or base_url, judge_api_key_env or api_key_env, judge_arg),
                **_lmeval_options(lmeval_data, lmeval_data_file, lmeval_include),
            ),
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


@app.command("ls")
def list_tasks(
    paths: List[Path] = typer.Argument(..., help="Task files or folders."),
    norm: bool = typer.Option(False, "--norm", "--probsem-norm", help=_NORM_HELP),
    temp: float = typer.Option(1.0, "--temp", "--probsem-temp", help=_TEMP_HELP),
    trust_task_code: bool = typer.Option(False, "--trust-task-code", help="SEA-HELM: accepted as for run (listing loads no task code)."),
    seahelm_data: Optional[List[str]] = typer.Option(None, "--seahelm-data", help="SEA-HELM: DATASET_ID=PATH (repeatable); mapped hub tasks are listed."),
    base_model: Optional[bool] = typer.Option(None, "--base-model/--instruct-model", help="SEA-HELM: --base-model leaves out the tasks SEA-HELM skips on base models."),
    reasoning: bool = typer.Option(False, "--reasoning-model", help="SEA-HELM: accepted as for run."),
    lmeval_data: Optional[List[str]] = typer.Option(None, "--lmeval-data", help=_LMEVAL_DATA_HELP),
    lmeval_data_file: Optional[Path] = typer.Option(None, "--lmeval-data-file", help=_LMEVAL_FILE_HELP),
    lmeval_include: Optional[List[Path]] = typer.Option(None, "--lmeval-include", help=_LMEVAL_INCLUDE_HELP),
    seahelm_tasks: Optional[List[str]] = typer.Option(None, "--seahelm-tasks", help=_SEAHELM_TASKS_HELP),
) -> None:
    """List the tasks found under the given paths (SEA-HELM flags as for run); 'lm_eval:' or a glob
    such as 'lm_eval:mmlu*' lists lm-eval's catalogue (tasks, groups, tags) by name."""
    from proctor.api import load_tasks
    from proctor.dialects import lmeval

    lmeval_options = _lmeval_options(lmeval_data, lmeval_data_file, lmeval_include)
    if any(lmeval.is_catalogue_query(str(p)) for p in paths):
        table = Table()
        table.add_column("name", no_wrap=True)
        table.add_column("output type", no_wrap=True)
        table.add_column("defined at", overflow="fold")
        rows = lmeval.catalogue_rows([str(p) for p in paths], lmeval_options.get("lmeval_include"))
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print(f"{len(rows)} catalogue entr{'y' if len(rows) == 1 else 'ies'}")
        return

    table = Table()
    for column in ("task", "kind", "dialect", "version", "defined at"):
        table.add_column(column)
    options = _dialect_options(norm, temp, trust_task_code=trust_task_code, seahelm_data=seahelm_data,
                               is_base_model=base_model, reasoning=reasoning, seahelm_tasks=seahelm_tasks, **lmeval_options)
    found = load_tasks(paths, options=options)
    for task in found:
        table.add_row(task.name, task.spec.kind, task.dialect, task.spec.version, task.where)
    console.print(table)
    console.print(f"{len(found)} task(s)")


@app.command()
def validate(
    paths: List[Path] = typer.Argument(..., help="Task files or folders."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Sets ${PROCTOR_DATA} in task files."),
    var: Optional[List[str]] = typer.Option(None, "--var", help="KEY=VALUE for ${KEY} (repeatable)."),
    data_path: Optional[Path] = typer.Option(None, "--data-path", help=_DATA_PATH_HELP),
    norm: bool = typer.Option(False, "--norm", "--probsem-norm", help=_NORM_HELP),
    temp: float = typer.Option(1.0, "--temp", "--probsem-temp", help=_TEMP_HELP),
    plugin: Optional[List[Path]] = typer.Option(None, "--plugin", help=_PLUGIN_HELP),
    trust_task_code: bool = typer.Option(False, "--trust-task-code", help="SEA-HELM: run dataloader/metric/judge classes from task folders."),
    seahelm_data: Optional[List[str]] = typer.Option(None, "--seahelm-data", help="SEA-HELM: DATASET_ID=PATH (repeatable)."),
    lmeval_data: Optional[List[str]] = typer.Option(None, "--lmeval-data", help=_LMEVAL_DATA_HELP),
    lmeval_data_file: Optional[Path] = typer.Option(None, "--lmeval-data-file", help=_LMEVAL_FILE_HELP),
    lmeval_include: Optional[List[Path]] = typer.Option(None, "--lmeval-include", help=_LMEVAL_INCLUDE_HELP),
) -> None:
    """Check task files, their data and every prompt, without running a model."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    _load_plugins(plugin)
    variables = _variables(data_dir, var)
    if data_path is not None:
        variables["DATA_PATH"] = str(data_path.resolve())
    options = _dialect_options(norm, temp, trust_task_code=trust_task_code, seahelm_data=seahelm_data,
                               **_lmeval_options(lmeval_data, lmeval_data_file, lmeval_include))
    # every file's problems are reported, not only the first one's
    problems: list[dict] = []
    found = []
    for path in paths:
        try:
            found += load_tasks([path], options=options, problems=problems)
        except ProctorError as exc:
            problems.append({"file": str(path), "error": str(exc)})
    valid = 0
    for task in found:
        try:
            prepared = prepare_task(task, variables)
        except ProctorError as exc:
            problems.append({"task": task.name, "file": str(task.file), "error": str(exc)})
            continue
        valid += 1
        console.print(f"[green]ok[/green] {task.name}: {len(prepared.samples)} samples ({task.where})")
    from rich.markup import escape

    for problem in problems:
        err_console.print(f"[bold red]error:[/bold red] {escape(problem['error'])}", highlight=False, soft_wrap=True)
    console.print(f"{valid} task(s) valid")
    if problems:
        raise ProctorError(f"{len(problems)} file(s) or task(s) have problems (above)")


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="A run folder (holding results.json and samples.jsonl)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Where to write the page (default: RUN_DIR/report.html)."),
) -> None:
    """Write a self-contained report.html for a run: tables, charts, calibration, sample browser."""
    from proctor.runs.report import write_report

    console.print(f"report: {write_report(run_dir, output)}")


@app.command()
def compare(
    runs: List[Path] = typer.Argument(..., help="Run folders; the first is the baseline the others are compared with."),
    alpha: float = typer.Option(0.05, "--alpha", min=1e-6, max=0.5, help="Significance level (and 1 - confidence of the interval)."),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="Paired bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    output: Path = typer.Option(Path("comparison.json"), "--output", "-o", help="JSON file with every number shown."),
) -> None:
    """Per-task differences between runs on shared samples, with paired tests."""
    from proctor.runs.compare import compare_runs
    from proctor.runs.results import write_json_atomic

    found = compare_runs(runs, alpha=alpha, n_boot=resamples, seed=seed)
    for pair in found["comparisons"]:
        table = Table(title=f"B = {pair['b']} vs A = {pair['a']} (B - A), alpha={alpha}")
        for column in ("task", "metric", "n", "A", "B", "B - A", f"{100 * (1 - alpha):g}% CI", "McNemar p", "sig."):
            left = column in ("task", "metric", "sig.")
            table.add_column(column, justify="left" if left else "right", overflow="fold", no_wrap=column == "sig.", min_width=3 if column == "sig." else None)
        for task, entry in pair["tasks"].items():
            first = True
            for metric, m in entry["metrics"].items():
                ci = m.get("ci")
                p = m.get("mcnemar", {}).get("p_value")
                table.add_row(
                    task if first else "", metric, str(m["n_shared"]), _fmt(m["a"]), _fmt(m["b"]),
                    _fmt(m.get("diff")), f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "—",
                    _fmt(p) if p is not None else "—", "[bold red]yes[/bold red]" if m["significant"] else "no",
                )
                first = False
        console.print(table)
        flagged = sum(m["significant"] for t in pair["tasks"].values() for m in t["metrics"].values())
        console.print(f"{flagged} significant difference(s) at alpha={alpha}")
        for task, entry in pair["tasks"].items():
            if entry.get("formulation_differs"):
                formats = entry["mc_format"]
                err_console.print(
                    f"[bold yellow]warning:[/bold yellow] {task}: scored by {formats['a']} in A but {formats['b']} in B; "
                    "the difference mixes the model with the formulation", highlight=False, soft_wrap=True,
                )
        for side in ("a", "b"):
            if pair[f"tasks_only_in_{side}"]:
                console.print(f"only in {pair[side]}: {', '.join(pair[f'tasks_only_in_{side}'])}")
    write_json_atomic(output, found)
    console.print(f"comparison: {output}")


@app.command()
def export(
    run_dirs: List[Path] = typer.Argument(..., help="Run folders."),
    fmt: List[str] = typer.Option(["lm-eval", "parquet"], "--format", "-f", "--to", help="lm-eval (lm_eval/<model>/results_<date>.json + samples_<task>_<date>.jsonl), parquet (samples.parquet), duckdb (every run into --database)."),
    database: Path = typer.Option(Path("proctor.duckdb"), "--database", help="duckdb: the database file runs are added to (tables samples, metrics)."),
) -> None:
    """Write runs' results in lm-evaluation-harness's layout, samples as parquet, or many runs into one DuckDB file."""
    from proctor.runs.export import write_exports

    per_run = tuple(f for f in fmt if f != "duckdb")
    for run_dir in run_dirs:
        for path in write_exports(run_dir, per_run):
            console.print(f"wrote {path}")
    if "duckdb" in fmt:
        from proctor.runs.duckdb_export import export_duckdb

        console.print(f"wrote {export_duckdb(run_dirs, database)} ({len(run_dirs)} run(s))")


def _click_exception_classes() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(usage-error, abort) classes of plain click and of the copy typer >= 0.29 bundles.

    Typer raises its own copy's exceptions; a plugin or an older typer raises plain click's. Both
    must be caught, or a usage error ends in a traceback.
    """
    errors: list[type] = []
    aborts: list[type] = [typer.Abort]
    for module in ("click.exceptions", "typer._click.exceptions"):
        try:
            found = __import__(module, fromlist=["ClickException"])
        except ImportError:
            continue
        errors.append(found.ClickException)
        if hasattr(found, "Abort"):
            aborts.append(found.Abort)
    return tuple(dict.fromkeys(errors)), tuple(dict.fromkeys(aborts))


def _print_error(message: str) -> None:
    from rich.markup import escape

    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True)


def main(argv: Optional[List[str]] = None) -> None:
    """The console entry point: user errors print one message (no traceback) and exit non-zero."""
    import os

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    click_errors, aborts = _click_exception_classes()
    try:
        code = app(args=argv, prog_name="proctor", standalone_mode=False)
    except ProctorError as exc:
        _print_error(str(exc))
        sys.exit(2)
    except click_errors as exc:  # usage errors: unknown option, bad value (click's own message names it)
        exc.show()
        sys.exit(exc.exit_code)
    except aborts + (KeyboardInterrupt,):
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # a bug, not a user error: one line, the traceback on request
        if os.environ.get("PROCTOR_TRACEBACK"):
            raise
        _print_error(f"internal error: {type(exc).__name__}: {exc} (set PROCTOR_TRACEBACK=1 to see where)")
        sys.exit(3)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
