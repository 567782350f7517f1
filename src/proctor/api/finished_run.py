"""A finished run asked for again: ``--output DIR`` holding a complete run of exactly what this command asks
(the same tasks' content hashes, options, model spec and backend options, and a local model folder's weights
digest) is reported from its results.json without loading the model, which could only compute nothing.

What makes it "exactly the same" is conservative: anything not known to match (a model whose weights cannot be
fingerprinted before loading, a run folder written by another proctor version or before this check existed, a
partial run, an explicit --chunk-size the folder did not record) goes the normal way, where the manifest check
decides and the stored answers are reused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Mapping

from proctor.core.errors import ProctorError
from proctor.core.version import __version__
from proctor.runs.documents import ResultsDocument
from proctor.runs.manifest import read_manifest
from proctor.runs.results import read_json
from proctor.runs.run_digests import vouched
from proctor.runs.store import STORE_FILE

REQUEST_FIELD = "model_request"  # run.json's finished attempt: the digest of the model spec and its options


def model_request(spec: str, options: Mapping[str, object]) -> str:
    """A digest of ``--model`` and the backend options as given (a digest: an option may hold an API key)."""
    text = json.dumps({"spec": spec, "options": dict(options)}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def finished_results(
    run_dir: Path,
    task_hashes: Mapping[str, str],
    options: Mapping[str, object],
    request: str,
    identity: Mapping[str, object] | None,
    *,
    chunk_size: int | None,
    predict_only: bool,
    dialects: Mapping[str, str] | None = None,
) -> ResultsDocument | None:
    """results.json of ``run_dir`` when it is a complete run of exactly this request, else None.

    ``options``: run.json's recorded options as this run would record them before the model loads (no
    --chunk-size); ``identity``: what of the model's fingerprint is known without loading it, which must hold the
    weights' ``content`` digest; ``request``: ``model_request`` of this run."""
    if identity is None or "content" not in identity or not (run_dir / "results.json").is_file():
        return None
    store = run_dir / STORE_FILE
    if not store.is_file() or store.stat().st_size == 0:
        return None  # check_resume's refusal is the message for that
    manifest = read_manifest(run_dir)
    if manifest is None or manifest.get("proctor_version") != __version__:
        return None
    attempts = manifest.get("attempts") or []
    last = attempts[-1] if attempts and isinstance(attempts[-1], dict) else {}
    if "finished" not in last or "interrupted" in last or last.get(REQUEST_FIELD) != request:
        return None
    if bool(last.get("predict_only")) != predict_only or dict(manifest["tasks"]) != dict(task_hashes):
        return None
    recorded = dict(manifest["options"])
    if recorded.pop("chunk_size", None) != chunk_size or recorded != dict(options):
        return None  # an explicit --chunk-size may be the model's default: only the loaded model knows
    model = manifest["model"]
    if any(model.get(key) != value for key, value in identity.items()):
        return None
    try:
        results = read_json(run_dir / "results.json")
    except ProctorError:  # a damaged results.json: the normal run rewrites it
        return None
    if not isinstance(results, dict) or results.get("status") != "complete":
        return None
    if results.get("proctor_version") != __version__ or not isinstance(results.get("tasks"), dict):
        return None
    if set(results["tasks"]) != set(task_hashes):
        return None
    if not vouched(run_dir, results):  # edited by hand: the normal run rewrites it from the store
        return None
    # each task recorded under the dialect id it has now (a folder that names a former id, such as glm130b, is run
    # the normal way, which rewrites it with the current one)
    if dialects and any(
        isinstance(entry, dict) and entry.get("dialect") != dialects.get(name)
        for name, entry in results["tasks"].items()
    ):
        return None
    return results
