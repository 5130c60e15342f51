"""Whether the Hugging Face hub can be reached, asked once, and the hub libraries' offline mode.

``datasets`` and ``huggingface_hub`` retry every request when the hub does not answer (five
retries per file, a backoff of up to 8 s), so on a machine without network ``transfer fetch``
spent minutes before each benchmark's one-line message. :func:`hub_unreachable` asks once,
within :data:`CHECK_SECONDS`, whether a TCP connection to the hub opens -- to ``HF_ENDPOINT``
when it is set (the libraries' own variable, as they read it), through the proxy the
environment names for it when one applies -- and :func:`go_offline` then turns on the
libraries' offline mode for this process (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``), so they
read only their local cache and fail at once where it holds nothing.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import urllib.request
from urllib.parse import urlsplit

from strategic_arena.door import printable_line

__all__ = ["CHECK_SECONDS", "HUB", "go_offline", "hub_unreachable", "offline_mode"]

#: The hub when ``HF_ENDPOINT`` names none.
HUB = "https://huggingface.co"

#: How long the one check waits for the hub (name lookup and connection together).
CHECK_SECONDS = 3.0

_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})
_DEFAULT_PORTS = {"https": 443, "http": 80}


def offline_mode() -> bool:
    """Whether the user turned on the libraries' offline mode (``HF_HUB_OFFLINE=1`` ...)."""
    return any(os.environ.get(name, "").upper() in _TRUE for name in _OFFLINE_VARIABLES)


def _address(endpoint: str) -> tuple[str, int, str]:
    """``(host, port, what)``: where a request to ``endpoint`` connects first, in words."""
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 443)
    what = f"the hub at {printable_line(host)}:{port}"
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass(host):
        through = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        # the proxy's address may carry a password: it is not shown
        proxy_port = through.port or _DEFAULT_PORTS.get(through.scheme, 80)
        return through.hostname or "", proxy_port, f"the proxy the environment names for {what}"
    return host, port, what


def _connect(host: str, port: int, timeout_s: float, failure: list[str]) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            failure.clear()
    except OSError as error:
        failure[:] = [error.strerror or type(error).__name__]


def hub_unreachable(endpoint: str | None = None, timeout_s: float = CHECK_SECONDS) -> str | None:
    """Why the hub cannot be reached (one line), or ``None`` when a connection to it opens.

    Args:
        endpoint: the hub's URL (default: ``HF_ENDPOINT``, else :data:`HUB`).
        timeout_s: how long to wait, the name lookup included (which a socket's own timeout
            does not bound: it runs in a thread not waited for past ``timeout_s``).
    """
    url = endpoint or os.environ.get("HF_ENDPOINT") or HUB
    host, port, what = _address(url)
    if not host:
        return f"{what} has no host name"
    failure = [f"no answer within {timeout_s:g} s"]
    check = threading.Thread(
        target=_connect, args=(host, port, timeout_s, failure), name="hub-check", daemon=True
    )
    check.start()
    check.join(timeout_s)
    if failure:  # still the first line when the thread has not answered in time
        return f"{what} cannot be reached ({printable_line(failure[0], 100)})"
    return None


def go_offline() -> None:
    """Turn on the hub libraries' offline mode for the rest of this process.

    The variables are read when the libraries are imported; where one already is, its module
    constant is set too, so the mode holds either way.
    """
    for name in _OFFLINE_VARIABLES:
        os.environ[name] = "1"
    for module, names in (
        ("huggingface_hub.constants", ("HF_HUB_OFFLINE",)),
        ("datasets.config", ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")),
    ):
        loaded = sys.modules.get(module)
        for name in names if loaded is not None else ():
            setattr(loaded, name, True)
