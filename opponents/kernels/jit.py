"""The numba decorators every kernel and solver uses: ``njit(cache=True)``, typed for mypy.

:func:`jit` for every compiled function; :func:`jit_inline` for the small helpers of a hot loop,
which numba then compiles into each caller (a call between separately compiled functions is
not inlined by LLVM). Compiled code is cached on disk next to each module, so only the first
run in a fresh checkout pays the compile time. numba does not notice when a *called* module
changes (inlined or not): after editing a kernel, delete the ``__pycache__/*.nbi`` / ``*.nbc``
files of the modules that call it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from strategic_arena._extras import require

_F = TypeVar("_F", bound=Callable[..., Any])

numba = require("numba", "the numba kernels and solvers")


def jit(func: _F) -> _F:
    """Compile ``func`` with ``numba.njit(cache=True)``, keeping its Python signature for mypy."""
    return cast(_F, numba.njit(cache=True)(func))


def jit_inline(func: _F) -> _F:
    """:func:`jit` that numba also inlines into every compiled caller (``inline="always"``).

    For the small helpers of a hot loop: a call between separately compiled numba functions
    is not inlined by LLVM and passes every array as a dozen scalars, which cost more than
    the helper's work.
    """
    return cast(_F, numba.njit(cache=True, inline="always")(func))
