"""A bounded cache of rendered jobs, keyed by the identity of the job's field values.

Jobs are immutable values. The engine builds a fresh :class:`~scheduler_emulator.domain.
resources.Job` for every read, but from the same field objects (the stored configuration,
status, timestamps) until the job changes; a change replaces at least one of them. So a
rendering (REST JSON, a gRPC message) made once is reused by every later read of the unchanged
job, found by the identities of its fields: ListJobs of many jobs then costs a lookup per job,
not a rendering.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

R = TypeVar("R")

#: Renderings kept; past this the cache starts over.
RENDER_CACHE_SIZE = 4096


_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _parts(obj: Any) -> tuple[Any, ...]:
    getter = _GETTERS.get(type(obj))
    if getter is None:
        names = [field.name for field in dataclasses.fields(obj)]
        getter = _GETTERS.setdefault(type(obj), operator.attrgetter(*names))
    return getter(obj)


class RenderCache(Generic[R]):
    """Renderings of frozen dataclass instances, found by the identities (``is``) of their
    field values and a variant key.

    An entry holds references to the field values it was made from, so their identities are
    not reused while it lives. Callers must not mutate what :meth:`get` returns.

    :param size: entries kept before the cache is emptied.
    """

    def __init__(self, size: int = RENDER_CACHE_SIZE) -> None:
        self._size = size
        self._entries: dict[tuple[Hashable, ...], tuple[tuple[Any, ...], R]] = {}
        self._lock = threading.Lock()

    def get(self, obj: Any, variant: Hashable, render: Callable[[], R]) -> R:
        """Return the rendering of ``obj`` (a frozen dataclass) for ``variant``, calling
        ``render`` when none was made from these very field values."""
        parts = _parts(obj)
        key = (*map(id, parts), variant)
        entry = self._entries.get(key)
        if entry is not None and all(map(operator.is_, entry[0], parts)):
            return entry[1]
        value = render()
        with self._lock:
            if len(self._entries) >= self._size:
                self._entries.clear()
            self._entries[key] = (parts, value)
        return value
