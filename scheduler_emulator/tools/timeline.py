"""Render attempt timelines and expectation results as plain, aligned text.

Pure functions of recorded data (no clock, no I/O), so the same attempts always render to the
same bytes. The attempt timeline has one row per attempt, in start order::

    TIME                  JOB      RUN (ScheduleTime)    TRY  INJ  HTTP  CODE         DETAIL
    2026-09-24T02:00:00Z  nightly  2026-09-24T02:00:00Z    1  *       -  UNAVAILABLE  injected…
    2026-09-24T02:00:05Z  nightly  2026-09-24T02:00:00Z    2        200  OK           duplicat…

``INJ`` marks an attempt fault injection added or altered. ``DETAIL`` is a failed attempt's
reason (:func:`~scheduler_emulator.domain.attempts.failure_reason`, the text every surface
shows: an injected fault names itself first), else its debug text shortened; a 2xx for a run
the target had already answered 2xx (even if that answer was lost or came after the deadline)
reads ``duplicate: …``: a deduplicating target skipped the work (the pattern of Google's
"Deduplicate job requests" page), a naive one did it again.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from itertools import zip_longest
from typing import IO
from urllib.parse import urlsplit

from ..domain.attempts import (
    DUPLICATE_NOTE,
    Attempt,
    answer_text,
    earlier_answers,
    iso,
)
from ..domain.cloud_run import started_execution
from ..domain.errors import cut_words
from ..wire import is_cloud_run_host

__all__ = [
    "IN_FLIGHT",
    "DETAIL_WIDTH",
    "MIN_LAST_WIDTH",
    "TIMELINE_HEADERS",
    "attempt_cells",
    "marks",
    "notes",
    "render_table",
    "render_timeline",
    "shorten",
    "timeline_rows",
]

#: What the terminal views show for an attempt whose target has not answered yet.
IN_FLIGHT = "(in flight)"

TIMELINE_HEADERS = ("TIME", "JOB", "RUN (ScheduleTime)", "TRY", "INJ", "HTTP", "CODE", "DETAIL")
_RIGHT = {"TRY", "HTTP", "TOOK", "#", "GAP", "WAIT"}
_ORIGINAL = re.compile(r"\.? ?Original HTTP response code number = \d{3}")
DETAIL_WIDTH = 90
#: The narrowest a wrapped last column gets (:func:`render_table`'s ``width``).
MIN_LAST_WIDTH = 24
#: The narrowest a wrapped ``JOB`` column gets, once the last column is at its narrowest.
MIN_JOB_WIDTH = 12


def plural(n: int, noun: str) -> str:
    """``"1 job"``, ``"2 jobs"``: a count and its noun, with an ``s`` unless it is 1."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


class _Wrapper(textwrap.TextWrapper):
    """Wraps at spaces; a word longer than a line also after ``,`` ``:`` ``;`` ``&`` ``?``
    ``=`` ``-`` ``_`` (not before ``/``, so ``https://`` stays whole): a reason quoting compact
    JSON or a URL wraps between its fields, and a code such as
    ``URL_UNREACHABLE-UNREACHABLE_CONNECTION_ERROR`` between its words, not in the middle of a
    name or a number; a time, a flag or ``HOST=127.0.0.1:8085`` that fits stays whole."""

    wordsep_simple_re = re.compile(r"(\s+|(?<=[,:;&?=_-])(?=[^\s/]))")

    def _split(self, text: str) -> list[str]:
        pieces = (
            self.wordsep_simple_re.split(word) if len(word) > self.width else [word]
            for word in re.split(r"(\s+)", text)
        )
        return [piece for split in pieces for piece in split if piece]


def render_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    width: int | None = None,
    paint: Callable[[str, str], str] | None = None,
) -> list[str]:
    """Align ``rows`` under ``headers``: two spaces between columns, numbers right-aligned,
    no trailing spaces.

    >>> render_table(["A", "HTTP"], [["x", "200"], ["longer", "-"]])
    ['A       HTTP', 'x        200', 'longer     -']
    >>> render_table(["A", "WHY"], [["x", "a reason longer than twenty-four characters"]], width=20)
    ['A  WHY', 'x  a reason longer than', '   twenty-four characters']

    :param headers: column titles; ``#``, ``TRY``, ``HTTP``, ``GAP`` and ``WAIT`` are
        right-aligned.
    :param rows: cells as strings, one list per row, as many as ``headers``.
    :param width: the longest line in characters: the last column wraps onto continuation
        lines under it to fit (never narrower than :data:`MIN_LAST_WIDTH` nor a word of it up
        to 32 characters long, such as a timestamp with its offset), then ``SCHEDULE`` (a
        schedule of up to 24 characters, a cron one, is kept whole), ``LAST``, ``NEXT``,
        ``EXIT CODES`` and ``SCHEDULED`` at their spaces, then a ``JOB`` column (never narrower than
        :data:`MIN_JOB_WIDTH`, its header nor a word of its IDs), at spaces
        or after JSON's and URLs' punctuation and a name's ``-`` and ``_`` (:class:`_Wrapper`); a
        table of wide cells may still be wider; ``None``: one line per row.
    :param paint: ``paint(header, padded cell)`` → the cell as written (terminal colours, on
        a row's first line); alignment is measured before painting.
    :return: the lines, header first.
    """
    table = [list(headers), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    if width is not None:  # narrow the last column, then a JOB one, by what is over
        last = len(widths) - 1  # (a word of it up to 32 long, a timestamp, is kept whole)
        words = [min(len(word), 32) for row in table[1:] for word in row[last].split()]
        floors = {last: max([MIN_LAST_WIDTH, *words])}
        for i, header in sorted(enumerate(headers[:-1]), key=lambda c: c[1].endswith("JOB")):
            if header == "SCHEDULE":  # whole up to 24 (``0 6 1 1 *``), longer at its spaces
                schedules = (row[i] for row in table[1:])
                whole = (len(c) if len(c) <= 24 else max(map(len, c.split())) for c in schedules)
                floors[i] = max([len(header), *whole])
            elif header in ("LAST", "NEXT", "EXIT CODES", "SCHEDULED"):  # at spaces, before a
                # job's ID wraps (trial 186: jobs --failed's NEXT, before REASON, made a
                # 170-column table; trial 204: executions cut broken-trigger for its EXIT CODES)
                floors[i] = max([len(header), *(len(w) for r in table[1:] for w in r[i].split())])
            elif header.endswith("JOB"):  # never narrower than its header, nor a piece of an ID
                pieces = (p for row in table[1:] for p in _Wrapper.wordsep_simple_re.split(row[i]))
                floors[i] = max([MIN_JOB_WIDTH, len(header), *map(len, pieces)])
        for i, floor in floors.items():
            over = sum(widths) + 2 * (len(widths) - 1) - width
            widths[i] -= max(0, min(over, widths[i] - floor))
    lines = []
    for number, row in enumerate(table):
        parts = [
            [cell] if len(cell) <= w else _Wrapper(w, break_on_hyphens=False).wrap(cell) or [""]
            for cell, w in zip(row, widths, strict=True)
        ]
        for depth, texts in enumerate(zip_longest(*parts, fillvalue="")):
            cells = [
                text.rjust(w) if header in _RIGHT else text.ljust(w)
                for header, text, w in zip(headers, texts, widths, strict=True)
            ]
            if paint is not None and number and not depth:
                cells = [paint(header, cell) for header, cell in zip(headers, cells, strict=True)]
            lines.append("  ".join(cells).rstrip())
    return lines


def shorten(debug_info: str, width: int = DETAIL_WIDTH) -> str:
    """Shorten an attempt's debug text for the DETAIL column.

    :param debug_info: the attempt's ``debugInfo``.
    :param width: the longest result, in characters.
    :return: the text without what the HTTP column already says (nothing for a plain 2xx).
    """
    text = debug_info or ""
    if "Injected: " in text:
        text = text.split("Injected: ", 1)[1]
    text = text.replace(DUPLICATE_NOTE, "injected duplicate delivery; ")
    text = text.replace("Injected delay: ", "injected delay: ")  # (a 2xx's: trial 133)
    text = text.replace("answer counted. ", "answer counted; ")
    text = text.replace("The target's late answer: ", "its late answer: ")
    text = re.sub(
        r"answer: URL_CRAWLED\. Original HTTP response code number = (\d{3})", r"answer: \1", text
    )
    text = _ORIGINAL.sub("", text)
    text = text.replace("URL_CRAWLED", "").strip(" ;.")
    return cut_words(text, width)


def _dedup_key(attempt: Attempt) -> tuple[str, str] | None:
    """(job, ScheduleTime) when the attempt sent the header to a service (not a Pub/Sub
    publish, nor a call of the Cloud Run Admin API, whose tasks never see it), else ``None``."""
    url = urlsplit(str(attempt.request.get("url", "")))
    if attempt.schedule_time is None or not url.scheme or is_cloud_run_host(url.hostname or ""):
        return None
    return attempt.job, attempt.schedule_time


def duplicate_notes(attempts: Sequence[Attempt]) -> list[str]:
    """For each attempt, ``duplicate: the target already answered 200 to attempt 1 of this
    run`` for a 2xx to a run the target had already answered 2xx among ``attempts``
    (:func:`~scheduler_emulator.domain.attempts.earlier_answers`, the rule every surface
    flags); else, for a 2xx to a run that sent the ScheduleTime of an earlier run answered 2xx
    (a forced run sends the job's next scheduled time), ``same ScheduleTime as run 4 (forced),
    which the target answered 200: a target deduplicating by it skips this run``; else ``""``.
    A note ends with the attempt's answer when it differs from the earlier one's (``; this
    time it answered: Already completed by an earlier delivery…``, the run-once guard's),
    when the earlier one's was kept (a late answer's body is not).

    :param attempts: in start order.
    """
    per_run = earlier_answers(
        ((a.job, a.run_id), a.response_status, a.debug_info) for a in attempts
    )
    per_time = earlier_answers(
        (_dedup_key(a) or (a.job, a.run_id), a.response_status, a.debug_info) for a in attempts
    )
    out = []
    for attempt, same_run, same_time in zip(attempts, per_run, per_time, strict=True):
        note, answered = "", None
        if same_run is not None:
            status, position = same_run
            answered = attempts[position]  # (trial 120: a copy's 200 read as its original's)
            copy = "'s injected copy" if answered.copy else ""
            note = f"duplicate: the target already answered {status} to attempt "
            note += f"{answered.attempt}{copy} of this run"
            note += " (injected duplicate delivery)" if attempt.copy else ""
        elif same_time is not None:
            status, position = same_time
            answered = attempts[position]
            run = f"run {answered.run_id}{' (forced)' if answered.forced else ''}"
            note = f"same ScheduleTime as {run}, which the target answered {status}: a target "
            note += "deduplicating by it skips this run"
        # (trial 105: a guard's no-op read as work done twice; trial 120: a late answer, whose
        # body is not kept, read as another answer; trial 144: "it answered otherwise" with a 200)
        if answered and _kept(answered) and (said := _said(attempt)) != _said(answered):
            if started := started_execution(attempt.response_excerpt):  # (216: not its JSON)
                note += f"; this time it started execution {started}"
            else:
                note += f"; this time it answered: {said or '(nothing)'}"
        out.append(note)
    return out


def _kept(attempt: Attempt) -> bool:
    """Whether ``attempt``'s answer was kept: not one its record only names (a late answer).
    A lost ack keeps its body, an empty one too (trial 129: a lost 204's was not compared)."""
    lost = "but the response was lost" in attempt.debug_info
    return attempt.response_status is not None or bool(attempt.response_excerpt) or lost


def _said(attempt: Attempt) -> str:
    return " ".join(answer_text(attempt.response_excerpt).split())


def notes(attempts: Sequence[Attempt]) -> list[str]:
    """The DETAIL text of each attempt (see the module docstring).

    :param attempts: in start order.
    :return: one text per attempt, in the same order.
    """
    return [
        duplicate or attempt.reason or shorten(attempt.debug_info)
        for attempt, duplicate in zip(attempts, duplicate_notes(attempts), strict=True)
    ]


def timeline_rows(attempts: Sequence[Attempt]) -> list[list[str]]:
    """The timeline's cells.

    :param attempts: in start order.
    :return: one row of :data:`TIMELINE_HEADERS` cells per attempt.
    """
    return [
        [*attempt_cells(attempt), note]
        for attempt, note in zip(attempts, notes(attempts), strict=True)
    ]


def attempt_cells(attempt: Attempt) -> list[str]:
    """The cells an attempt shows in the timeline; the ``attempts`` table shows them with its
    own SCHEDULED cell in place of the run's.

    :return: ``[start time, job id, run ("(none)" or the schedule time, plus " forced"),
        attempt number, "*" when injected, HTTP status or "-", code or "(in flight)"]``.
    """
    run = attempt.sent_schedule_time or "(none)"
    if attempt.forced:
        run += " forced"
    return [
        iso(attempt.start_time) or "",
        attempt.job_id,
        run,
        str(attempt.attempt),
        "*" if attempt.injected else "",
        "-" if attempt.response_status is None else str(attempt.response_status),
        attempt.code or IN_FLIGHT,
    ]


def render_timeline(attempts: Sequence[Attempt]) -> list[str]:
    """The aligned attempt timeline.

    :param attempts: in start order.
    :return: the lines, header included; ``["(no attempts)"]`` when there are none.
    """
    if not attempts:
        return ["(no attempts)"]
    return render_table(TIMELINE_HEADERS, timeline_rows(attempts))


def marks(stream: IO[str]) -> tuple[str, str]:
    """The marks of a met and an unmet expectation.

    :param stream: where they will be written.
    :return: ``("✓", "✗")``, or ``("ok", "FAIL")`` when ``stream`` cannot encode them.
    """
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        "✓✗".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "ok", "FAIL"
    return "✓", "✗"
