"""The installed ``lm_eval`` package, used as a library for its task files (imported lazily).

proctor reads lm-evaluation-harness task YAMLs with lm-eval's own loader (``include``, ``!function``,
group / tag expansion, ``TaskConfig`` defaults) and builds lm-eval's own ``ConfigurableTask`` objects,
so prompts, few-shot draws, filters and per-sample metrics are lm-eval's by construction. Only the
model calls go through proctor's engine. Two hooks make that safe here:

- tasks are *captured* while a task or group is resolved (no dataset is read): a stand-in for
  ``ConfigurableTask`` records the merged config; the real task is built when a run prepares it;
- ``!function`` hooks outside the installed ``lm_eval/tasks`` folder run only with consent
  (``--trust-task-code``), as proctor's other dialects do for task-folder code.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from proctor.core.errors import MissingDependencyError, TaskDefinitionError
from proctor.dialects.lmeval.task_config import TaskConfig

if TYPE_CHECKING:
    from lm_eval.api.task import ConfigurableTask

PURPOSE = "running lm-evaluation-harness task files"
_LOCK = threading.RLock()


def lm_eval() -> Any:
    """The ``lm_eval`` package, or an install hint (the ``lmeval`` extra)."""
    try:
        import lm_eval as package  # noqa: F401
        import lm_eval.tasks  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("lm_eval", "lmeval", PURPOSE) from exc
    _bound_aliases()
    return package


def _bound_aliases() -> None:
    """lm-eval's YAML loader checks a document's aliases as proctor's do (``core/yaml_bounds.py``): its
    ``_make_loader`` subclasses the module's ``_Base`` for each file, so replacing that class once covers every
    file it reads, ``include``s too. A file it cannot read is reported as its other YAML errors are."""
    from lm_eval.tasks import _yaml_loader

    from proctor.core.yaml_bounds import AliasBound

    base = getattr(_yaml_loader, "_Base", None)
    if isinstance(base, type) and not issubclass(base, AliasBound):
        _yaml_loader._Base = type("AliasBoundBase", (AliasBound, base), {})


def catalogue_root() -> Path:
    """The installed catalogue: ``lm_eval/tasks``."""
    return Path(lm_eval().__file__).resolve().parent / "tasks"


def in_catalogue(path: Path) -> bool:
    root = catalogue_root()
    try:
        Path(path).resolve().relative_to(root)
        return True
    except ValueError:
        return False


@contextlib.contextmanager
def consent(trusted: bool) -> Iterator[None]:
    """``!function`` hooks beside a user's task file run only when trusted; the catalogue's own
    (installed with lm_eval) always do."""
    from lm_eval.tasks import _yaml_loader

    original = _yaml_loader._import_func_in_yml

    def guarded(qual: str, base_dir: Path):
        if in_catalogue(base_dir):
            return original(qual, base_dir)
        module_path = qual.rpartition(".")[0]
        module = Path(base_dir) / (module_path.replace(".", "/") + ".py")  # where lm-eval looks first
        if not trusted:
            raise TaskDefinitionError(
                f"'!function {qual}' runs Python from {module}; pass --trust-task-code to allow "
                "code beside task files (lm_eval's installed catalogue needs no consent)",
                file=base_dir,
                field="!function",
            )
        from proctor.core.user_code import check_installed_module, inside

        if module.exists() and not inside(module, base_dir):  # '..' in the name, or a symlink pointing out
            raise TaskDefinitionError(
                f"'!function {qual}' would run {module.resolve()}, outside the task's folder; "
                "hooks are read from the task's folder only",
                file=base_dir,
                field="!function",
            )
        if not module.exists() and module_path:
            check_installed_module(module_path, Path(base_dir), field="!function")
        return original(qual, base_dir)

    with _LOCK:
        _yaml_loader._import_func_in_yml = guarded
        try:
            yield
        finally:
            _yaml_loader._import_func_in_yml = original


class CapturedTask:
    """What resolving a task leaves behind: its merged config (the real task is built later)."""

    def __init__(self, config: TaskConfig) -> None:
        self.config = config

    @property
    def task_name(self) -> str:
        return str(self.config["task"])


@contextlib.contextmanager
def capturing() -> Iterator[None]:
    """While resolving, lm-eval's factory builds :class:`CapturedTask` look-alikes instead of tasks
    (which would read their datasets); they subclass lm-eval's ``Task`` so groups accept them."""
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks import _factory

    class Captured(ConfigurableTask):  # only __init__ runs: nothing of the real class is used
        def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config=None) -> None:  # noqa: D401
            self.captured = CapturedTask(dict(config or {}))

        @property
        def task_name(self) -> str:  # type: ignore[override]
            return self.captured.task_name

    original = _factory.ConfigurableTask
    with _LOCK:
        _factory.ConfigurableTask = Captured
        try:
            yield
        finally:
            _factory.ConfigurableTask = original


def build_task(config: TaskConfig) -> ConfigurableTask:
    """lm-eval's own task object for a captured config (reads its dataset through ``datasets``)."""
    from lm_eval.api.task import ConfigurableTask

    return ConfigurableTask(config=dict(config))


def _template_field(template: str, config: object, prefix: str = "") -> str | None:
    """The config key (dotted) whose value is ``template``: where a refused template is written."""
    if isinstance(config, dict):
        for key, value in config.items():
            if value == template:
                return f"{prefix}{key}"
            found = _template_field(template, value, f"{prefix}{key}.")
            if found:
                return found
    return None


@contextlib.contextmanager
def compiled_templates(config: TaskConfig | None = None, source: Path | None = None) -> Iterator[None]:
    """lm-eval compiles a Jinja template for every document (``utils.apply_template``); while proctor
    builds and scores a task, each template string is compiled once, in Jinja's immutable sandbox with
    lm-eval's own settings and filters, and rendered as before (same text; 300 ARC questions: 5.6 s of
    compiling become milliseconds). A template that reaches outside the sandbox (Python internals,
    changing the document) is an error naming ``source`` (the task file) and the key of ``config`` that
    holds it."""
    import functools

    from jinja2.sandbox import SecurityError
    from lm_eval import utils

    from proctor.core import template_bounds as bounds
    from proctor.core.templates import BoundedSandbox

    original = utils.apply_template
    sandbox = BoundedSandbox(  # the bounds of proctor's own templates: a runaway template stops
        loader=utils.env.loader,
        undefined=utils.env.undefined,
        keep_trailing_newline=utils.env.keep_trailing_newline,
    )
    sandbox.filters.update(utils.env.filters)  # lm-eval's regex_replace and any it adds
    if sandbox.filters.get("regex_replace") is utils.regex_replace:  # lm-eval's re.sub, bounded in time
        sandbox.filters["regex_replace"] = lambda string, pattern, repl, count=0: bounds.bounded_sub(
            pattern, repl, string, count
        )
    compile_once = functools.lru_cache(maxsize=4096)(sandbox.from_string)

    def apply_template(template: str, doc: dict) -> str:
        try:
            bounds.start_render()
            return compile_once(template).render(**doc)
        except SecurityError as exc:
            field = _template_field(template, config) or "a template"
            raise TaskDefinitionError(
                f"the template '{field}' reaches outside its sandbox ({str(exc).rstrip('.')}): "
                "templates may read the document's fields and call filters, not Python internals",
                file=source,
                field=field,
            ) from None
        except (bounds.TemplateBound, RecursionError) as exc:
            field = _template_field(template, config) or "a template"
            what = str(exc) if isinstance(exc, bounds.TemplateBound) else "calls itself too deeply"
            raise TaskDefinitionError(
                f"the template '{field}' stopped: it {what}; a template must not loop or grow without bound",
                file=source,
                field=field,
            ) from None

    with _LOCK:
        utils.apply_template = apply_template
        try:
            yield
        finally:
            utils.apply_template = original
