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


def split_url_credentials(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without ``user:password@``, the user, the password), both percent-decoded; None where absent."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), unquote(user), unquote(password) if sep else None


def secret_forms(key: str | None, user: str | None = None, password: str | None = None) -> list[str]:
    """Every form in which a server may echo these secrets back (an error body quoting the request's headers):
    as written, percent-encoded, and base64 as in a Basic-auth header (``user:password``, and the key alone),
    longest first so a longer form is masked whole. Empty and very short values are left out: masking
    every ``a`` in a message would hide it, not a secret."""
    import base64
    from urllib.parse import quote

    def b64(text: str) -> list[str]:
        encoded = base64.b64encode(text.encode()).decode()
        return [encoded, encoded.rstrip("=")]

    forms: set[str] = set()
    for secret in (key, password):
        if secret and len(secret) >= 4:
            forms.update({secret, quote(secret, safe=""), *b64(secret), *b64(f"Bearer {secret}")})
    if user is not None and (password or user):
        forms.update(b64(f"{user}:{password or ''}"))
    return sorted((f for f in forms if len(f) >= 4), key=len, reverse=True)
