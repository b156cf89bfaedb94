"""``replay SCENARIO --report FILE``: one self-contained HTML page of a scenario run.

The page holds everything it shows (no network, no other file): the dashboard's style sheet and
timeline drawing code (:mod:`~scheduler_emulator.server.dashboard`, inlined), the run's attempts
as JSON, the attempt table of the terminal report with each duplicate delivery marked, and the
expectations met or unmet. Clicking an attempt on the timeline shows its record, clicking a
run's bar the run (its attempts, the waits between them, how it ended); Esc or ✕ closes the
panel.
"""

from __future__ import annotations

import html
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..domain.attempts import Attempt, iso
from ..domain.codec import format_duration
from ..domain.resources import Job
from ..server.dashboard import read_asset
from .scenario import ScenarioRun
from .timeline import TIMELINE_HEADERS, plural, timeline_rows
from .views import EXECUTION_HEADERS, execution_rows

__all__ = [
    "report_html",
    "timeline_data",
    "write_report",
]

#: The page's own script: draw the timeline from the embedded data, show a clicked attempt or
#: run in the side panel (closed by Esc or ✕, placed under the header).
_PAGE_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var TL = window.SchedulerTimeline;
  var $ = function (id) { return document.getElementById(id); };
  var open = TL.panel($("details"), $("details-title"), $("details-close"));
  function showAttempt(a, run, lane) {
    open(a.job.split("/").pop() + " · run " + a.runId + " · attempt " + a.attempt);
    var body = $("details-body"), id = TL.executionId(a);
    TL.details(body, a, lane && lane.timeZone);
    if (id && data.executions[id]) {  /* what its execution did, as the dashboard shows it */
      var section = document.createElement("section");
      section.setAttribute("data-testid", "detail-execution");
      body.insertBefore(section, body.querySelector("h3"));
      TL.execution(section, data.executions[id], id, null);
    }
  }
  TL.legend($("legend"));
  TL.draw($("timeline"), data.timeline, {  /* to the page's width, as the dashboard's */
    onAttempt: showAttempt,
    onRun: function (run, lane) {
      open(lane.id + " · run " + run.id);
      TL.runView($("details-body"), run, lane, function (a) { showAttempt(a, run, lane); });
    }
  });
})();
"""

_PAGE_STYLE = """
.report { max-width: 1220px; }
.report h2 { font-size: 15px; margin: 22px 0 8px; }
.report table.attempts { border-collapse: collapse; background: #fff; border: 1px solid var(--line);
  font-size: 12.5px; font-variant-numeric: tabular-nums; }
.report table.attempts th, .report table.attempts td { padding: 4px 6px; text-align: left;
  border-bottom: 1px solid var(--line); white-space: nowrap; }
.report table.attempts td.detail { white-space: normal; min-width: 16em; }
.report table.attempts td.when, .report table.attempts th { white-space: normal; }
.report table.attempts td.when span { white-space: nowrap; }
/* (a wide window keeps an instant on one line: Chromium breaks at <wbr> under nowrap too) */
@media (min-width: 1000px) { .report table.attempts td.when wbr { display: none; } }
.report .table-scroll { overflow-x: auto; }
.report tr.failed td { background: #fdecec; }
/* a duplicate may well be a success (a guard's "already completed": trial 222): not red */
.report tr.duplicate td { background: #f3ecf8; }
.report .met { color: var(--ok); font-weight: 600; }
.report .unmet { color: var(--http); font-weight: 600; }
.report ul { padding-left: 18px; }
"""


def timeline_data(run: ScenarioRun) -> dict[str, Any]:
    """The run's attempts in the shape of ``GET /_emulator/timeline`` (full attempt records,
    ``duplicate`` set on a delivery the target had already answered 2xx for that run; each run
    with its state as the scenario's emulator recorded it, and each lane its failed-run
    counts and its job's next scheduled run after the end, ``nextFireTimes``, drawn at the
    window's edge when it is after it)."""
    duplicate = {
        id(attempt): row[-1].startswith("duplicate")
        for attempt, row in zip(run.attempts, timeline_rows(run.attempts), strict=True)
    }
    lanes: dict[str, dict[str, Any]] = {}
    states = {
        (record["job"], record["id"]): {k: v for k, v in record.items() if k != "attempts"}
        for record in run.runs
    }
    for job in run.scenario.jobs:
        lanes[job.name] = {"job": job.name, "id": job.job_id, "state": "ENABLED", "runs": [],
                           "skipped": [], "timeZone": job.time_zone or "Etc/UTC"}  # fmt: skip
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    for attempt in run.attempts:
        lane = lanes.setdefault(
            attempt.job,
            {"job": attempt.job, "id": attempt.job_id, "state": "ENABLED", "runs": [],
             "skipped": []},
        )  # fmt: skip
        key = (attempt.job, attempt.run_id)
        if key not in runs:
            runs[key] = {
                "id": attempt.run_id,
                "job": attempt.job,
                "nominalTime": iso(attempt.nominal),
                "forced": attempt.forced,
                **states.get(key, {}),
                "attempts": [],
            }
            lane["runs"].append(runs[key])
        record = attempt.to_json()
        record["duplicate"] = duplicate[id(attempt)]
        runs[key]["attempts"].append(record)
    for lane in lanes.values():
        lane["failedRuns"] = sum(1 for r in lane["runs"] if r.get("failedAttempts"))
        lane["gaveUpRuns"] = sum(1 for r in lane["runs"] if r.get("state") == "gave up")
        following = run.next_fire.get(lane["job"])  # what comes next (trial 206)
        lane["nextFireTimes"] = [iso(following)] if following is not None else []
    start = run.scenario.start
    end = max(run.end, start + timedelta(minutes=1))
    pad = (end - start) / 40
    return {
        "start": iso(start - pad),
        "end": iso(end + pad),
        "now": iso(run.end),
        "clock": "manual",
        "lanes": list(lanes.values()),
    }


def _attempt_table(attempts: list[Attempt]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in TIMELINE_HEADERS)
    rows = []
    for row in timeline_rows(attempts):
        is_duplicate = row[-1].startswith("duplicate")
        cells = "".join(_cell(i, cell, len(row)) for i, cell in enumerate(row))
        marker = ' class="duplicate" data-testid="duplicate-row"' if is_duplicate else ""
        rows.append(f"<tr{marker}>{cells}</tr>")
    return (  # (trial 103: at 800 px its DETAIL column was squeezed to a few words a line)
        '<div class="table-scroll"><table class="attempts" data-testid="attempt-table"><thead>'
        f"<tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _cell(i: int, text: str, count: int) -> str:
    """A cell of the attempts table: DETAIL wraps; an instant (TIME, RUN) may break after its
    ``T`` only, so that the table fits a narrow window (trial 105: 800 px)."""
    if i == count - 1:
        return f'<td class="detail">{html.escape(text)}</td>'
    if i in (0, 2):
        date, t, rest = html.escape(text).partition("T")
        return f'<td class="when"><span>{date}{t}</span><wbr><span>{rest}</span></td>'
    return f"<td>{html.escape(text)}</td>"


def _expectations(run: ScenarioRun) -> str:
    if not run.results:
        return '<p data-testid="expectations">No expectations.</p>'
    good, bad = "✓", "✗"  # the page is UTF-8
    items = []
    for result in run.results:
        observed = number_text(result.observed)
        detail = f"; {result.detail}" if result.detail else ""
        cls, mark, word = ("met", good, "met") if result.ok else ("unmet", bad, "unmet")
        items.append(
            f'<li><span class="{cls}">{mark} {word}</span> '
            f"{html.escape(result.expectation.text)} (observed {html.escape(observed + detail)})"
            "</li>"
        )
    summary = (
        "Every expectation holds."
        if run.ok
        else f"{len(run.unmet)} of {plural(len(run.results), 'expectation')} unmet."
    )
    return (
        f'<div data-testid="expectations"><p class="{"met" if run.ok else "unmet"}">'
        f"{html.escape(summary)}</p><ul>{''.join(items)}</ul></div>"
    )


def probe_line(run: ScenarioRun) -> str | None:
    """The probe's values as one line (``Probe /stats: sweeps = 2, hits = 3``), what it failed
    with, or ``None`` without a probe; the terminal report prints the same line."""
    if run.probe_error is not None:
        return f"Probe failed: {run.probe_error}"
    if not run.probe:
        return None
    values = ", ".join(f"{k} = {number_text(v)}" for k, v in run.probe.items())
    probe = run.scenario.probe
    return f"Probe {probe.location if probe else ''}: {values}"


def number_text(value: float | None) -> str:
    """An observed number as the reports show it: ``2``, ``0.5``, ``?`` for none."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _job(job: Job) -> str:
    """A job as the report lists it: what explains its attempts' times (trial 148)."""
    retry, d, deadline = job.retry_config, format_duration, job.attempt_deadline
    return (
        f"{job.job_id}: {job.schedule} ({job.time_zone}); retry count {retry.retry_count}, "
        f"backoff {d(retry.min_backoff_duration)} to {d(retry.max_backoff_duration)}, "
        f"{retry.max_doublings} doublings"
        + (f"; attempt deadline {d(deadline)}" if deadline is not None else "")
    )


def _scenario(run: ScenarioRun) -> str:
    """What the scenario did: its jobs, its steps, its fault rules (as written) and the
    probe's values."""
    jobs = "".join(f"<li>{html.escape(_job(job))}</li>" for job in run.scenario.jobs)
    jobs += "".join(  # (trial 183: on stderr only)
        f'<li data-testid="left-out">{html.escape(job)}: left out: {html.escape(why)}</li>'
        for job, why in run.scenario.left_out.items()
    )
    steps = "".join(f"<li>{html.escape(step.describe())}</li>" for step in run.scenario.steps)
    rules = run.scenario.faults.get("rules", [])
    faults = "".join(
        f"<li><code>{html.escape(json.dumps(rule))}</code> — {run.rule_fired(index)}</li>"
        for index, rule in enumerate(rules)
    )
    probe = probe_line(run)
    return (
        f'<div data-testid="scenario"><p>Jobs:</p><ul>{jobs}</ul><p>Steps:</p><ol>{steps}</ol>'
        f"<p>Fault rules (seed {run.seed}): {'' if rules else 'none'}</p>"
        + (f"<ul>{faults}</ul>" if rules else "")
        + (f'<p data-testid="probe">{html.escape(probe)}</p>' if probe else "")
        + "</div>"
    )


def _executions(run: ScenarioRun) -> str:
    """The Cloud Run executions' table (the ``executions`` view's columns), or ``""``."""
    if not run.executions:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in EXECUTION_HEADERS)
    rows = "".join(
        f'<tr data-testid="execution-row" class="{"" if cells[2] == "SUCCEEDED" else "failed"}">'
        + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells)
        + "</tr>"
        for cells in execution_rows(run.executions)
    )
    table = f'<table class="attempts" data-testid="executions"><tr>{head}</tr>{rows}</table>'
    return f"<h2>Cloud Run executions</h2>{table}"


#: The page loads nothing: its own inline style and scripts only.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def report_html(run: ScenarioRun) -> str:
    """The report page of ``run`` as one HTML document (see the module docstring)."""
    executions = {e["name"].rsplit("/", 1)[-1]: e for e in run.executions}  # (trial 216)
    data = json.dumps({"timeline": timeline_data(run), "executions": executions})
    data = data.replace("</", "<\\/")
    scenario = run.scenario
    verdict = "every expectation holds" if run.ok else f"{len(run.unmet)} unmet"
    title = f"Scenario {scenario.path}: {verdict}"
    duplicates = sum(1 for row in timeline_rows(run.attempts) if row[-1].startswith("duplicate"))
    failed = sum(1 for attempt in run.attempts if attempt.code not in (None, "OK"))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<style>{read_asset("dashboard.css")}{_PAGE_STYLE}</style></head>
<body>
<header class="top"><h1>{html.escape(title)}</h1>
<div class="clock"><span class="badge manual">virtual clock</span>
<span>{html.escape(iso(scenario.start) or "")} → {html.escape(iso(run.end) or "")}</span></div>
</header>
<main class="report">
<p>{html.escape(run.run_states)}; {plural(len(run.attempts), "attempt")}, {failed} failed, \
{duplicates} duplicate deliver{"y" if duplicates == 1 else "ies"}
(a 2xx the target had already given for the same run); fault seed {run.seed};
{html.escape(run.delivery)}.</p>
<h2>Expectations</h2>
{_expectations(run)}
<h2>Scenario</h2>
{_scenario(run)}
<h2>Timeline</h2>
<div class="legend" id="legend"></div>
<div id="timeline" class="timeline" data-testid="timeline"></div>
<h2>Attempts</h2>
{_attempt_table(run.attempts)}
{_executions(run)}
</main>
<aside id="details" class="details" data-testid="attempt-details" hidden>
<div class="details-head"><h2 id="details-title" data-testid="details-title">Attempt</h2>
<button type="button" id="details-close" data-testid="attempt-details-close"
aria-label="Close">✕</button></div>
<div id="details-body"></div></aside>
<script type="application/json" id="report-data">{data}</script>
<script>{read_asset("timeline.js")}</script>
<script>{_PAGE_SCRIPT}</script>
</body></html>
"""


def write_report(run: ScenarioRun, path: str | Path) -> None:
    """Write :func:`report_html` of ``run`` to ``path`` (UTF-8).

    :raises OSError: when the file cannot be written.
    """
    Path(path).write_text(report_html(run), encoding="utf-8")
