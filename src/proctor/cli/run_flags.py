"""``proctor run``'s flags as Typer declares them (names, metavars, help, ``--help`` panels, checking callbacks),
one per parameter of the command (``cli/run.py``), which names each as its default: ``flag.MODEL``. The Ray
workers' flags are ``cli/worker_flags.py``.

The dialects' own flags are added to the command from their declarations (``cli/options.with_dialect_options``)."""

from __future__ import annotations

import typer

from proctor.cli.habits import seed_option
from proctor.cli.options import (
    DEVICES,
    ChatTemplate,
    DType,
    McFormat,
    choices,
    device_option,
    limit_option,
    reducer_option,
)

# ``proctor run --help`` panels (a dialect's options get a panel of their own)
TASKS_PANEL, MODEL_PANEL, OVERRIDES_PANEL, RUN_FOLDER_PANEL = (
    "Tasks and data",
    "Model",
    "Overrides of every task",
    "Run folder and output",
)

DATA_PATH_HELP = (
    "GLM-130B tasks: the data root their 'path' is relative to (GLM's DATA_PATH); default: the YAML's folder."
)
PLUGIN_HELP = (
    "A Python file that registers metrics (register_metric) or defines register(registry): a model backend, "
    "exporter or dialect, as an installed plug-in (docs/extending.md; repeatable)."
)

PATHS = typer.Argument(
    ..., metavar="PATHS", help="Task files or folders (searched recursively), or Python use case files (.py)."
)

# -- which tasks, which rows
TASKS = typer.Option(
    None,
    "--tasks",
    "-t",
    metavar="GLOB",
    help="Only tasks whose name matches this glob (repeatable, or a,b as lm-eval's --tasks).",
    rich_help_panel=TASKS_PANEL,
)
LIMIT = typer.Option(
    None,
    "--limit",
    "-n",
    metavar="N",
    callback=limit_option,
    help="At most N samples per task, or a fraction (0 < N < 1) of each task's rows.",
    rich_help_panel=TASKS_PANEL,
)
LIMIT_PER_PART = typer.Option(
    None,
    "--limit-per-part",
    metavar="N",
    callback=limit_option,
    help="At most N samples (or a fraction) of each part of a task's breakdown (e.g. each MMLU subject), as "
    "lm-eval limits each subtask; a task without one: of the task.",
    rich_help_panel=TASKS_PANEL,
)
SAMPLE_ID = typer.Option(
    None,
    "--sample-id",
    metavar="ID[,ID...]",
    help="Only the samples with these ids, in every task (exact ids or globs; repeatable; Inspect's flag); "
    "an id no task holds is an error.",
    rich_help_panel=TASKS_PANEL,
)
DATA_DIR = typer.Option(
    None,
    "--data-dir",
    metavar="DIR",
    help="Local data root: sets ${PROCTOR_DATA} in task files.",
    rich_help_panel=TASKS_PANEL,
)
VAR = typer.Option(
    None,
    "--var",
    "-T",
    metavar="KEY=VALUE",
    help="Fills ${KEY} in task files (repeatable; -T as Inspect's task arguments).",
    rich_help_panel=TASKS_PANEL,
)
DATA_PATH = typer.Option(None, "--data-path", metavar="DIR", help=DATA_PATH_HELP, rich_help_panel=TASKS_PANEL)
PLUGIN = typer.Option(None, "--plugin", metavar="FILE", help=PLUGIN_HELP, rich_help_panel=TASKS_PANEL)
TRUST_TASK_CODE = typer.Option(
    False,
    "--trust-task-code",
    help="Run Python code that task files name (native task_class, GLM module:, SEA-HELM dataloaders, metrics, "
    "judges, lm-eval !function hooks beside your files, use case config metrics); see docs/trust.md.",
    rich_help_panel=TASKS_PANEL,
)

# -- the model
MODEL = typer.Option(
    "smollm2",
    "--model",
    "-m",
    metavar="MODEL",
    help="smollm2 (embedded default), a local HF folder, hf:HUB_ID, vllm:FOLDER|HUB_ID (vllm "
    "extra, a GPU), openai:NAME with --base-url, or steer:FILE.py:NAME (a steering "
    "pipeline; its base: --model-arg base=...).",
    rich_help_panel=MODEL_PANEL,
)
DTYPE = typer.Option(
    DType.float32,
    "--dtype",
    metavar="DTYPE",
    help=f"Weights' precision: {choices(DType)}.",
    rich_help_panel=MODEL_PANEL,
)
DEVICE = typer.Option(
    "cpu",
    "--device",
    metavar="DEVICE",
    callback=device_option,
    help=f"Where the model runs: {DEVICES}.",
    rich_help_panel=MODEL_PANEL,
)
BATCH_SIZE = typer.Option(
    "8", "--batch-size", "-b", metavar="[N|auto]", help="Sequences per forward pass.", rich_help_panel=MODEL_PANEL
)
MAX_LENGTH = typer.Option(
    None,
    "--max-length",
    min=1,
    metavar="N",
    help="Context length limit (default: the model's).",
    rich_help_panel=MODEL_PANEL,
)
CHAT_TEMPLATE = typer.Option(
    ChatTemplate.auto,
    "--chat-template",
    help="auto: as each task says; on: all tasks; off: none.",
    rich_help_panel=MODEL_PANEL,
)
MODEL_ARG = typer.Option(
    None,
    "--model-arg",
    metavar="KEY=VALUE",
    help="A backend option (repeatable), e.g. concurrency=16, endpoint=chat, price_prompt=0.15.",
    rich_help_panel=MODEL_PANEL,
)
MODEL_ROLE = typer.Option(
    None,
    "--model-role",
    metavar="ROLE=MODEL",
    help="A model in a role besides the evaluated one (repeatable), as --model: judge (SEA-HELM's and AISteer360's "
    "judges), metric (AISteer360's Perplexity), steer_base (a steering pipeline's base); replaces the model "
    "the task files name for that role.",
    rich_help_panel=MODEL_PANEL,
)
BASE_URL = typer.Option(
    None,
    "--base-url",
    metavar="URL",
    help="openai: the server's API root, e.g. http://127.0.0.1:8000/v1.",
    rich_help_panel=MODEL_PANEL,
)
API_KEY_ENV = typer.Option(
    "OPENAI_API_KEY",
    "--api-key-env",
    metavar="NAME",
    help="openai: the variable holding the API key (never written anywhere).",
    rich_help_panel=MODEL_PANEL,
)
MC_FORMAT = typer.Option(
    McFormat.auto,
    "--mc-format",
    metavar="FORMAT",
    help="Multiple choice: auto (generate if the model cannot score log-likelihoods), "
    "loglikelihood, or generate (lettered options).",
    rich_help_panel=MODEL_PANEL,
)
MC_SHUFFLE = typer.Option(
    None,
    "--mc-shuffle",
    metavar="SEED",
    help="With the generate format: shuffle the lettered options, seeded per sample.",
    rich_help_panel=MODEL_PANEL,
)

# -- run-time overrides of every task
NUM_FEWSHOT = typer.Option(
    None,
    "--num-fewshot",
    metavar="N",
    help="Few-shot examples per prompt (each task's fewshot.count).",
    rich_help_panel=OVERRIDES_PANEL,
)
GEN_KWARGS = typer.Option(
    None,
    "--gen-kwargs",
    metavar="KEY=VALUE,...",
    help="Generation settings (lm-eval names too: max_gen_toks, until, do_sample).",
    rich_help_panel=OVERRIDES_PANEL,
)
TEMPERATURE = typer.Option(
    None,
    "--temperature",
    metavar="T",
    help="Sampling temperature for generate tasks (0: greedy).",
    rich_help_panel=OVERRIDES_PANEL,
)
TOP_P = typer.Option(
    None, "--top-p", metavar="P", help="Nucleus sampling for generate tasks.", rich_help_panel=OVERRIDES_PANEL
)
MAX_TOKENS = typer.Option(
    None, "--max-tokens", metavar="N", help="New tokens per generation.", rich_help_panel=OVERRIDES_PANEL
)
SEED = typer.Option(
    None,
    "--seed",
    metavar="S",
    callback=seed_option,
    help="Sampling seed; each sample and epoch draws from its own stream (lm-eval tasks: also the few-shot seed).",
    rich_help_panel=OVERRIDES_PANEL,
)
EPOCHS = typer.Option(
    1,
    "--epochs",
    min=1,
    metavar="N",
    help="Generate tasks: run every sample N times (per-epoch scores, pass@k).",
    rich_help_panel=OVERRIDES_PANEL,
)
EPOCH_REDUCER = typer.Option(
    "mean",
    "--epoch-reducer",
    metavar="[mean|pass@K]",
    callback=reducer_option,
    help="A sample's score across epochs.",
    rich_help_panel=OVERRIDES_PANEL,
)
THINK_END_TOKEN = typer.Option(
    None,
    "--think-end-token",
    metavar="TEXT",
    help="Reasoning models: every generation is scored on the text after the last TEXT (e.g. '</think>'); the "
    "thinking is kept in samples.jsonl (lm-eval's think_end_token model argument, also taken as "
    "--model-arg think_end_token=TEXT).",
    rich_help_panel=OVERRIDES_PANEL,
)
MAX_THINKING_TOKENS = typer.Option(
    None,
    "--max-thinking-tokens",
    metavar="N",
    min=1,
    help="Reasoning models: a thinking budget, N tokens added to every generation's max_tokens so the answer "
    "keeps its own (SEA-HELM's max_think_tokens; Inspect's --reasoning-tokens).",
    rich_help_panel=OVERRIDES_PANEL,
)
SYSTEM_PROMPT = typer.Option(
    None,
    "--system-prompt",
    metavar="TEXT",
    help="For every task (chat: a system turn; plain text: the prompt's start).",
    rich_help_panel=OVERRIDES_PANEL,
)
FEWSHOT_AS_MULTITURN = typer.Option(
    False,
    "--fewshot-as-multiturn",
    help="Chat: few-shot examples as user/assistant turns.",
    rich_help_panel=OVERRIDES_PANEL,
)
FEWSHOT_IN_ONE_TURN = typer.Option(
    False,
    "--fewshot-in-one-turn",
    help="Chat: all few-shot examples in the user turn.",
    rich_help_panel=OVERRIDES_PANEL,
)
NO_LOG_SAMPLES = typer.Option(
    False, "--no-log-samples", help="Write no samples.jsonl (nor samples.parquet).", rich_help_panel=OVERRIDES_PANEL
)

# -- the run folder
PREDICT_ONLY = typer.Option(
    False,
    "--predict-only",
    help="Run the model and keep its answers (samples.jsonl) but compute no metric (lm-eval's flag); the same "
    "--output run again without it scores the stored answers, with no model call.",
    rich_help_panel=RUN_FOLDER_PANEL,
)
OUTPUT = typer.Option(
    None,
    "--output",
    "-o",
    metavar="DIR",
    help="Run folder (default: a new folder under runs/).",
    rich_help_panel=RUN_FOLDER_PANEL,
)
UPDATE = typer.Option(
    False,
    "--update",
    help="Continue in an --output folder whose tasks, model or options changed, recomputing only changed requests.",
    rich_help_panel=RUN_FOLDER_PANEL,
)
RESTART = typer.Option(
    False, "--restart", help="Discard what the --output folder holds and start over.", rich_help_panel=RUN_FOLDER_PANEL
)
CACHE = typer.Option(
    None,
    "--cache",
    envvar="PROCTOR_CACHE",
    metavar="DIR",
    help="A response cache folder shared across runs (opt-in).",
    rich_help_panel=RUN_FOLDER_PANEL,
)
CHUNK_SIZE = typer.Option(
    None,
    "--chunk-size",
    min=1,
    metavar="N",
    help="Requests per model call, each stored when it finishes (default: the backend's).",
    rich_help_panel=RUN_FOLDER_PANEL,
)
STRICT = typer.Option(
    False,
    "--strict",
    help="Every audit finding (docs/audit.md: duplicate choices, few-shot leaks, misaligned joins, ...) stops its "
    "task as an error, not a warning; a task file silences a rule with audit: {silence: [{rule, reason}]}.",
    rich_help_panel=RUN_FOLDER_PANEL,
)
SKIP_BROKEN = typer.Option(
    False,
    "--skip-broken",
    help="A folder run in which tasks could not load, prepare or run still exits 0 (they "
    "are listed in the results either way).",
    rich_help_panel=RUN_FOLDER_PANEL,
)
QUIET = typer.Option(
    False,
    "--quiet",
    "-q",
    help="Print only the results: no progress, no library progress bars, no known deprecation notices.",
    rich_help_panel=RUN_FOLDER_PANEL,
)
LOG_TO = typer.Option(
    None,
    "--log-to",
    metavar="TRACKER[:KEY=VALUE,...]",
    help="Log the finished run to wandb (offline: files under the run folder; wandb sync uploads them) or mlflow "
    "(a local file store, tracking_uri=file:PATH; default ./mlruns): metrics, task configurations, environment, "
    "samples table (repeatable; docs/trackers.md). wandb extra or mlflow extra.",
    rich_help_panel=RUN_FOLDER_PANEL,
)
