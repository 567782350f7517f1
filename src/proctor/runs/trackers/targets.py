"""Where a run is logged: ``wandb``, ``mlflow`` and their options as the command line spells them
(``wandb:project=evals,name=run-1``), checked before a run starts so that a typo fails before any model loads."""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from proctor.core.errors import MissingDependencyError, ProctorError
from proctor.core.names import close_names

# tracker -> (the modules it needs, what pip installs for them); MLflow's tables are written through pandas
LIBRARIES = {"wandb": (("wandb",), "wandb"), "mlflow": (("mlflow", "pandas"), "mlflow-skinny pandas")}

# The options each tracker takes, with what each means (the command's help and docs/trackers.md list them).
OPTIONS: dict[str, dict[str, str]] = {
    "wandb": {
        "project": "the W&B project (default: proctor)",
        "entity": "the W&B entity (user or team) the run is synced to",
        "name": "the run's name (default: the run folder's name)",
        "group": "a W&B run group",
        "job_type": "a W&B job type",
        "tags": "tags, separated by ';'",
        "notes": "a description of the run",
        "dir": "the folder the offline run is written under (default: the run folder)",
    },
    "mlflow": {
        "tracking_uri": "a local file store, file:PATH or a folder (default: $MLFLOW_TRACKING_URI if it is one, "
        "else ./mlruns)",
        "experiment": "the experiment's name, created if new (default: proctor)",
        "name": "the MLflow run's name (default: the run folder's name)",
    },
}


@dataclass(frozen=True)
class Target:
    """One tracker a run is logged to, with its options as given (values are text)."""

    tracker: str
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""  # as the user wrote it, to name it in messages and in the command that logs it again

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.options.get(name, default)


def parse_target(text: str, where: str = "--log-to") -> Target:
    """``TRACKER`` or ``TRACKER:KEY=VALUE,KEY=VALUE``; an unknown tracker or option, or a malformed pair, is an
    error naming ``where`` (the flag) and what it takes."""
    tracker, colon, rest = text.strip().partition(":")
    tracker = tracker.strip().lower()
    if "," in tracker and all(part.strip() in OPTIONS for part in tracker.split(",")):
        raise ProctorError(
            f"{where} {text!r}: one tracker per {where}; give each its own ({where} wandb {where} mlflow)"
        )
    if tracker not in OPTIONS:
        near = close_names(tracker, OPTIONS)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise ProctorError(f"{where} {text!r}: unknown tracker '{tracker}'{hint}; choose wandb or mlflow")
    options: dict[str, str] = {}
    for pair in (p for p in rest.split(",") if p.strip()) if rest.strip() else ():
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ProctorError(f"{where} {text!r}: '{pair}' is not KEY=VALUE (as in {tracker}:{_example(tracker)})")
        if key not in OPTIONS[tracker]:
            near = close_names(key, OPTIONS[tracker])
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ProctorError(
                f"{where} {text!r}: {tracker} takes no option '{key}'{hint}; its options: {', '.join(OPTIONS[tracker])}"
            )
        if key in options:
            raise ProctorError(f"{where} {text!r}: option '{key}' is given twice")
        if not value.strip():
            raise ProctorError(f"{where} {text!r}: option '{key}' has no value")
        options[key] = value.strip()
    if colon and not options:
        raise ProctorError(f"{where} {text!r}: no KEY=VALUE after '{tracker}:' (as in {tracker}:{_example(tracker)})")
    target = Target(tracker, options, text.strip())
    if tracker == "mlflow":
        mlflow_store(target)  # a server URI is refused here, before a run starts
    return target


def _example(tracker: str) -> str:
    return "project=evals,name=run-1" if tracker == "wandb" else "tracking_uri=file:./mlruns,experiment=evals"


def parse_targets(texts: list[str] | tuple[str, ...] | None, where: str = "--log-to") -> list[Target]:
    """Each ``--log-to`` value parsed; a tracker named twice is an error (it would log the run twice)."""
    targets = [parse_target(t, where) for t in texts or ()]
    seen: set[str] = set()
    for target in targets:
        if target.tracker in seen:
            raise ProctorError(f"{where}: {target.tracker} is named twice; give it once, with all its options")
        seen.add(target.tracker)
    return targets


def check_installed(targets: list[Target], purpose: str) -> None:
    """Each tracker's library is installed (looked up, not imported: wandb takes a second to import); else the
    error names what to install, with this Python's pip."""
    for target in targets:
        modules, requirement = LIBRARIES[target.tracker]
        for module in modules:
            if importlib.util.find_spec(module) is None:
                raise MissingDependencyError(module, target.tracker, f"{purpose} {target.tracker}", requirement)


def mlflow_store(target: Target) -> str:
    """The MLflow tracking URI as a ``file:`` URI of an absolute folder. proctor writes only to a local file store:
    a server (http, databricks) or a database URI is refused, from the option or from $MLFLOW_TRACKING_URI."""
    given, source = target.option("tracking_uri"), "tracking_uri"
    if given is None and os.environ.get("MLFLOW_TRACKING_URI"):
        given, source = os.environ["MLFLOW_TRACKING_URI"], "$MLFLOW_TRACKING_URI"
    if given is None:
        given, source = "mlruns", "the default"
    named = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", given)  # a URI's scheme; a folder may hold ':' further on
    scheme = named.group(1).lower() if named else ""
    server = given.lower() in ("databricks", "databricks-uc", "uc")  # MLflow's names of a hosted server
    if server or scheme not in ("", "file") or given.startswith("file://") and not given.startswith("file:///"):
        raise ProctorError(
            f"mlflow: {source} {given!r} is not a local file store; proctor logs to MLflow only as files "
            "(tracking_uri=file:PATH or a folder), never over the network; give tracking_uri=file:./mlruns"
        )
    path = given[len("file:") :] if scheme == "file" else given
    if path.startswith("///"):
        path = path[2:]
    if not path:
        raise ProctorError(f"mlflow: {source} {given!r} names no folder")
    return Path(path).expanduser().resolve().as_uri()
