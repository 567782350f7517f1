"""Whose answers a run's numbers are: warnings, recorded in results.json and printed with the run's others, when
answers came from a shared response cache rather than the model (``--cache`` / $PROCTOR_CACHE), from an earlier
attempt against another server address, or when a served model's replies name another model than the one asked
for, or several (two servers mixed under one name). Also the model flags that had no effect on the model given
(a local model's --dtype on a served one; --chat-template off where the server applies its own)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit, urlunsplit

from proctor.core.redact import mask_url_credentials
from proctor.models.backend_options import option_flag
from proctor.models.base import Model
from proctor.runs.run_results import RunResults
from proctor.runs.store import CACHE_ENV, Lookup

SHOWN = 3  # names listed in a warning; the rest counted


def cache_warning(from_cache: int, total: int, cache: Path | None, given: object) -> str | None:
    """``from_cache`` of the run's ``total`` answers were read from ``cache``, not asked of the model: they are
    the answers of whichever run put them there (another server under the same model name, say)."""
    if not from_cache or cache is None:
        return None
    where = f"${CACHE_ENV}" if given in (None, "") or os.environ.get(CACHE_ENV) == str(given) else "--cache"
    return (
        f"{from_cache} of {total} answers came from the response cache {cache} ({where}), not from the model: "
        "they are the answers of the run that stored them (another server under the same model name gives the "
        f"same cache entries); unset {CACHE_ENV} or give another --cache to ask the model"
    )


def _same_model(asked: str, named: str) -> bool:
    """A reply's ``model`` names the model asked for: the same name, a dated snapshot of it (``gpt-4o`` ->
    ``gpt-4o-2024-08-06``), or the same last path part (``org/name`` served as ``name``, or the other way)."""
    if named == asked or named.startswith(asked + "-"):
        return True
    return asked.rsplit("/", 1)[-1] == named.rsplit("/", 1)[-1]


def _listed(counts: Mapping[str, int]) -> str:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"'{name}' ({n})" for name, n in ranked[:SHOWN])
    return shown + (f" and {len(ranked) - SHOWN} more" if len(ranked) > SHOWN else "")


def origin_warnings(asked: str, origins: Mapping[str, Mapping[str, int]] | None) -> list[str]:
    """Replies that name another model than ``asked``, and replies of more than one model or configuration."""
    if not origins:
        return []
    models = dict(origins.get("models") or {})
    fingerprints = dict(origins.get("system_fingerprints") or {})
    total = sum(models.values())
    out = []
    other = {name: n for name, n in models.items() if not _same_model(asked, name)}
    if other:
        out.append(
            f"{sum(other.values())} of {total} replies name another model than '{asked}': {_listed(other)}; the "
            "numbers are that model's (the server serves it under the name asked for, or maps the name)"
        )
    elif len(models) > 1:
        out.append(f"the replies name {len(models)} models: {_listed(models)}: answers of several servers or models")
    if len(fingerprints) > 1:
        out.append(
            f"the replies carry {len(fingerprints)} system_fingerprint values: {_listed(fingerprints)}: the server's "
            "configuration (or the server) changed during the run"
        )
    return out


def _address(attempt: Mapping[str, object]) -> str | None:
    """The server address an attempt asked (recorded since this version; else read from its command line), as
    one server is spelled whichever way it was typed: credentials masked (an earlier attempt's command line may
    hold them), no trailing slash, scheme and host in lower case."""
    found = _given_address(attempt)
    if found is None:
        return None
    parts = urlsplit(mask_url_credentials(found).rstrip("/"))
    if not parts.scheme or not parts.netloc:
        return found.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment))


def _given_address(attempt: Mapping[str, object]) -> str | None:
    recorded = attempt.get("base_url")
    if isinstance(recorded, str):
        return recorded
    command = attempt.get("command")
    words = [str(w) for w in command] if isinstance(command, list) else []
    for i, word in enumerate(words):
        if word == "--base-url" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--base-url="):
            return word.split("=", 1)[1]
        if word.startswith("base_url=") and i > 0 and words[i - 1] == "--model-arg":
            return word.split("=", 1)[1]
    return None


def address_warning(attempts: list[Mapping[str, object]], from_store: int, computed: int) -> str | None:
    """A resumed run whose stored answers were asked of another server address than the new ones: one number
    over the answers of two servers (the same model name; the weights cannot be seen from here)."""
    if not from_store or not computed or len(attempts) < 2:
        return None
    now = _address(attempts[-1])
    earlier = {a for a in (_address(x) for x in attempts[:-1] if _made_answers(x)) if a is not None and a != now}
    if now is None or not earlier:
        return None
    return (
        f"{from_store} answers were stored by an earlier attempt against {', '.join(sorted(earlier))} and {computed} "
        f"were asked now of {now}: unless both serve the same weights, the numbers mix two models (--restart asks "
        "every answer of one server; --model-arg revision=... tells two servers' weights apart)"
    )


def _made_answers(attempt: Mapping[str, object]) -> bool:
    responses = attempt.get("responses")
    computed = responses.get("computed") if isinstance(responses, Mapping) else None
    return not isinstance(computed, int) or computed > 0  # unknown (killed before it finished): it may have


def flag_warnings(model: Model, chat: bool | None) -> list[str]:
    """Each option ``model`` took and ignored, and ``--chat-template off`` (``chat`` False) where its server applies
    its own chat template: "had no effect", as ``--mc-shuffle ... was ignored``."""
    out = [
        f"{option_flag(name)} {value} had no effect: model '{model.name}' is served, and its " "server decides it"
        for name, value in model.ignored_options.items()
    ]
    if chat is False and model.server_chat is not None:  # and the task records chat: true (engine/task_settings)
        out.append(
            f"--chat-template off had no effect on generation: {model.server_chat} (recorded as chat: true); "
            "--model-arg endpoint=completions sends the prompt as it is"
        )
    return out


def record_provenance(
    record: RunResults, model: Model, lookup: Lookup, cache: Path | None, given: object, attempts: list[Any]
) -> None:
    """Whose answers these are, as warnings in ``record``: from the shared cache, from an earlier attempt against
    another server address, replies naming another model; what the replies named, in ``model_info``."""
    total = lookup.hits_run + lookup.hits_cache + lookup.computed
    told = [
        cache_warning(lookup.hits_cache, total, cache, given),
        address_warning(attempts, lookup.hits_run, lookup.computed),
    ]
    for warning in told:
        if warning:
            record.add_warning(warning)
    origins = model.reply_origins()
    if origins and (origins.get("models") or origins.get("system_fingerprints")):  # what the replies said
        asked = model.fingerprint.get("model")
        for warning in origin_warnings(str(asked if isinstance(asked, str) else model.name), origins):
            record.add_warning(warning)
        record.model_info = {**record.model_info, "reply_origins": {k: dict(v) for k, v in origins.items()}}
