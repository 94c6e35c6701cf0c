"""What a message may show of a database URL or DSN: parts parsed out of it, never the text.

A URL can carry a password anywhere a typo puts it (``postgress://app:PW@host``,
``app:PW@host`` without a scheme, a raw ``%`` the driver cannot decode), so no
message quotes the URL, a prefix of it, or a driver's text about it
unfiltered: :func:`masked` rebuilds ``scheme://host:port/db`` from the parts
that parse cleanly (never the user or password), and :func:`scrub` takes the
secrets and every quoted fragment out of a driver's message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

__all__ = ["masked", "plain", "scrub", "url_passwords", "url_secrets"]

_SAFE = re.compile(r"[A-Za-z0-9._\-]{1,64}")
_SAFE_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,19}")
# libpq and PyMySQL quote the piece of the DSN they choke on: "…", '…' or «…».
_QUOTED = re.compile(r"\"[^\"]*\"?|'[^']*'?")


def plain(part: object, *, allow: str = "") -> str:
    """``part`` if it is a plain name (letters, digits, ``._-`` and ``allow``), else ``...``."""
    text = str(part)
    ok = text and len(text) <= 64 and all(c.isascii() and (c.isalnum() or c in "._-" + allow) for c in text)
    return text if ok else "..."


def masked(url: str) -> str:
    """``scheme://host:port/db`` of ``url`` from the parts that parse as plain names ("" if none do).

    Parts that are not plain names (a password that a typo pushed into the
    host or path would not be) are left out, and so are the user and password.
    """
    scheme, sep, _rest = url.partition("://")
    if not sep or not _SAFE_SCHEME.fullmatch(scheme):
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return f"{scheme}://..."
    out = f"{scheme}://"
    if parts.username is not None or parts.password is not None:
        out += "...@"
    out += host if _SAFE.fullmatch(host) else ("..." if host else "")
    if port is not None:
        out += f":{port}"
    db = parts.path.lstrip("/")
    if db:
        out += "/" + (db if _SAFE.fullmatch(db) else "...")
    return out


def url_secrets(url: str) -> list[str]:
    """Strings of ``url`` a message must not show: its password (raw and decoded) and user-info."""
    found: list[str] = []
    _scheme, sep, rest = url.partition("://")
    rest = rest if sep else url
    # The user-info ends at the netloc's last "@" -- or, when the password holds a "/",
    # "?" or "#" that cut the netloc short, at the last "@" of the whole text.
    for candidate in (rest.split("/", 1)[0], rest):
        userinfo, at, _host = candidate.rpartition("@")
        _user, colon, password = userinfo.partition(":")
        if at and colon and password:
            found += [userinfo, password, unquote(password)]
    # key=value form: password=... up to the next blank (quoted values too)
    for m in re.finditer(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", url):
        value = m.group(1)
        found += [value, value.strip("'")]
    return [s for s in found if len(s) >= 1]


def url_passwords(url: str) -> list[str]:
    """The candidate passwords of ``url`` alone (what :func:`url_secrets` finds, without user-info)."""
    _scheme, sep, rest = url.partition("://")
    rest = rest if sep else url
    found = []
    for candidate in (rest.split("/", 1)[0], rest):
        userinfo, at, _host = candidate.rpartition("@")
        _user, colon, password = userinfo.partition(":")
        if at and colon and password:
            found += [password, unquote(password)]
    for m in re.finditer(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", url):
        found += [m.group(1), m.group(1).strip("'")]
    return found


def scrub(text: str, secrets: Iterable[str], *, drop_quoted: bool = False) -> str:
    """``text`` with every secret replaced by ``***``; with ``drop_quoted``, every quoted fragment too."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    if drop_quoted:
        text = _QUOTED.sub('"..."', text)
    return text
