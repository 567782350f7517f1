"""The Hugging Face hub as proctor reaches it: asked once, without retries, before anything loads.

huggingface_hub retries a refused or timed-out connection five times with growing waits (about a
minute, with every attempt logged) inside each file download; a model name with a typo, or a dataset
with no network, should fail at once with one line instead. So before handing a hub id to transformers
or datasets, proctor checks the local cache, the offline switches and then the hub itself, once.
"""

from __future__ import annotations

import functools
import os
import urllib.error
import urllib.request

TIMEOUT = 10.0  # seconds for the one reachability request


def offline() -> bool:
    """Whether the user switched the hub off (HF_HUB_OFFLINE, or HF_DATASETS_OFFLINE for datasets)."""
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


@functools.lru_cache(maxsize=None)
def _unreachable(url: str) -> str | None:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=TIMEOUT):
            return None
    except urllib.error.HTTPError:  # an HTTP answer, whatever its status: the hub is there
        return None
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", None) or exc)


def unreachable() -> str | None:
    """Why the hub cannot be reached (offline, or one request failed), or None when it answers."""
    if offline():
        return "offline (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE is set)"
    reason = _unreachable(endpoint())
    return None if reason is None else f"{endpoint()} cannot be reached ({reason})"


def model_problem(repo_id: str, revision: str | None = None) -> str | None:
    """Why ``repo_id`` cannot load as a hub model, or None when it can (or only loading can tell)."""
    try:
        from huggingface_hub import HfApi, try_to_load_from_cache
        from huggingface_hub.errors import (
            GatedRepoError,
            HFValidationError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:  # transformers needs huggingface_hub: loading will say what is missing
        return None
    try:
        if isinstance(try_to_load_from_cache(repo_id, "config.json", revision=revision), str):
            return None  # in the local cache: loads without the network
    except HFValidationError:
        return "not a folder, and not a valid hub id (ORGANISATION/NAME)"
    reason = unreachable()
    if reason is not None:
        return (
            f"not a folder, not in the Hugging Face cache, and the hub is {reason}"
            if offline()
            else f"not a folder, not in the Hugging Face cache, and {reason}"
        )
    try:
        HfApi(endpoint=endpoint()).model_info(repo_id, revision=revision, timeout=TIMEOUT)
    except GatedRepoError:
        return None  # it exists; loading says what access it needs
    except RepositoryNotFoundError:
        return "no such folder, and no model of that name on the Hugging Face hub (a private one needs `hf auth login`)"
    except RevisionNotFoundError:
        return f"the hub has no revision '{revision}' of it"
    except HFValidationError:
        return "not a folder, and not a valid hub id (ORGANISATION/NAME)"
    except Exception:  # anything else (a proxy, a rate limit): loading tries and says what went wrong
        return None
    return None
