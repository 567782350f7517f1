"""Credentials written inside a URL (``https://user:KEY@host``) never reach a run folder, a report or the console."""

from __future__ import annotations

import re
from typing import Sequence

# scheme://userinfo@ — userinfo runs to the last '@' before the path (a password may hold an unescaped '@');
# no '/', whitespace or quote in it
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/\s'\"]+)@")


def mask_url_credentials(text: str) -> str:
    """``text`` with every URL's password (``user:***@``), or a bare token (``***@``), masked."""

    def mask(match: re.Match[str]) -> str:
        user, sep, _ = match.group("userinfo").partition(":")
        return f"{match.group('scheme')}{user}:***@" if sep else f"{match.group('scheme')}***@"

    return _USERINFO.sub(mask, text)


def masked_command(command: Sequence[str] | None) -> list[str] | None:
    return [mask_url_credentials(str(part)) for part in command] if command is not None else None
