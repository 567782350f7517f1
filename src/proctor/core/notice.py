"""A notice: a line the console shows without a warning's prefix, for what the user should know but need
not act on ("converting the default model, once", "already complete").

It is a logging level between INFO and WARNING, so the code that says it needs no console of its own, and
the command line's handler (``cli/console.py``) prints it as the plain message; a library's INFO chatter
stays hidden.
"""

from __future__ import annotations

import logging
from typing import Any

NOTICE = 25
logging.addLevelName(NOTICE, "NOTICE")


def notice(log: logging.Logger, message: str, *args: Any) -> None:
    """``message % args`` on the console as a plain line (no level, no logger name)."""
    log.log(NOTICE, message, *args)
