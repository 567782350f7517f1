"""The ``proctor`` command: run, ls, validate, report, compare, export."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from proctor.cli_display import _fmt, _progress, console, err_console, print_results
from proctor.errors import ProctorError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Evaluate language models on tasks you define.")


def _variables(data_dir: Optional[Path], var: Optional[List[str]]) -> dict[str, str]:
    variables: dict[str, str] = {}
    if data_dir is not None:
        variables["PROCTOR_DATA"] = str(data_dir.resolve())
    for item in var or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--var takes KEY=VALUE, got '{item}'")
        variables[key] = value
    return variables


def _batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    try:
        size = int(value)
    except ValueError:
        raise typer.BadParameter("--batch-size takes a positive integer or 'auto'") from None
    if size < 1:
        raise typer.BadParameter("--batch-size takes a positive integer or 'auto'")
    return size


def _resources(items: Optional[List[str]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        try:
            out[key] = float(value) if sep else 1.0
        except ValueError:
            raise typer.BadParameter(f"--worker-resources takes KEY=AMOUNT, got '{item}'") from None
    return out


_SEAHELM_TASKS_HELP = "SEA-HELM: task set(s) from task_config.yaml (repeatable or comma-separated; default: seahelm; 'all': every task)."


def _dialect_options(norm: bool, temp: float, **seahelm) -> dict:
    options = {"probsem_norm": norm, "probsem_temp": temp}
    mapping = {}
    for item in seahelm.pop("seahelm_data", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--seahelm-data takes DATASET_ID=PATH, got '{item}'")
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
            raise typer.BadParameter(f"--model-arg takes KEY=VALUE, got '{item}'")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _judge_options(judge: Optional[str], base_url: Optional[str], api_key_env: str, args: Optional[List[str]]) -> Optional[dict]:
    """Server settings for an ``openai:`` judge (the key stays in its environment variable)."""
    if not judge or not judge.startswith("openai:"):
        if args:
            raise typer.BadParameter("--judge-arg applies to an openai: --seahelm-judge only")
        return None
    return {"base_url": base_url, "api_key_env": api_key_env, **_model_args(args)}


def _load_plugins(plugins: Optional[List[Path]]) -> None:
    from proctor.scoring.metrics import load_metric_file

    for plugin in plugins or []:
        load_metric_file(str(plugin))


_DATA_PATH_HELP = "GLM-130B tasks: the data root their 'path' is relative to (GLM's DATA_PATH); default: the YAML's folder."
_NORM_HELP = "probsem suites: divide each query's log-prob by its number of tokens (probsem's --norm)."
_TEMP_HELP = "probsem suites: softmax temperature over the queries (probsem's --temp)."
_PLUGIN_HELP = "A Python file that registers metrics with proctor.scoring.metrics.register_metric (repeatable)."


@app.command()
def run(
    paths: List[Path] = typer.Argument(..., help="Task files or folders (searched recursively), or Python use case files (.py)."),
    model: str = typer.Option("smollm2", "--model", "-m", help="'smollm2' (embedded default), a local HF folder, hf:<hub id>, or vllm:<folder or hub id> (needs the vllm extra and a GPU), or openai:<name> with --base-url, or steer:<file.py>:<NAME> (a steering pipeline; base model: --model-arg base=...)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Run folder (default: a new folder under runs/)."),
    tasks: Optional[List[str]] = typer.Option(None, "--tasks", "-t", help="Only tasks whose name matches this glob (repeatable)."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1, help="At most this many samples per task."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Local data root: sets ${PROCTOR_DATA} in task files."),
    var: Optional[List[str]] = typer.Option(None, "--var", help="KEY=VALUE for ${KEY} in task files (repeatable)."),
    dtype: str = typer.Option("float32", help="float32, bfloat16, float16 or auto."),
    device: str = typer.Option("cpu", help="cpu, cuda, cuda:N or auto."),
    batch_size: str = typer.Option("8", "--batch-size", "-b", help="Sequences per forward pass, or 'auto'."),
    max_length: Optional[int] = typer.Option(None, help="Context length limit (default: the model's)."),
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
) -> None:
    """Evaluate a model on tasks and write a run folder. Re-run with the same --output to resume."""
    from proctor.api import evaluate

    _load_plugins(plugin)

    if chat_template not in ("auto", "on", "off"):
        raise typer.BadParameter("--chat-template takes auto, on or off")
    chat = {"auto": None, "on": True, "off": False}[chat_template]
    options = {"dtype": dtype, "device": device, "batch_size": _batch_size(batch_size)}
    if max_length:
        options["max_length"] = max_length
    if model.startswith("openai:"):
        options = {"base_url": base_url, "api_key_env": api_key_env, **_model_args(model_arg)}
    elif model_arg:
        options.update(_model_args(model_arg))
    if paths and all(p.suffix == ".py" for p in paths):  # Python use case files (proctor.usecases.runfile)
        from proctor.usecases.runfile import run_use_case_files

        with _progress(quiet) as hook:
            run_dir, results = run_use_case_files(
                paths, model, output_dir=output, limit=limit, model_options=options, command=sys.argv,
                cache=cache, chunk_size=chunk_size, progress=hook, update=update, restart=restart,
            )
        print_results(results)
        console.print(f"run folder: {run_dir}")
        return
    if any(p.suffix == ".py" for p in paths):
        raise typer.BadParameter("give either Python use case files or task files/folders, not both")
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
        )
    if quiet:
        logging.getLogger("proctor").info("run folder: %s", result.run_dir)
    print_results(result.results)
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
    seahelm_tasks: Optional[List[str]] = typer.Option(None, "--seahelm-tasks", help=_SEAHELM_TASKS_HELP),
) -> None:
    """List the tasks found under the given paths (SEA-HELM flags as for run)."""
    from proctor.api import load_tasks

    table = Table()
    for column in ("task", "kind", "dialect", "version", "defined at"):
        table.add_column(column)
    options = _dialect_options(norm, temp, trust_task_code=trust_task_code, seahelm_data=seahelm_data,
                               is_base_model=base_model, reasoning=reasoning, seahelm_tasks=seahelm_tasks)
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
) -> None:
    """Check task files, their data and every prompt, without running a model."""
    from proctor.api import load_tasks
    from proctor.engine.prepare import prepare_task

    _load_plugins(plugin)
    variables = _variables(data_dir, var)
    if data_path is not None:
        variables["DATA_PATH"] = str(data_path.resolve())
    found = load_tasks(paths, options=_dialect_options(norm, temp, trust_task_code=trust_task_code, seahelm_data=seahelm_data))
    for task in found:
        prepared = prepare_task(task, variables)
        console.print(f"[green]ok[/green] {task.name}: {len(prepared.samples)} samples ({task.where})")
    console.print(f"{len(found)} task(s) valid")


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
        for side in ("a", "b"):
            if pair[f"tasks_only_in_{side}"]:
                console.print(f"only in {pair[side]}: {', '.join(pair[f'tasks_only_in_{side}'])}")
    write_json_atomic(output, found)
    console.print(f"comparison: {output}")


@app.command()
def export(
    run_dir: Path = typer.Argument(..., help="A run folder."),
    fmt: List[str] = typer.Option(["lm-eval", "parquet"], "--format", "-f", help="lm-eval (results_lm_eval.json) and/or parquet (samples.parquet)."),
) -> None:
    """Write a run's results in lm-evaluation-harness's layout and its samples as parquet."""
    from proctor.runs.export import write_exports

    for path in write_exports(run_dir, tuple(fmt)):
        console.print(f"wrote {path}")


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app(standalone_mode=False)
    except ProctorError as exc:
        from rich.markup import escape

        err_console.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False)
        sys.exit(2)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit codes
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
