"""numba-compiled kernels: one decorator, one on-disk cache.

numba's compiled functions go to the user's cache, not beside their module (numba's default:
the installed package's ``__pycache__``, read-only or shared in a real install). The variable
is set before numba reads its config (also in processes this one starts), and in numba's
config in case it was imported already; ``NUMBA_CACHE_DIR`` set by the user wins.
"""
from __future__ import annotations

import os
from collections.abc import Callable

from focuscrawl.resources import user_cache_dir

os.environ.setdefault("NUMBA_CACHE_DIR", str(user_cache_dir() / "numba"))

import numba  # noqa: E402

numba.config.CACHE_DIR = numba.config.CACHE_DIR or os.environ["NUMBA_CACHE_DIR"]


def jit(func: Callable) -> Callable:
    """numba-compile ``func``, cached on disk in ``NUMBA_CACHE_DIR`` (above) when numba can
    write there; when it cannot (``cache=True`` raises at decoration: a zipped scrapyd egg)
    it compiles once per process instead, at its first call. Callers load theirs before the
    first call that needs them (``load_compiled_decision`` with a topic's classifier,
    ``compiled_query_tables`` with a near-duplicate index's first sorted tables)."""
    try:
        return numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:
        return numba.njit(nogil=True)(func)
