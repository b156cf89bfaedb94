"""Helpers shared by the guard's tests and by ``claimer.py`` (a child process)."""

from __future__ import annotations

import sqlite3
from typing import Any

from scheduler_emulator.service import FirestoreRunStore, RunStore, SqliteRunStore

#: The schedule time of the run most tests deliver.
SCHEDULE_TIME = "2026-09-24T02:00:00Z"


def scheduler_headers(
    job: str = "nightly", schedule_time: str | None = SCHEDULE_TIME, **extra: str
) -> dict[str, str]:
    """The headers Cloud Scheduler sends with one delivery of a run.

    :param job: ``X-CloudScheduler-JobName`` (a short or a full resource name).
    :param schedule_time: ``X-CloudScheduler-ScheduleTime``; ``None`` leaves it out.
    :param extra: more headers.
    """
    headers = {
        "User-Agent": "Google-Cloud-Scheduler",
        "X-CloudScheduler": "true",
        "X-CloudScheduler-JobName": job,
        **extra,
    }
    if schedule_time is not None:
        headers["X-CloudScheduler-ScheduleTime"] = schedule_time
    return headers


def raw_fields(store: RunStore, key: str) -> dict[str, Any] | None:
    """A run record exactly as the store holds it: SQLite columns or Firestore fields.

    :param store: a :class:`SqliteRunStore` (file) or a :class:`FirestoreRunStore`.
    :param key: the run's key.
    :return: the fields by name, or ``None`` when there is no record.
    """
    if isinstance(store, SqliteRunStore):
        with sqlite3.connect(store.path) as connection:
            connection.row_factory = sqlite3.Row
            row = connection.execute(
                f"SELECT * FROM {store.table} WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else dict(row)
    assert isinstance(store, FirestoreRunStore)
    snapshot = store.client.collection(store.collection).document(key).get()
    return snapshot.to_dict() if snapshot.exists else None


def store_spec(store: RunStore) -> dict[str, str]:
    """What another process needs to open the same store (see ``claimer.py``)."""
    if isinstance(store, SqliteRunStore):
        return {"kind": "sqlite", "path": store.path}
    assert isinstance(store, FirestoreRunStore)
    return {"kind": "firestore", "project": store.client.project, "collection": store.collection}


def open_store(spec: dict[str, str]) -> RunStore:
    """Open the store :func:`store_spec` describes (in another process)."""
    if spec["kind"] == "sqlite":
        return SqliteRunStore(spec["path"])
    from google.cloud import firestore

    client = firestore.Client(project=spec["project"])
    return FirestoreRunStore(client, collection=spec["collection"])
