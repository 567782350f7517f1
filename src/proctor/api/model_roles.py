"""Models in roles: the models a run's dialects use besides the evaluated one (a judge, the model a metric reads,
the base a steering pipeline steers), made here and nowhere else.

A dialect names the model its task files give for a role (SEA-HELM's ``--seahelm-judge``, an AISteer360
``LLMJudgeMetric("smollm2", ...)``) and asks ``active_roles().model(role, default)``: the role given for the run
(``--model-role judge=SPEC``, ``evaluate(model_roles=...)``) replaces that default. A role's model is made by
``api/model_resolver.resolve_model``, once per run for each spec and options (SEA-HELM's tasks and an AISteer360
use case's metrics share one judge), and the roles a run used go into results.json (``roles``). Dialect code
never loads a model from a string itself (``tests/cross_cutting/test_model_roles_boundary.py``).

The run's roles are active while ``api.run_evaluation`` loads and runs its tasks; elsewhere (a ``Benchmark`` or
a metric used from Python) ``active_roles`` gives the process's roles: no role given, nothing kept, so each
caller keeps the model it gets, as before.
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, Iterator, Mapping, Sequence

from proctor.api.model_resolver import resolve_model
from proctor.core.dialect import OptionError
from proctor.core.errors import ModelLoadError, ProctorError
from proctor.core.registry import backend_of, registry
from proctor.engine.run_config import ModelConfig, ModelRef, RolesConfig
from proctor.models.base import Model

ROLE_FLAG = "--model-role"

# the roles a dialect asks for, each with what fills it (``proctor run --help``, docs/runs.md)
ROLES: dict[str, str] = {
    "judge": "a model that grades answers: SEA-HELM's judges, AISteer360's LLMJudgeMetric and TruthfulQA judges",
    "metric": "a model a metric reads: AISteer360's Perplexity",
    "steer_base": "the model a steering pipeline steers: AISteer360's Benchmark, --model steer:FILE.py:NAME",
}


def parse_roles(items: Sequence[str] | None, flag: str = ROLE_FLAG) -> dict[str, str]:
    """``ROLE=SPEC`` strings (the command line's) as {role: spec}; a malformed one, an unknown role or a role given
    twice is an ``OptionError`` naming ``flag`` and the item."""
    out: dict[str, str] = {}
    for item in items or ():
        role, sep, spec = item.partition("=")
        role, spec = role.strip(), spec.strip()
        if not sep or not role or not spec:
            raise OptionError(flag, f"takes ROLE=MODEL (e.g. judge=openai:gpt-4o-mini), got '{item}'")
        _check_role(role, flag)
        if role in out and out[role] != spec:
            raise OptionError(flag, f"names the role '{role}' twice ('{out[role]}' and '{spec}'); give it once")
        _check_spec(role, spec, flag)
        out[role] = spec
    return out


def _check_role(role: str, flag: str) -> None:
    if role not in ROLES:
        known = "; ".join(f"{name}: {what}" for name, what in ROLES.items())
        raise OptionError(flag, f"unknown role '{role}'; the roles are {known}")


def _check_spec(role: str, spec: str, flag: str) -> None:
    """A spec's backend prefix is one proctor has (before any model loads); what it names is checked on loading."""
    if backend_of(spec) is None:
        prefix = spec.partition(":")[0]
        available = ", ".join(registry().model_backends)
        raise OptionError(flag, f"{role}={spec}: unknown model backend '{prefix}:' (the backends: {available})")


def _options_key(options: Mapping[str, object]) -> str:
    return json.dumps(dict(options), sort_keys=True, default=repr)


class ModelRoles:
    """A run's roles: the models given for them (``given``) and the models made for them, each spec and options
    made once (``keep``; the process's roles keep nothing). ``server``: the settings a served role (``openai:``)
    takes where its dialect gives none."""

    def __init__(
        self, given: Mapping[str, ModelRef] | None = None, server: Mapping[str, Any] | None = None, keep: bool = True
    ) -> None:
        self._given: dict[str, ModelRef] = {}
        for role, ref in dict(given or {}).items():
            try:
                _check_role(role, "model_roles")
                if isinstance(ref, str):
                    if not ref.strip():
                        raise OptionError("model_roles", f"role '{role}' names no model")
                    _check_spec(role, ref, "model_roles")
            except OptionError as exc:  # from Python: the keyword in the message (the CLI's parse_roles names its flag)
                raise OptionError(exc.flag, f"model_roles: {exc}") from None
            self._given[role] = ref
        self._server = dict(server or {})
        self._keep = keep
        self._made: dict[tuple[str, str], Model] = {}
        self._used: dict[str, dict[str, object]] = {}  # results.json's roles (RoleModel's fields)
        self._fingerprints: dict[str, list[tuple[str, object]]] = {}  # every model handed out per role (spec, print)
        # re-entrant: making a role's model may ask for another role's (a steer: judge or metric model loads its
        # steer_base through these roles, in the same thread)
        self._lock = threading.RLock()

    @classmethod
    def of(cls, config: RolesConfig) -> ModelRoles:
        return cls(config.given, config.server)

    def given(self, role: str) -> ModelRef | None:
        """The model given for ``role`` for this run (None: the task files' own)."""
        return self._given.get(role)

    def spec(self, role: str, default: Any) -> Any:
        """What ``role`` names: the model given for it, else ``default`` (the task files', as the dialect read it)."""
        given = self._given.get(role)
        return default if given is None else given

    def model(
        self,
        role: str,
        default: Any,
        *,
        options: Mapping[str, object] | None = None,
        server: Mapping[str, Any] | None = None,
    ) -> Any:
        """The model of ``role``: the one given for the run, else ``default`` (a spec string, or an object used as
        it is). A spec loads with ``options`` (a local model's: dtype, device) or, served (``openai:``), with
        ``server`` (base_url, api_key_env, backend options) over the run's server settings."""
        if role not in ROLES:
            raise ProctorError(f"no model role '{role}' (the roles: {', '.join(ROLES)})")  # a dialect's mistake
        given = self._given.get(role)
        ref = default if given is None else given
        source = "task" if given is None else ROLE_FLAG
        if ref is None:
            raise ProctorError(f"no model for the role '{role}': give {ROLE_FLAG} {role}=MODEL")
        if not isinstance(ref, str):  # a model object (Python): used as it is
            self._record(role, getattr(ref, "name", type(ref).__name__), source, ref)
            return ref
        load_options = self._load_options(ref, options, server)
        key = (ref, _options_key(load_options))
        with self._lock:  # tasks judged from several threads make a role's model once
            made = self._made.get(key)
            if made is None:
                try:
                    made = resolve_model(ModelConfig(ref, load_options)).model
                except ModelLoadError as exc:  # which role, and who named its model
                    named = f"{ROLE_FLAG} {role}={ref}" if given is not None else f"the {role} model '{ref}'"
                    raise ModelLoadError(f"{named}: {exc}") from None
                if self._keep:
                    self._made[key] = made
            self._record(role, ref, source, made)
        return made

    def _load_options(
        self, spec: str, options: Mapping[str, object] | None, server: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        backend = backend_of(spec)
        if backend is not None and backend.server:
            from proctor.models.judge import judge_load_options

            settings = {**self._server, **dict(server or {})}
            return judge_load_options(spec, **settings)
        return dict(options or {})

    def _record(self, role: str, spec: str, source: str, model: object) -> None:
        if not self._keep:
            return
        entry: dict[str, object] = {"model": spec, "source": source}
        fingerprint = getattr(model, "fingerprint", None)
        if isinstance(fingerprint, dict):
            entry["fingerprint"] = fingerprint
            seen = self._fingerprints.setdefault(role, [])
            if (spec, fingerprint) not in seen:
                seen.append((spec, fingerprint))
        self._used[role] = entry

    def self_judged(self, evaluated: Mapping[str, object]) -> list[str]:
        """The judges (by spec) that are the evaluated model itself, by fingerprint: a model grading its own answers
        (every judge a run's tasks used, not only the last one ``used`` keeps)."""
        return [spec for spec, printed in self._fingerprints.get("judge", []) if printed == dict(evaluated)]

    def unused(self) -> list[str]:
        """The roles given for the run that no task asked for (a warning: the flag changed nothing)."""
        return [role for role in self._given if role not in self._used]

    def used(self) -> dict[str, dict[str, object]]:
        """results.json's ``roles``: each role a model was made or handed out for, its spec and where it came from
        (``--model-role``, or ``task``: the task files and dialect options), and its fingerprint."""
        return {role: dict(entry) for role, entry in sorted(self._used.items())}


_PROCESS = ModelRoles(keep=False)
# a module global, not a context variable: judges and metrics run in worker threads, which must see the run's roles
_ACTIVE: list[ModelRoles] = []


def active_roles() -> ModelRoles:
    """The roles of the run loading or running now; outside a run, the process's (none given, nothing kept)."""
    return _ACTIVE[-1] if _ACTIVE else _PROCESS


@contextlib.contextmanager
def roles_in_use(roles: ModelRoles) -> Iterator[ModelRoles]:
    """``roles`` are the active ones while the block runs (``api.run_evaluation``: loading and running the tasks)."""
    _ACTIVE.append(roles)
    try:
        yield roles
    finally:
        _ACTIVE.remove(roles)
