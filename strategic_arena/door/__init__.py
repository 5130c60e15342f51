"""The door: the one place where what a user, a file or an endpoint hands us is checked.

Everything that reaches the package from outside is hostile until it has passed here, and
nothing of it is opened, decoded or printed anywhere else:

* :mod:`.files`: every file a user, a config or a checkpoint names -- regular files only, no
  link as the file itself, optionally confined to a folder, a size cap per kind, UTF-8, JSON
  with a depth bound (:func:`read_text`, :func:`read_json`, :func:`read_json_lines`), gzip
  inflated within the cap (:func:`read_gzip`);
* :mod:`.json_data`: every JSON text from a file, an endpoint, a store or a command line --
  bounded depth, finite numbers (:func:`decode`);
* :mod:`.targets`: every connection target -- endpoint URLs, ``--db`` values -- read once
  (:func:`store_target`, :func:`postgres_params`) and shown without secrets (:func:`shown`,
  :func:`scrub`);
* :mod:`.printable`: every text from outside made safe for a terminal (:func:`printable`);
* :mod:`.logs`: every log line, the libraries' included, escaped and masked (:func:`guard_logs`).

The door is the bottom layer: it imports nothing else of the package. ``tests/test_door.py``
keeps it the only door: it fails on a module elsewhere that opens a file for reading, decodes
JSON or formats a URL's parts on its own.
"""

from strategic_arena.door.errors import Refused
from strategic_arena.door.files import (
    SIZE_CAPS,
    decode_yaml,
    describe,
    read_bytes,
    read_gzip,
    read_json,
    read_json_lines,
    read_text,
    read_yaml,
    tail_text,
)
from strategic_arena.door.json_data import MAX_DEPTH, decode
from strategic_arena.door.logs import add_secret, guard_logs
from strategic_arena.door.printable import printable, printable_line
from strategic_arena.door.targets import (
    endpoint_url,
    is_postgres,
    postgres_params,
    scrub,
    secrets,
    shown,
    store_target,
)

__all__ = [
    "MAX_DEPTH",
    "SIZE_CAPS",
    "Refused",
    "add_secret",
    "decode",
    "decode_yaml",
    "describe",
    "endpoint_url",
    "guard_logs",
    "is_postgres",
    "postgres_params",
    "printable",
    "printable_line",
    "read_bytes",
    "read_gzip",
    "read_json",
    "read_json_lines",
    "read_text",
    "read_yaml",
    "scrub",
    "secrets",
    "shown",
    "store_target",
    "tail_text",
]
