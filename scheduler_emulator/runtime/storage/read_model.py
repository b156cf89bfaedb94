"""What the dashboard, the terminal views and the replay report read: pages and time windows
of the history (:func:`job_rows`, :func:`runs_page`, :func:`attempts_newest`,
:func:`timeline`), read from the store page by page, never the whole history in memory. A
window of a long history reads only its rows, through the store's indexes on
``attempts(start_time)``, ``attempts(job, start_time)``, ``runs(job, nominal)`` and
``skipped(job, nominal)``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import islice
from typing import Any

from ...core.scheduler import Upcoming
from ...domain.attempts import Attempt, earlier_answers, in_flight_at, iso
from ...domain.cloud_run import run_execution
from ...domain.errors import RPC_CODES, InvalidArgument
from ...domain.resources import AppEngineRouting, Job, State
from ...domain.retry import gave_up_because, max_attempts
from ...domain.schedule import parse_schedule
from ...domain.schedule_text import describe_schedule
from ...wire import cloud_run_job_of
from .data_file import Row, attempts_from_rows, read_rows
from .store import AttemptFilter, Store, add_condition, utc_text, window_conditions

#: The states of a run not ended yet.
_GOING = ("retrying", "in progress")
#: Next fire times a job row lists by default, and at most.
DEFAULT_FIRE_TIMES = 5
MAX_FIRE_TIMES = 50
#: How far before a window an attempt may have started and still be drawn in it (the longest
#: attempt deadline is 30 minutes).
WINDOW_LOOKBACK = timedelta(minutes=30)
#: The most attempts one timeline answer carries: a window holding more is refused (trial 176:
#: the whole history's, six at once, took the daemon from 226 to 791 MB).
TIMELINE_ATTEMPTS_MAX = 50_000
_CODE_NAMES = {number: name for name, number in RPC_CODES.items()}
#: Columns of an attempt a timeline draws (the details are fetched when one is clicked).
_TIMELINE_COLUMNS = (
    "id, job, run_id, attempt, start_time, end_time, response_status, code, injected, "
    "nominal, forced, debug_info"
)


def target_text(job: Job, local_url: str | None = None) -> str:
    """The job's target in one line: ``POST http://…``, ``Pub/Sub projects/p/topics/t`` or
    ``App Engine POST /path (service billing, version v2) → http://…/path`` (``default`` when
    no service is routed; ``local_url``: where ``--app-engine-url`` sends it, ``None`` for
    nowhere)."""
    if job.http_target is not None:
        return f"{job.http_target.http_method.name} {job.http_target.uri}"
    if job.pubsub_target is not None:
        return f"Pub/Sub {job.pubsub_target.topic_name}"
    if job.app_engine_http_target is not None:
        target = job.app_engine_http_target
        routing = target.app_engine_routing or AppEngineRouting()
        route = {
            "service": target.service,
            "version": routing.version,
            "instance": routing.instance,
        }
        where = ", ".join(f"{name} {value}" for name, value in route.items() if value)
        sent = local_url or "not sent: no --app-engine-url maps its service"
        return f"App Engine {target.http_method.name} {target.relative_uri} ({where}) → {sent}"
    return "(no target)"


def next_fire_times(
    job: Job, count: int, *, dst_policy: str = "absolute", first: datetime | None = None
) -> list[datetime]:
    """The next ``count`` scheduled times of ``job`` from its next one (UTC); none for a paused
    job or one without a next time. Schedule times only: a pending retry is not one.

    :param first: the job's next scheduled time (the scheduler's, UTC); default the job's
        ``scheduleTime``, which Cloud Scheduler moves to a pending retry's time.
    """
    first = job.schedule_time if first is None else first
    if job.state != State.ENABLED or first is None or count <= 0:
        return []
    schedule = parse_schedule(job.schedule, job.time_zone, dst_policy=dst_policy)
    later = islice(schedule.iter_after(first), count - 1)
    return [first, *(t.astimezone(UTC) for t in later)]


def job_row(
    job: Job,
    fire_times: int,
    *,
    dst_policy: str = "absolute",
    upcoming: Upcoming = Upcoming(),  # noqa: B008 (an immutable tuple)
    last: Attempt | None = None,
    local_url: str | None = None,
) -> dict[str, Any]:
    """One row of the jobs view (the JSON shape of ``GET /_emulator/jobs``).

    :param upcoming: the job's next scheduled time (see :func:`next_fire_times`), when its
        scheduled run's pending retry is due (``nextAttemptTime``), when a forced run's is
        (``forcedRunRetryTime``) and the scheduled time missed while its run went on, which runs
        late once that run ends (``delayedRunTime``).
    :param last: its newest attempt as it reads at the clock's now (:meth:`Attempt.as_of`).
        One in flight gives ``lastAttempt`` its start (which a queued attempt takes when it
        leaves) and ``code`` ``None`` (the job's status is written when the attempt ends); one
        that failed gives ``reason``, why (:attr:`Attempt.reason`: trial 178 found it only in
        the other views), and ``responseStatus``, the target's HTTP status if it answered.
    """
    status, (first, retry, forced_retry, delayed) = job.status, upcoming
    in_flight = last.start_time if last is not None and last.code is None else None
    last_attempt = None
    if job.last_attempt_time is not None:
        code = "OK" if status is None or status.code == 0 else _CODE_NAMES.get(status.code)
        last_attempt = {
            "time": iso(in_flight or job.last_attempt_time),
            "code": None if in_flight else code,
            "message": "" if in_flight or status is None else status.message,
            "reason": "" if last is None else last.reason,
            "responseStatus": None if last is None else last.response_status,
        }
    return {
        "name": job.name,
        "id": job.job_id,
        "description": job.description,  # (trial 141: shown nowhere)
        "schedule": job.schedule,
        "timeZone": job.time_zone or "Etc/UTC",
        "scheduleText": describe_schedule(job.schedule),
        "target": target_text(job, local_url),
        "targetType": job.target_type,
        "state": job.state.name,
        "lastAttempt": last_attempt,
        "nextAttemptTime": iso(retry),
        "forcedRunRetryTime": iso(forced_retry),  # (trial 170: it hid the scheduled run's)
        "delayedRunTime": iso(delayed),  # (trial 149: the views promised what was skipped)
        "nextFireTimes": [
            iso(t) for t in next_fire_times(job, fire_times, dst_policy=dst_policy, first=first)
        ],
    }


def matches(job: Job, name: str, state: str, failed: bool = False) -> bool:
    """Whether ``job`` passes the jobs view's filters: ``name`` a substring of its ID
    (case-insensitive, ``""`` any), ``state`` its state name (``""`` any), and with
    ``failed`` its last attempt failed (its ``status`` is not OK)."""
    return (
        (not name or name.lower() in job.job_id.lower())
        and (not state or job.state.name == state)
        and (not failed or bool(job.status and job.status.code))
    )


def job_rows(
    jobs: list[Job],
    *,
    name: str = "",
    state: str = "",
    failed: bool = False,
    offset: int = 0,
    page_size: int = 50,
    fire_times: int = DEFAULT_FIRE_TIMES,
    dst_policy: str = "absolute",
    upcoming: Callable[[str], Upcoming],
    last: Callable[[str], Attempt | None],
    local_url: Callable[[Job], str | None],
) -> tuple[list[dict[str, Any]], int | None, int]:
    """One page of the jobs view, of the jobs that pass :func:`matches` ``name``, ``state``
    and ``failed``.

    :param jobs: every job, in creation order.
    :param offset: jobs of the filtered list to skip (the page token).
    :param upcoming: what comes next for a job, by full name (the scheduler's), so that a
        pending retry is not listed as a fire time.
    :param last: a job's newest attempt as it reads now (:func:`newest_attempt`), by full name.
    :param local_url: where an App Engine target job's attempts go (:func:`target_text`).
    :return: the rows, the next page's offset (``None`` on the last page), and how many jobs
        pass the filters.
    """
    kept = [job for job in jobs if matches(job, name, state, failed)]
    rows = [
        job_row(
            job,
            fire_times,
            dst_policy=dst_policy,
            upcoming=upcoming(job.name),
            last=last(job.name),
            local_url=local_url(job),
        )
        for job in kept[offset : offset + page_size]
    ]
    following = offset + page_size if offset + page_size < len(kept) else None
    return rows, following, len(kept)


def newest_attempt(store: Store, job: str, now: datetime) -> Attempt | None:
    """The newest attempt of ``job`` (full name) as it reads at ``now`` (:func:`attempts_newest`),
    ``None`` before its first."""
    return next(iter(attempts_newest(store, job=job, page_size=1, now=now)[0]), None)


def attempts_newest(
    store: Store,
    *,
    job: str | None = None,
    start_after: datetime | None = None,
    start_before: datetime | None = None,
    before_id: int | None = None,
    page_size: int = 100,
    failed: bool = False,
    now: datetime,
) -> tuple[list[Attempt], int | None]:
    """One page of attempts, newest first (by id, which follows start order), as they read at
    ``now`` (:meth:`Attempt.as_of`: an end recorded later than ``now`` is not shown yet);
    ``job`` (full name), ``start_after``, ``start_before`` and ``failed`` filter as in
    :meth:`Emulator.attempts_page <scheduler_emulator.Emulator.attempts_page>`.

    :param before_id: only attempts with a smaller id (where the previous page ended).
    :param page_size: 1 to :data:`~scheduler_emulator.runtime._options.ATTEMPTS_PAGE_SIZE_MAX`.
    :raises ValueError: for a page size out of range.
    :return: the attempts and the id to pass as ``before_id`` next (``None`` on the last page).
    """
    where = AttemptFilter(
        job=job, start_after=start_after, start_before=start_before, failed=failed
    )
    page, last = store.attempts_page(where, after_id=before_id, page_size=page_size, newest=True)
    return [a.as_of(now) for a in page], last


def _compact(check: Row, row: Any, now: datetime) -> dict[str, Any]:
    """What a timeline attempt's segment shows (details are one request away) at ``now``."""
    started = check.instant("start_time", row[4])
    ended = check.optional_instant("end_time", row[5])
    masked = in_flight_at(started, ended, now)
    return {
        "id": row[0],
        "attempt": row[3],
        "startTime": iso(started),
        "endTime": None if masked else iso(ended),
        "responseStatus": None if masked else row[6],
        "code": None if masked else row[7],
        "injected": bool(row[8]),
        "debugInfo": "" if masked else row[11],
    }


def _mark_duplicates(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set ``duplicate`` (:func:`earlier_answers`) on each of one run's attempts."""
    answers = earlier_answers((0, a["responseStatus"], a["debugInfo"]) for a in attempts)
    for attempt, answer in zip(attempts, answers, strict=True):
        attempt["duplicate"] = answer is not None
    return attempts


#: The run table's columns :func:`run_state` reads.
_RUN_COLUMNS = (
    "id, job, nominal, forced, finished, next_attempt_at, first_attempt_start, schedule_time, "
    "limits, extra_retry, uncounted"
)
#: The code of a run's newest attempt (``NULL`` for none, or one in flight), in SQL over ``runs``.
_LAST_CODE = (
    "(SELECT a.code FROM attempts a WHERE a.job = runs.job AND a.run_id = runs.id "
    "ORDER BY a.id DESC LIMIT 1)"
)
#: ``runs_page``'s ``state`` filter: SQL over ``runs`` for each value. ``failed``: a run with at
#: least one failed attempt; ``gave-up``: one that ended without success; ``succeeded``: one
#: that ended with one; ``in-progress``: one with an attempt in flight or a retry pending;
#: ``retrying``: one with a retry pending and no attempt in flight (the states of
#: :func:`run_state`).
RUN_FILTERS = {
    "": "",
    "failed": "EXISTS (SELECT 1 FROM attempts a WHERE a.job = runs.job AND a.run_id = runs.id "
    "AND a.code IS NOT NULL AND a.code != 'OK')",
    "gave-up": f"finished = 1 AND {_LAST_CODE} IS NOT 'OK'",
    "succeeded": f"finished = 1 AND {_LAST_CODE} IS 'OK'",
    "in-progress": "finished = 0",
    "retrying": "finished = 0 AND next_attempt_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
    "attempts a WHERE a.job = runs.job AND a.run_id = runs.id AND a.code IS NULL)",
}


def run_state(
    check: Row, row: Any, attempts: list[dict[str, Any]], config: Callable[[str], Job | None]
) -> dict[str, Any]:
    """How one run stands, from its stored record and its attempts: the fields a run has in
    ``GET /_emulator/runs`` and in the timeline besides its attempts.

    The next attempt's time is the one the core's retry decision
    (:func:`~scheduler_emulator.domain.retry.next_attempt_time`) stored on the run; a run that
    ended keeps the ``maxAttempts`` and the limit it gave up on that the core stored as it ended
    (:attr:`Run.limits <scheduler_emulator.domain.attempts.Run.limits>`); a run still going, or
    stored by an earlier release, reads them from the job's retry config
    (:func:`~scheduler_emulator.domain.retry.gave_up_because`).

    :param check: reads the run's row (its file, table and job, for a damaged value).
    :param row: the run's :data:`_RUN_COLUMNS`.
    :param attempts: its compact attempts in start order (as they read now).
    :param config: the job's configuration by full name, ``None`` for a deleted job.
    :return: ``{"state": "succeeded" | "gave up" | "retrying" | "in progress", "gaveUp": the
        limit or ``None``, "nextAttemptTime": RFC 3339 or ``None``, "nextAttempt": its number
        or ``None``, "maxAttempts": the retry count plus one, plus the extra retry the run earned
        (a restart, a lost acknowledgement) and the App Engine 503s it had (uncounted), ``None``
        when the count does not bound the run,
        "scheduleTime": the header value or ``None``, "tries": the attempts made (an injected
        duplicate is not one), "failedAttempts": N}``.
    :raises DamagedRow: for a first attempt start or next attempt time that is not an instant.
    """
    run_id, job_name, _, _, finished, next_at, first_start, schedule_time, limits, extra, free = row
    first_start = check.optional_instant("first_attempt_start", first_start)  # damaged: refused
    job = config(job_name)
    retry = None if job is None else job.retry_config
    # (a restart or a lost ack earned it one more; App Engine 503s are not counted: trial 186)
    most = max_attempts(retry, bool(extra), check.whole("uncounted", free, 0))
    last = attempts[-1] if attempts else None
    tries = len({a["attempt"] for a in attempts})  # an injected duplicate shares its number
    state, gave_up, next_time = "in progress", None, None
    code = None if last is None else last["code"]  # as read at now
    if finished and code is not None and limits is not None:  # as it ended, whatever the
        count, _, reason = check.text("limits", limits).partition("|")  # config became since
        most = int(count) if count.isdigit() else None
        # (an attempt in flight when its job was deleted still completes: OK is a success)
        state, gave_up = ("gave up", reason) if reason and code != "OK" else ("succeeded", None)
    elif finished and code == "OK":
        state = "succeeded"
    elif finished and (last is None or code is not None):  # (else: in flight, its job deleted)
        state = "gave up"
        if retry is not None and last is not None and first_start and last["endTime"]:
            last_end = datetime.fromisoformat(last["endTime"])
            gave_up = gave_up_because(retry, tries - 1, first_start, last_end)
    elif next_at is not None and (last is None or code is not None):
        state, next_time = "retrying", iso(check.instant("next_attempt_at", next_at))
    # a max retry duration: no retry is decided after the first attempt's start + it (213)
    bound = retry.max_retry_duration if retry and first_start else None
    return {
        "state": state,
        "gaveUp": gave_up,
        "nextAttemptTime": next_time,
        "nextAttempt": tries + 1 if next_time else None,
        "tries": tries,
        "maxAttempts": None if most is None else max(most, tries + bool(next_time)),
        "retryUntil": iso(first_start + bound) if bound and state in _GOING else None,
        "scheduleTime": schedule_time,
        "failedAttempts": sum(1 for a in attempts if a["code"] not in (None, "OK")),
    }


def runs_of(
    store: Store, rows: list[Any], now: datetime, config: Callable[[str], Job | None]
) -> list[dict[str, Any]]:
    """Group timeline attempt rows (:data:`_TIMELINE_COLUMNS`, start order) into runs:
    ``{"id", "job", "nominalTime", "forced", "attempts": [...]}`` and :func:`run_state` (one
    query for their stored records), in order of first attempt."""

    def read(row: Any) -> tuple[Any, datetime | None, dict[str, Any]]:
        check = Row(store.path, "attempts", row[1])
        return row, check.optional_instant("nominal", row[9]), _compact(check, row, now)

    runs: dict[int, dict[str, Any]] = {}
    for row, nominal, compact in read_rows(store.path, "attempts", rows, read):
        run = runs.get(row[2])
        if run is None:
            run = runs[row[2]] = {
                "id": row[2],
                "job": row[1],
                "nominalTime": iso(nominal),
                "forced": bool(row[10]),
                "attempts": [],
            }
        run["attempts"].append(compact)
    if not runs:
        return []
    sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE id IN ({', '.join('?' * len(runs))})"
    by_id = {row[0]: row for row in store.query(sql, list(runs))}

    def with_state(pair: tuple[int, dict[str, Any]]) -> dict[str, Any]:
        run, row = pair[1], by_id.get(pair[0])
        _mark_duplicates(run["attempts"])
        if row is not None:
            run.update(run_state(Row(store.path, "runs", row[1]), row, run["attempts"], config))
        return run

    return read_rows(store.path, "runs", list(runs.items()), with_state)


def runs_page(
    store: Store,
    *,
    job: str | None = None,
    after: datetime | None = None,
    before: datetime | None = None,
    state: str = "",
    offset: int = 0,
    page_size: int = 50,
    now: datetime,
    config: Callable[[str], Job | None],
) -> tuple[list[dict[str, Any]], int | None]:
    """One page of runs newest first by when each was due (``nominal``), each with its attempts
    in order (whole ``/_emulator/attempts`` records, ``reason`` included; those ending after
    ``now`` read as in flight; each has ``duplicate``) and its state (:func:`run_state`). Only
    the runs of ``job`` (full name) due from ``after`` to before ``before``, each when given.

    :param state: a key of :data:`RUN_FILTERS` (``""``: every run).
    :param offset: runs to skip (the page token).
    :param config: a job's configuration by full name (its retry config).
    :raises KeyError: for a ``state`` not in :data:`RUN_FILTERS`.
    :return: the runs and the next page's offset (``None`` on the last page).
    """
    clauses, args = window_conditions("nominal", after, before)
    add_condition(clauses, args, "job = ?", job)
    if RUN_FILTERS[state]:
        clauses.append(RUN_FILTERS[state])
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.query(
        f"SELECT {_RUN_COLUMNS} FROM runs{where} ORDER BY nominal DESC, id DESC LIMIT ? OFFSET ?",
        [*args, page_size + 1, offset],
    )

    def read(row: Any) -> dict[str, Any]:
        run_id, run_job, nominal, forced = row[:4]
        check = Row(store.path, "runs", run_job)
        attempt_rows, _ = store.select("attempts", ["job = ?", "run_id = ?"], [run_job, run_id])
        stored = attempts_from_rows(store.path, attempt_rows)
        attempts = _mark_duplicates([a.as_of(now).to_json() for a in stored])
        return {
            "id": run_id,
            "job": run_job,
            "nominalTime": iso(check.instant("nominal", nominal)),
            "forced": bool(forced),
            "finished": bool(row[4]),
            "attempts": attempts,
            **run_state(check, row, attempts, config),
        }

    following = offset + page_size if len(rows) > page_size else None
    return read_rows(store.path, "runs", rows[:page_size], read), following


def _skipped_time(path: str, job: str, row: Any) -> dict[str, Any]:
    nominal = Row(path, "skipped", job).instant("nominal", row[1])
    return {"nominalTime": iso(nominal), "scheduleTime": row[2], "reason": row[3]}


def timeline(
    store: Store,
    jobs: list[str],
    start: datetime,
    end: datetime,
    now: datetime,
    config: Callable[[str], Job | None],
) -> list[dict[str, Any]]:
    """The lanes of a timeline window: for each job (full names, in the order given) its runs
    whose attempts started within the window (or up to :data:`WINDOW_LOOKBACK` before it and
    still going into it) and its skipped times in the window. Attempts whose recorded end is
    later than ``now`` read as in flight; each run has its state (:func:`run_state`: a
    pending retry's time among them).

    :param config: a job's configuration by full name (its retry config).
    :return: ``[{"job", "runs": [...], "skipped": [{"nominalTime", "scheduleTime",
        "reason"}], "failedRuns": N, "gaveUpRuns": N}]``, one per job; the counts are of the
        window's runs; a run of a job that calls the Cloud Run Admin API whose attempt started
        an execution has ``"execution": {"id"}``.
    :raises InvalidArgument: (``start``) when the window holds more than
        :data:`TIMELINE_ATTEMPTS_MAX` attempts of these jobs.
    """
    lanes: list[dict[str, Any]] = []
    first = datetime.min.replace(tzinfo=UTC) + WINDOW_LOOKBACK  # (a window at the calendar's start)
    low = utc_text(max(start, first) - WINDOW_LOOKBACK)
    high, start_text = utc_text(end), utc_text(start)
    marks = ", ".join("?" * len(jobs))
    sql = f"SELECT COUNT(*) FROM attempts WHERE job IN ({marks}) AND start_time >= ? AND "
    [(count,)] = store.query(sql + "start_time < ?", (*jobs, low, high))
    if count > TIMELINE_ATTEMPTS_MAX:
        raise InvalidArgument(
            f"the window {iso(start)} to {iso(end)} holds {count} attempts of these "
            f"{len(jobs)} jobs, more than the {TIMELINE_ATTEMPTS_MAX} a timeline answers: narrow "
            "it (start, end) or ask for fewer lanes (pageSize).",
            field="start",
        )
    for name in jobs:
        rows = store.query(
            f"SELECT {_TIMELINE_COLUMNS} FROM attempts WHERE job = ? AND start_time >= ? "
            "AND start_time < ? AND (start_time >= ? OR end_time IS NULL OR end_time >= ?) "
            "ORDER BY start_time, id",
            (name, low, high, start_text, start_text),
        )
        skipped = store.query(
            "SELECT id, nominal, schedule_time, reason FROM skipped WHERE job = ? "
            "AND nominal >= ? AND nominal < ? ORDER BY nominal",
            (name, start_text, high),
        )
        runs = runs_of(store, rows, now, config)
        job = config(name)
        if job is not None and job.http_target and cloud_run_job_of(job.http_target.uri):
            said = dict(
                store.query(  # (trial 220: the lane read all green, every execution FAILED)
                    "SELECT id, response_excerpt FROM attempts WHERE job = ? AND start_time >= ? "
                    "AND start_time < ? AND code = 'OK'",
                    (name, low, high),
                )
            )
            for run in runs:
                if started := run_execution(said.get(a["id"]) for a in run["attempts"]):
                    run["execution"] = {"id": started}
        lanes.append(
            {
                "job": name,
                "runs": runs,
                "failedRuns": sum(1 for run in runs if run.get("failedAttempts")),
                "gaveUpRuns": sum(1 for run in runs if run.get("state") == "gave up"),
                "skipped": read_rows(
                    store.path, "skipped", skipped, partial(_skipped_time, store.path, name)
                ),
            }
        )
    return lanes


def attempt_by_id(store: Store, attempt_id: int, *, now: datetime) -> Attempt | None:
    """The attempt with this id as it reads at ``now`` (:meth:`Attempt.as_of`), ``None`` when
    there is none (or it was dropped by retention)."""
    found = attempts_from_rows(store.path, store.select("attempts", ["id = ?"], [attempt_id])[0])
    return found[0].as_of(now) if found else None
