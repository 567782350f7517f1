"""A finished run logged to Weights & Biases in offline mode: files under the run folder (or ``dir=``), uploaded
later, if ever, by ``wandb sync``; proctor itself never reaches the network."""

from __future__ import annotations

from pathlib import Path

from proctor.runs.trackers.contents import RunContents
from proctor.runs.trackers.logged import Logged, environment
from proctor.runs.trackers.targets import Target

SAMPLES_KEY = "samples"  # the samples table's key in the W&B run
ARTIFACT_TYPE = "proctor-run"  # results.json, run.json and tasks/*.yaml, as they are


def log_wandb(contents: RunContents, target: Target) -> Logged:
    import wandb

    folder = Path(target.option("dir") or contents.run_dir).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    tags = [t.strip() for t in (target.option("tags") or "").split(";") if t.strip()]
    # Offline, whatever $WANDB_MODE says; an artifact's files are staged beside the offline run (not in the
    # user's home), so the folder alone is what `wandb sync` needs.
    held = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DATA_DIR": str(folder / "wandb" / "data")}
    with environment(held):
        settings = wandb.Settings(mode="offline", silent=True, console="off", x_disable_stats=True, save_code=False)
        run = wandb.init(
            project=target.option("project", "proctor"),
            entity=target.option("entity"),
            name=target.option("name", contents.name),
            group=target.option("group"),
            job_type=target.option("job_type"),
            tags=tags or None,
            notes=target.option("notes"),
            dir=str(folder),
            config=contents.config,
            settings=settings,
            reinit="create_new",
        )
        try:
            run.log(contents.metrics, step=0)
            if contents.rows:  # none with --no-log-samples
                table = wandb.Table(columns=contents.columns, data=contents.rows, allow_mixed_types=True)
                run.log({SAMPLES_KEY: table})
            artifact = wandb.Artifact(_artifact_name(contents.name), type=ARTIFACT_TYPE)
            for file in contents.files:
                artifact.add_file(str(file), name=str(file.relative_to(contents.run_dir)))
            run.log_artifact(artifact)
        except Exception:
            run.finish(exit_code=1)
            raise
        run.finish()
    offline = Path(run.settings.sync_dir)
    return Logged("wandb", run.id, str(offline), f"offline; upload with: wandb sync {offline}")


def _artifact_name(name: str) -> str:
    """W&B artifact names take letters, digits, '-', '_' and '.'."""
    import re

    return "run-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
