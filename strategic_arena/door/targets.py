"""Connection targets -- endpoint URLs, results stores -- read once and shown without secrets.

A target reaches us as text a user typed (``--base-url``, ``--db``, an opponent spec) and carries
secrets: ``http://user:KEY@host/v1?api-key=KEY``, ``postgresql://user:PASSWORD@host/db``. Two jobs
live here and nowhere else:

* :func:`shown` renders any target for people -- every message, log line, stored field and
  published file -- with user names, passwords, query values and fragments masked, and a libpq
  keyword string (``host=... password=...``) never shown at all;
* :func:`store_target` reads a ``--db`` value: a PostgreSQL URL (``postgresql://`` or
  ``postgres://``) or a file path; anything else that looks like a connection string (a libpq
  keyword string, another scheme) is refused with a line that names the accepted forms and
  repeats no part of the value. A PostgreSQL URL is taken apart here (:func:`postgres_params`)
  and handed to the driver as separate parameters, so a password holding a raw ``@``, ``/`` or a
  space can never be read by the driver as a host name and printed back in its error.

:func:`scrub` masks a target's secrets in text someone else wrote (a driver's error).
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from strategic_arena.door.errors import Refused
from strategic_arena.door.printable import printable_line

#: The schemes of a PostgreSQL results store.
POSTGRES_SCHEMES = ("postgresql", "postgres")

#: What ``--db`` accepts, for refusals.
STORE_FORMS = (
    "a SQLite file path (results.db) or a PostgreSQL URL "
    "(postgresql://USER@HOST:PORT/DATABASE; the password in PGPASSWORD or ~/.pgpass, or "
    "percent-encoded in the URL)"
)

#: A libpq keyword string starts ``keyword=``: ``host=db password='x'``.
_KEYWORDS = re.compile(r"^\s*[A-Za-z_]+\s*=")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

#: The shortest secret masked inside other text (shorter ones would mask ordinary words).
MIN_SECRET_CHARS = 4


def scheme(target: str | Path) -> str | None:
    """The lower-case scheme of a URL target (``http``, ``postgresql``); ``None`` otherwise."""
    if isinstance(target, Path):
        return None
    found = _SCHEME.match(target)
    return found.group(1).lower() if found else None


def is_postgres(target: str | Path) -> bool:
    """Whether ``target`` names a PostgreSQL store (a ``postgresql://`` URL), not a file."""
    return scheme(target) in POSTGRES_SCHEMES


def is_keyword_string(target: str | Path) -> bool:
    """Whether ``target`` is a libpq keyword string (``host=... password=...``)."""
    return isinstance(target, str) and scheme(target) is None and bool(_KEYWORDS.match(target))


def store_target(value: str | Path) -> str | Path:
    """A ``--db`` value as the store opens it: a PostgreSQL URL (text) or a file path.

    Raises:
        Refused: a libpq keyword string, another scheme, or a PostgreSQL URL that cannot be
            read; the line names the accepted forms and shows no part of the value.
    """
    if isinstance(value, Path):
        return value
    if is_postgres(value):
        postgres_params(value)  # refuses one it cannot take apart
        return value
    if is_keyword_string(value):
        raise Refused(
            f"--db looks like a libpq keyword string, which is not accepted (it is not shown: "
            f"it may hold a password); give {STORE_FORMS}"
        )
    if scheme(value) is not None:
        raise Refused(f"--db has a scheme that is not a results store's; give {STORE_FORMS}")
    return Path(value)


def _authority(url: str) -> tuple[str, str, str]:
    """``(scheme, userinfo, rest)`` of a URL, the userinfo ending at the *last* ``@``.

    A password with a raw ``@`` or ``/`` is then still the password (the standard parser and
    libpq would cut the user information at the first ``@``, or the host at the ``/``, and
    print the remainder as a host name).
    """
    found = _SCHEME.match(url)
    if found is None:
        raise Refused("not a URL")
    rest = url[found.end() :]
    userinfo, at, after = rest.rpartition("@")
    if not at:
        return found.group(1).lower(), "", rest
    return found.group(1).lower(), userinfo, after


def postgres_params(url: str) -> dict[str, str]:
    """A PostgreSQL URL as libpq's connection parameters (``host``, ``user``, ``password`` ...).

    Percent-escapes are decoded, as libpq decodes them; query parameters (``sslmode``) pass
    through. A host list or a socket folder (``host=%2Fvar%2Frun``) stays as libpq reads it.

    Raises:
        Refused: not a URL that can be taken apart (nothing of it is shown).
    """
    _, userinfo, rest = _authority(url)
    parts = urllib.parse.urlsplit("//" + rest)
    params: dict[str, str] = {}
    if userinfo:
        user, colon, password = userinfo.partition(":")
        if user:
            params["user"] = urllib.parse.unquote(user)
        if colon:
            params["password"] = urllib.parse.unquote(password)
    host = parts.netloc
    if host:
        name, colon, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if colon and port and not port.isdigit():
            raise Refused(f"--db: the PostgreSQL URL's port is not a number; give {STORE_FORMS}")
        params["host"] = urllib.parse.unquote((name if colon else host).strip("[]"))
        if colon and port:
            params["port"] = port
    database = urllib.parse.unquote(parts.path.lstrip("/"))
    if database:
        params["dbname"] = database
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        params[key] = value
    return params


def secrets(target: str | Path) -> list[str]:
    """The secrets ``target`` carries: password, user information, query values, fragment."""
    if isinstance(target, Path):
        return []
    if is_keyword_string(target):
        return [value for _, value in _keyword_pairs(target)]
    if scheme(target) is None:
        return []
    _, userinfo, rest = _authority(target)
    parts = urllib.parse.urlsplit("//" + rest)
    found = [userinfo, *userinfo.split(":", 1)] if userinfo else []
    found += [urllib.parse.unquote(item) for item in found]
    found += [value for _, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
    found += [parts.fragment]
    return sorted({item for item in found if item}, key=len, reverse=True)


def _keyword_pairs(text: str) -> list[tuple[str, str]]:
    """``(keyword, value)`` of a libpq keyword string, quoted values unquoted (roughly)."""
    pairs = re.findall(r"([A-Za-z_]+)\s*=\s*('(?:\\.|[^'])*'|\S+)", text)
    return [(key, value.strip("'")) for key, value in pairs]


def shown(target: str | Path, *, keep_query: bool = True) -> str:
    """``target`` for people: every message, log line, stored field and published file.

    * an HTTP(S) or other URL: without user information and fragment, each query value
      ``***`` (``http://host:8000/v1?api-key=***``);
    * a PostgreSQL URL: the same (``postgresql://host:5432/arena``), the user dropped too;
    * a libpq keyword string: ``(a libpq keyword string, not shown)``;
    * a path: as it is.

    ``keep_query=False`` drops the query too (a command line to copy, where ``***`` would be
    taken for a value). Always one printable line: no control character of the input reaches
    a terminal.
    """
    if isinstance(target, Path):
        return printable_line(target)
    if is_keyword_string(target):
        return "(a libpq keyword string, not shown)"
    if scheme(target) is None:
        return printable_line(target)
    name, _, rest = _authority(target)
    parts = urllib.parse.urlsplit("//" + rest)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    masked = "&".join(f"{urllib.parse.quote(key, safe='-_.')}=***" for key, _ in query)
    masked = masked if keep_query else ""
    public = urllib.parse.urlunsplit((name, parts.netloc, parts.path, masked, ""))
    if not parts.netloc:  # a socket (postgresql:///db): keep the two slashes
        public = f"{name}://{parts.path}" + (f"?{masked}" if masked else "")
    return printable_line(public)


def endpoint_url(base_url: str, path: str) -> str:
    """``base_url``'s ``path`` (``models``, ``chat/completions``), as requested.

    The path goes after the base URL's path, before its query (``?api-version=...`` stays a
    query); the userinfo goes (it is sent as a header:
    :func:`strategic_arena.backends.credential_headers`), as does
    a fragment.
    """
    parts = urllib.parse.urlsplit(base_url)
    netloc = parts.hostname or ""
    if ":" in netloc:  # an IPv6 literal
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    route = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urllib.parse.urlunsplit((parts.scheme, netloc, route, parts.query, ""))


def scrub(text: str, target: str | Path) -> str:
    """``text`` (a driver's or library's message) with every secret of ``target`` masked."""
    for secret in secrets(target):
        if len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, "***")
    return text
