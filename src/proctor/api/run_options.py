"""A run's options: what can be checked before any task file is read or model loaded (``check_run_options``),
and what run.json records of them, which a run continuing in the folder must match (``recorded_options``)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from proctor.core.errors import ProctorError
from proctor.engine.run_config import RunConfig
from proctor.models.base import Model
from proctor.runs.executor import default_chunk_size
from proctor.runs.manifest import check_output_folder
from proctor.runs.results import check_writable_folder
from proctor.runs.store import STORE_FILE, ResponseStore, cache_path


def chunk_option(model: Model, chunk_size: int | None) -> dict[str, int]:
    """A non-default --chunk-size enters the resume check: a backend that packs each call's requests
    together (HF) gives slightly different numbers for other chunks, so a run must not mix them."""
    if chunk_size is None or chunk_size == default_chunk_size(model):
        return {}
    return {"chunk_size": chunk_size}


def recorded_options(config: RunConfig, chunk: Mapping[str, int]) -> dict[str, object]:
    """The options run.json records, which a run continuing in the folder must match (``chunk``: ``chunk_option``).
    ``--predict-only`` is not one: it changes no request, so a predict-only folder is scored by a run without it
    (run.json's attempt says which attempts left the scoring out)."""
    options, limit = config.prepare, config.limit
    overrides = options.overrides.recorded()
    return {
        "limit": limit.value,
        **({"limit_per_part": True} if limit.per_part else {}),
        **({"sample_ids": list(limit.sample_ids)} if limit.sample_ids else {}),
        "chat": options.chat,
        "variables": dict(options.all_variables() or {}),
        **options.mc_options(),
        **chunk,
        **({"overrides": overrides} if overrides else {}),
        **({"roles": _given_roles(config)} if config.roles.given else {}),
    }


def _given_roles(config: RunConfig) -> dict[str, str]:
    """--model-role as run.json records it: a judge's answers are stored under its own fingerprint, but a run
    folder asked again with another judge must say so (--update), as with other options."""
    return {
        role: ref if isinstance(ref, str) else str(getattr(ref, "name", type(ref).__name__))
        for role, ref in sorted(config.roles.given.items())
    }


def check_run_options(
    output_dir: str | Path | None,
    cache: str | Path | None,
    update: bool,
    restart: bool,
    data_path: str | Path | None,
    runs_root: str | Path | None = None,
) -> None:
    """What can be checked before any task file is read or model loaded (``runs_root``: where a run without
    ``output_dir`` makes its folder)."""
    if update and restart:
        raise ProctorError(
            "--update and --restart exclude each other: update keeps what still matches, restart discards it all"
        )
    if output_dir is None and runs_root is not None:
        check_writable_folder(Path(runs_root), "the runs folder (no --output given)")
    if output_dir is not None:
        check_writable_folder(Path(output_dir), "--output")
        check_output_folder(Path(output_dir), restart)
        store_file = Path(output_dir) / STORE_FILE  # an empty one is left to check_resume (beside results.json?)
        if not restart and store_file.is_file() and store_file.stat().st_size > 0:
            # a damaged store is an error now, not after the model loads and the folder's results are replaced
            try:
                with ResponseStore(store_file) as store:
                    store.check()
            except ProctorError as exc:
                raise ProctorError(
                    f"{exc}; use --restart to start {output_dir} over (its stored answers are discarded), "
                    "or choose another --output"
                ) from None
    cache_file = cache_path(cache)
    if cache_file is not None:
        check_writable_folder(cache_file.parent, "--cache")
        if cache_file.is_file():
            ResponseStore(cache_file).close()
    if data_path is not None and not Path(data_path).expanduser().is_dir():
        raise ProctorError(f"--data-path {data_path}: no such folder")
