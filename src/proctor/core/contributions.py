"""What plug-ins contribute, and the ``Registry`` that holds it: dialects, task handlers, model backends, exporters,
roll-up rules, metric modules and resolvers, audit rules.

A plug-in's ``register(registry)`` receives a ``Registry`` and calls its ``add_*`` methods; ``core/registry.py``
builds the one registry of a process from every plug-in. This module names no plug-in: a declaration imports it
(for ``Registry``) without importing the module that finds declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pydantic import BaseModel

from proctor.core.audit import AuditRule
from proctor.core.references import resolve
from proctor.core.registrations import Origin, claim, origin_of

if TYPE_CHECKING:
    from proctor.core.dialect import Dialect


@dataclass(frozen=True)
class TaskHandler:
    """A dialect's task handler, registered by name: the class and its options model as
    ``module:Name`` references, imported when a task of it is read back or run (not at registration)."""

    name: str
    handler: str  # "package.module:Class", a ``kinds.custom.CustomTask`` subclass
    options: str  # "package.module:Model", the pydantic model of ``HandlerSpec.options``

    def handler_class(self) -> type:
        found = resolve(self.handler)
        if not isinstance(found, type):
            raise ValueError(f"task handler '{self.name}': {self.handler} is not a class")
        return found

    def options_model(self) -> type[BaseModel]:
        found = resolve(self.options)
        if not (isinstance(found, type) and issubclass(found, BaseModel)):
            raise ValueError(f"task handler '{self.name}': {self.options} is not a pydantic model")
        return found


ModelLoader = Callable[..., Any]  # (rest of the --model string, **options) -> Model
# (rest of the --model string, options) -> the option names the backend takes (None: not checked);
# raises ModelLoadError for a reference that cannot load. Run before anything loads.
ModelCheck = Callable[[str, dict[str, Any]], "set[str] | None"]
# (rest of the --model string, options) -> the fields of the model's fingerprint that are known without loading it
# (a local folder's path and content digest), or None: a resumed run's folder is compared with them before loading.
ModelIdentity = Callable[[str, dict[str, Any]], "dict[str, Any] | None"]
Exporter = Callable[..., list[str]]  # (prepared, outcome, run_dir, model_name, **options) -> files written

DEFAULT_BACKEND = "hf"  # a --model without a prefix: a Hugging Face folder or hub id, or the embedded default


def split_model_spec(spec: str) -> tuple[str, str]:
    """A ``--model`` string as (backend prefix, the rest): ``vllm:org/name`` -> ("vllm", "org/name"); no prefix
    (or a Windows drive letter) -> the default backend and the whole string."""
    prefix, _, rest = spec.partition(":")
    if not rest or len(prefix) == 1:
        prefix, rest = DEFAULT_BACKEND, spec
    return prefix, rest


@dataclass(frozen=True)
class ModelBackend:
    """A registered ``--model PREFIX:`` backend: how it loads, how its options are vetted, and what it is.

    The capabilities let other modules ask about a model string (``Registry.backend_of``) instead of
    matching prefixes themselves."""

    prefix: str
    loader: ModelLoader
    check: ModelCheck | None = None
    identity: ModelIdentity | None = None
    server: bool = False  # served over HTTP at --base-url: takes base_url / api_key_env, none of dtype, device, ...
    tensor_parallel: bool = False  # a replica's --gpus-per-worker become its tensor_parallel_size
    hub_models: bool = False  # the rest may be a Hugging Face hub id, looked up on the hub before loading
    tokenizer_folder: bool = False  # the rest is a local folder (or the embedded default) holding the tokenizer
    # whether the model the rest names takes images, as far as is known before it loads (None: not known then)
    images: Callable[[str], bool | None] | None = None
    # loading imports or runs Python code the rest names (a file, a module): a spec a task file gives for such a
    # backend needs --trust-task-code (api/model_consent.py, docs/trust.md); one typed on the command line does not
    runs_code: bool = False
    # options that change neither what a request asks nor what an answer is (where the server is, what a token
    # costs, how many requests go at once or how many prompts share one, how long one may take): a run's
    # settings record them as information only, so that two runs differing in them alone stay comparable
    inert_options: frozenset[str] = frozenset()


@dataclass
class Registry:
    dialects: dict[str, "Dialect[Any]"] = field(default_factory=dict)
    model_backends: dict[str, ModelBackend] = field(default_factory=dict)
    exporters: dict[str, Exporter] = field(default_factory=dict)
    rollup_rules: list[Any] = field(default_factory=list)
    metric_modules: list[str] = field(default_factory=list)
    metric_names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # module -> the names it registers
    metric_resolvers: list[Callable[[str], Any]] = field(default_factory=list)
    task_handlers: dict[str, TaskHandler] = field(default_factory=dict)
    audit_rules: dict[str, AuditRule] = field(default_factory=dict)  # a plug-in's, beside the built-in ones
    # per table ("model backend", "exporter", "audit rule"): who registered each name (core/registrations.py)
    origins: dict[str, dict[str, Origin]] = field(default_factory=dict)

    def _claim(self, what: str, name: str, obj: object, hint: str = "") -> None:
        claim(self.origins.setdefault(what, {}), what, name, origin_of(obj), hint)

    # -- registration (called from plug-ins' register functions)
    def add_dialect(self, dialect: "Dialect[Any]") -> None:
        taken = {name for d in self.dialects.values() for name in (d.name, *d.former_names)}
        for name in (dialect.name, *dialect.former_names):
            if name in taken:
                raise ValueError(f"dialect '{name}' is registered twice")
        self.dialects[dialect.name] = dialect

    def add_task_handler(self, name: str, handler: str, options: str) -> None:
        """Tasks whose spec names ``handler: {name: NAME}`` run through ``handler`` ("module:Class"), with
        options validated by ``options`` ("module:Model")."""
        if name in self.task_handlers:
            raise ValueError(f"task handler '{name}' is registered twice")
        self.task_handlers[name] = TaskHandler(name, handler, options)

    def task_handler(self, name: str) -> TaskHandler:
        try:
            return self.task_handlers[name]
        except KeyError:
            known = ", ".join(sorted(self.task_handlers)) or "none"
            raise ValueError(f"no task handler '{name}' is registered (registered: {known})") from None

    def add_model_backend(
        self,
        prefix: str,
        loader: ModelLoader,
        check: ModelCheck | None = None,
        *,
        identity: ModelIdentity | None = None,
        server: bool = False,
        tensor_parallel: bool = False,
        hub_models: bool = False,
        tokenizer_folder: bool = False,
        images: Callable[[str], bool | None] | None = None,
        runs_code: bool = False,
        inert_options: Iterable[str] = (),
    ) -> None:
        """``--model PREFIX:REST`` loads with ``loader``; ``check`` vets REST and the options first; ``identity``
        tells what of the model's fingerprint is known without loading it. The other keywords are the backend's
        capabilities (``ModelBackend``); a plug-in's backend usually has none. ``inert_options``: the options
        that cannot change a request or an answer (``ModelBackend.inert_options``). A prefix already registered
        elsewhere (``hf``, ``openai``, another plug-in's) is refused, naming both (``core/registrations.py``)."""
        self._claim("model backend", prefix, loader, "register it under another prefix")
        self.model_backends[prefix] = ModelBackend(
            prefix,
            loader,
            check,
            identity,
            server=server,
            tensor_parallel=tensor_parallel,
            hub_models=hub_models,
            tokenizer_folder=tokenizer_folder,
            images=images,
            runs_code=runs_code,
            inert_options=frozenset(inert_options),
        )

    def add_exporter(self, name: str, exporter: Exporter) -> None:
        self._claim("export format", name, exporter)
        self.exporters[name] = exporter

    def add_rollup_rule(self, rule: Any) -> None:
        self.rollup_rules.append(rule)

    def add_audit_rule(self, rule: AuditRule) -> None:
        """A check the audit stage runs over every prepared task (``core/audit.py``), beside the built-in ones."""
        if not isinstance(rule, AuditRule):
            raise TypeError(f"add_audit_rule takes a proctor.core.audit.AuditRule, got {type(rule).__name__}")
        self._claim("audit rule", rule.id, rule.check, "give the rule an id of its own")
        self.audit_rules[rule.id] = rule

    def add_metric_resolver(self, resolver: Callable[[str], Any]) -> None:
        """``resolver(name) -> MetricDef | None`` for names a plug-in makes up per task (lm-eval's
        ``metric,filter`` keys): asked, without storing anything, when no registered metric has the name."""
        self.metric_resolvers.append(resolver)

    def add_metric_module(self, module: str, names: Iterable[str] | None = None) -> None:
        """A module whose import registers metrics: with ``names`` (those it registers), imported when one of
        them is first looked up or registered, or all metrics are listed; without, on the first lookup."""
        self.metric_modules.append(module)
        if names is not None:
            self.metric_names[module] = tuple(names)

    def metric_modules_for(self, name: str | None) -> list[str]:
        """The metric modules to import before ``name`` is looked up (None: all of them)."""
        return [
            m for m in self.metric_modules if name is None or m not in self.metric_names or name in self.metric_names[m]
        ]

    # -- lookup
    def ordered_dialects(self) -> list["Dialect[Any]"]:
        """Dialects in the order they are offered a file (``Dialect.order``, then name)."""
        return sorted(self.dialects.values(), key=lambda d: (d.order, d.name))

    def dialect(self, name: str) -> "Dialect[Any] | None":
        """The dialect ``name`` names: its id, or an id it had before (read from an old run folder)."""
        found = self.dialects.get(name)
        return found or next((d for d in self.dialects.values() if name in d.former_names), None)

    def backend_of(self, spec: str) -> ModelBackend | None:
        """The backend a ``--model`` string names (None: no backend has its prefix)."""
        return self.model_backends.get(split_model_spec(spec)[0])
