"""The console around the results: every log message printed once, and ``--quiet`` for the libraries too.

proctor prints its own log messages (and those of libraries that print none themselves) through the
root logger. Libraries that print their own (huggingface_hub, transformers, datasets add a handler to
their logger) would print each message a second time through the root logger: the root handler
leaves those to them.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import warnings
from typing import TextIO

from proctor.core.notice import NOTICE

FORMAT = "%(levelname)s %(name)s: %(message)s"

# Deprecation notices proctor knows of and that ask nothing of the user (the code that triggers them is
# proctor's or a library's): --quiet hides them, as warnings and as log messages.
KNOWN_DEPRECATIONS = (
    r"`past_key_values`.*deprecated",
    r"`cache_params`.*deprecated",
    r".*deprecated.*Use `cache` instead",
)
# The loggers those notices come from (a logger's filter sees what is logged on it, before any handler;
# the loggers exist before their library loads, so this works before it is imported).
DEPRECATION_LOGGERS = (
    "transformers.utils.generic",
    "transformers.utils.deprecation",
    "transformers.generation.utils",
    "transformers.modeling_utils",
)
# Progress bars of the libraries proctor drives (tqdm reads TQDM_* defaults; the Hugging Face ones
# their own switches); set before they load, so Ray workers started later inherit them too.
QUIET_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}


def _prints_its_own(name: str) -> bool:
    """Whether a logger (or an ancestor it propagates to, short of the root) has a handler that prints."""
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None and logger is not logging.root:
        if any(not isinstance(h, logging.NullHandler) for h in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


class _Once(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _prints_its_own(record.name)


class _NotKnownDeprecation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(re.search(p, message) for p in KNOWN_DEPRECATIONS)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]  # its stream is whatever sys.stderr is now
    """Writes to ``sys.stderr`` as it is when a record comes (tests and redirections swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]  # a property where logging has an attribute: read at each record
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        if record.levelno == logging.WARNING:
            SHOWN.add(record.getMessage())


# The warnings this process's console has printed as log lines: the list at the end of a run leaves them out,
# so a task's warning shows once (as it happened), not again in the summary.
SHOWN: set[str] = set()


class _Formatter(logging.Formatter):
    """Warnings and errors with their level and logger; a notice (``core/notice.py``) as its plain message."""

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno == NOTICE:
            return record.getMessage()
        return super().format(record)


def configure_logging() -> None:
    """Notices, warnings and errors on stderr, each once (idempotent: one root handler of ours)."""
    root = logging.getLogger()
    if any(getattr(h, "_proctor", False) for h in root.handlers):
        return
    handler = _Stderr()
    handler.setFormatter(_Formatter(FORMAT))
    handler.addFilter(_Once())
    handler._proctor = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(NOTICE)


def quiet_libraries() -> None:
    """``--quiet``: no third-party progress bars and no known deprecation notices."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    for pattern in KNOWN_DEPRECATIONS:
        warnings.filterwarnings("ignore", message=pattern, category=FutureWarning)
        warnings.filterwarnings("ignore", message=pattern, category=DeprecationWarning)
    deprecations = _NotKnownDeprecation()
    for name in DEPRECATION_LOGGERS:
        logging.getLogger(name).addFilter(deprecations)
    # libraries already imported read their switches at import time: turn their bars off directly
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]

        disable_progress_bars()
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
