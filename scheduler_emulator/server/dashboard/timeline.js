/* The attempt timeline: one lane per job, a bar per run, a segment per attempt coloured by
 * its recorded outcome (an injected fault adds a pink stripe under it, it does not hide the outcome),
 * duplicate deliveries dotted, a pending retry as a hollow marker at its due time, skipped runs
 * marked at their schedule time, each lane's runs that gave up (or else were retried) counted,
 * and the clock's "now" line.
 * Also the run view, the attempt panel (a bearer token decoded beside the raw one), the side
 * panel's closing (Esc, ✕) and the times' zone (UTC, the job's, the browser's).
 * Shared by the dashboard and the replay report (which inlines this file): no dependencies,
 * no network. Input: the JSON of GET /_emulator/timeline. */
(function (root) {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var LABEL = 190, LANE = 30, AXIS = 26, PAD_RIGHT = 16;
  var STEPS = [60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
  var OUTCOMES = [
    ["ok", "OK (2xx)"], ["http", "HTTP error"], ["deadline", "Deadline exceeded"],
    ["connection", "Connection / other"], ["pending", "In flight"]
  ];

  function ms(text) { return text ? Date.parse(text) : NaN; }

  function outcome(a) {
    if (a.code === null || a.code === undefined) return "pending";
    if (a.code === "OK") return "ok";
    if (a.responseStatus !== null && a.responseStatus !== undefined) return "http";
    if (a.code === "DEADLINE_EXCEEDED") return "deadline";
    return "connection";
  }

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) if (attrs[key] !== undefined) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function title(node, text) { el("title", {}, node).textContent = text; }

  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function clockText(t, withSeconds) {
    var d = new Date(t);
    return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) +
      (withSeconds ? ":" + pad(d.getUTCSeconds()) : "");
  }
  function dayText(t) {
    var d = new Date(t);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
  }
  /* Which zone times are shown in: "utc", "job" (the job's own) or "local" (the browser's). */
  var zoneMode = "utc";
  function browserZone() { return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"; }
  function zoneFor(jobZone) {
    if (zoneMode === "local") return browserZone();
    if (zoneMode === "job" && jobZone) return jobZone;
    return "UTC";
  }
  /* "YYYY-MM-DD HH:MM:SS" of instant t in IANA zone `zone`, with its UTC offset ("-05:00", "Z")
   * outside UTC: a repeated local time (a daylight-saving fall-back) reads apart. */
  function wallText(t, zone) {
    if (zone === "UTC" || zone === "Etc/UTC") return dayText(t) + " " + clockText(t, true);
    var parts = {};
    new Intl.DateTimeFormat("en-GB", { timeZone: zone, hourCycle: "h23", year: "numeric",
      month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
      timeZoneName: "longOffset" })
      .formatToParts(new Date(t)).forEach(function (p) { parts[p.type] = p.value; });
    return parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" +
      parts.minute + ":" + parts.second + (parts.timeZoneName.replace("GMT", "") || "Z");
  }
  /* An RFC 3339 instant as "YYYY-MM-DD HH:MM:SS ZONE" in the chosen zone (the job's, `jobZone`,
   * when the choice is "job"). */
  function stamp(text, jobZone) { return text ? wall(text, jobZone) + " " + zoneLabel(jobZone) : "—"; }
  function wall(text, jobZone) { return wallText(ms(text), zoneFor(jobZone)); }
  function zoneLabel(jobZone) { var zone = zoneFor(jobZone); return zone === "Etc/UTC" ? "UTC" : zone; }
  function utcStamp(text) { return text ? wallText(ms(text), "UTC") + " UTC" : "—"; }

  function legend(container) {
    container.textContent = "";
    OUTCOMES.forEach(function (o) {
      var item = document.createElement("span");
      var box = document.createElement("i");
      box.className = "outcome-" + o[0];
      item.appendChild(box);
      item.appendChild(document.createTextNode(o[1]));
      container.appendChild(item);
    });
    var injected = document.createElement("span");
    var ring = document.createElement("i");
    ring.className = "legend-injected";
    injected.appendChild(ring);
    injected.appendChild(document.createTextNode("Injected fault (pink stripe under the attempt; its colour is the outcome recorded, a lost ack's UNAVAILABLE too)"));
    injected.setAttribute("data-testid", "legend-injected");
    container.appendChild(injected);
    var skipped = document.createElement("span");
    skipped.textContent = "▼ skipped run · ● duplicate delivery · ○ pending retry · ◇ next " +
      "scheduled run (▷ either, after the window) · red bar: a run that gave up · red ■: its Cloud Run " +
      "execution failed (or was cancelled) · ┆ now (the emulator's clock)";
    container.appendChild(skipped);
  }

  /* The ID of the Cloud Run execution an attempt's answer names (the Admin API's jobs/J:run:
   * v2's operation …/executions/<id>, v1's Execution whose name is the ID), or null. */
  function executionId(attempt) {
    var text = attempt.responseExcerpt || "", found = /executions\/([a-z][-a-z0-9]*)"/.exec(text);
    if (!found && /"kind": "Execution"/.test(text)) found = /"name": "([a-z][-a-z0-9]*)"/.exec(text);
    return found ? found[1] : null;
  }

  /* Fill `section` with a Cloud Run execution (as GET /_emulator/executions/<id> gives it): its
   * state and counts, and each task attempt's exit code, time and output; `href` links its raw
   * record when given (the dashboard's; a replay report embeds it). */
  function execution(section, e, id, href) {
    var h = document.createElement("h3"), code = document.createElement("code");
    code.textContent = id;  /* as written, not in the heading's capitals */
    h.append("Cloud Run execution ", code);
    if (href) {
      var link = document.createElement("a");
      link.href = href;
      link.textContent = "(JSON)";
      link.setAttribute("data-testid", "execution-json");
      h.append(" ", link);
    }
    section.appendChild(h);
    var p = document.createElement("p");
    p.setAttribute("data-testid", "execution-state");  /* coloured: a FAILED one stands out */
    p.className = {SUCCEEDED: "code-ok", RUNNING: "code-pending"}[e.state] || "code-bad";
    /* cancelledCount counts the tasks a cancel stopped too (trial 204 read "3 never started"
       beside two that ran), as execution_reason splits it */
    var stopped = e.taskAttempts.filter(function (a) { return a.stopped === "cancelled"; }).length;
    var never = (e.cancelledCount || 0) - stopped;
    p.textContent = e.state + " · " + e.succeededCount + " of " + e.taskCount + " tasks succeeded" +
      (e.retriedCount ? " · " + e.retriedCount + " retried" : "") +
      (stopped ? " · " + stopped + " stopped (cancelled)" : "") +
      (never ? " · " + never + " never started (cancelled)" : "");
    section.appendChild(p);
    var table = document.createElement("table");
    table.setAttribute("data-testid", "execution-tasks");
    table.className = "execution";
    [["task", "attempt", "exit code", "took", "stdout", "stderr"]].concat(e.taskAttempts.map(function (a) {
      var took = a.endTime ? (Date.parse(a.endTime) - Date.parse(a.startTime)) + " ms" : "running";
      return [a.index, a.attempt, exitText(a), took].concat([a.stdout, a.stderr].map(function (text) {
        return (text || "").replace(/\s+$/, "");  /* its lines kept (CSS), not a last empty one */
      }));
    })).forEach(function (cells, i) {
      var tr = table.insertRow();
      cells.forEach(function (cell) {
        var td = document.createElement(i ? "td" : "th");
        td.textContent = cell === undefined || cell === "" ? "—" : String(cell);
        tr.appendChild(td);
      });
    });
    section.appendChild(table);
  }

  function attemptText(lane, a) {
    var what = a.code === null || a.code === undefined ? "in flight" :
      a.code + (a.responseStatus ? " (HTTP " + a.responseStatus + ")" : "");
    return lane.id + " · attempt " + a.attempt + " · " + what + (a.injected ? " · injected" : "") +
      "\nstarted " + stamp(a.startTime, lane.timeZone) + (a.debugInfo ? "\n" + a.debugInfo : "");
  }

  /* Draw `data` into `container` (emptied first). options.onAttempt(attempt, run, lane) is
   * called when a segment is clicked; options.width overrides the container's width. */
  function draw(container, data, options) {
    options = options || {};
    container.textContent = "";
    var start = ms(data.start), end = ms(data.end), now = ms(data.now);
    var width = Math.max(640, options.width || container.clientWidth || 1100);
    var span = width - LABEL - PAD_RIGHT;
    var lanes = data.lanes || [];
    if (options.runFilter) {  /* the Runs filter keeps the lanes it keeps a run of */
      lanes = lanes.filter(function (lane) {
        return (lane.runs || []).some(function (run) {
          return (run.attempts || []).length && options.runFilter(run);
        });
      });
    }
    var height = AXIS + Math.max(1, lanes.length) * LANE + 8;
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height,
      "data-testid": "timeline-svg", "data-now": data.now, role: "img" });
    function x(t) {  /* clamped: an attempt begun before the window starts at its edge */
      return Math.min(width - PAD_RIGHT, Math.max(LABEL, LABEL + (t - start) / (end - start) * span));
    }
    // axis and grid
    var step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) {
      if ((end - start) / 1000 / STEPS[i] <= Math.max(4, span / 95)) { step = STEPS[i]; break; }
    }
    var first = Math.ceil(start / 1000 / step) * step * 1000;
    var nowShown = now >= start && now <= end;
    var NOW_LABEL = 26;  /* the "now" label's width, drawn left of the now line */
    var labelled = "";  /* the day of the last label: a label on a new day carries its date */
    for (var t = first; t <= end; t += step * 1000) {
      el("line", { x1: x(t), x2: x(t), y1: AXIS - 4, y2: height, "class": "tl-grid" }, svg);
      var day = dayText(t);  /* (trial 163: no label had a date, "now" hid midnight's) */
      var text = day !== labelled ? day.slice(5) + " " + clockText(t) : clockText(t);
      if (x(t) + 7 * text.length > width) continue;  /* no room left for the label */
      if (nowShown && x(t) + 3 < x(now) + 2 && x(t) + 3 + 6.2 * text.length > x(now) - NOW_LABEL - 10)
        continue;  /* the "now" label is there, or too near to read apart (trial 130: "06:00now") */
      el("text", { x: x(t) + 3, y: 15, "class": "tl-axis" }, svg).textContent = text;
      labelled = day;
    }
    var zone = el("text", { x: 8, y: 15, "class": "tl-axis" }, svg);
    zone.textContent = "UTC";
    if (!lanes.length) {
      el("text", { x: LABEL, y: AXIS + 20, "class": "tl-empty" }, svg).textContent =
        options.runFilter && (data.lanes || []).length ? "No run in this window matches the " +
        "Runs filter." : data.totalSize === 0 && !options.named ? "No jobs yet." : "No jobs match.";
    }
    lanes.forEach(function (lane, index) {
      var top = AXIS + index * LANE, mid = top + LANE / 2;
      var group = el("g", { "class": "tl-lane-group", "data-testid": "lane-" + lane.id,
        "data-job": lane.job }, svg);
      el("rect", { x: 0, y: top, width: width, height: LANE,
        "class": "tl-lane" + (index % 2 ? " odd" : "") }, group);
      var name = el("text", { x: 8, y: mid + 4, "class": "tl-label" +
        (lane.state === "PAUSED" ? " paused" : "") }, group);
      var suffix = lane.state === "PAUSED" ? " (paused)" : "";
      var counted = !lane.failedRuns ? "" : lane.gaveUpRuns ? lane.gaveUpRuns + " gave up" :
        lane.failedRuns + " retried";  /* the window's runs that gave up, else were retried */
      /* the ID cut to what fits beside the count: about 7 px a character, 6.5 for the count */
      var room = Math.floor((LABEL - 24 - counted.length * 6.5) / 7) - suffix.length;
      name.textContent = (lane.id.length > room ? lane.id.slice(0, Math.max(room - 1, 3)) + "…" :
        lane.id) + suffix;
      title(name, lane.job);
      if (counted) {
        var count = el("text", { x: LABEL - 8, y: mid + 4, "text-anchor": "end",
          "class": "tl-failed" + (lane.gaveUpRuns ? " gave-up" : ""),
          "data-testid": "failed-count-" + lane.id, "data-failed": lane.failedRuns,
          "data-gave-up": lane.gaveUpRuns || 0 }, group);
        count.textContent = counted;
        title(count, lane.failedRuns + " run(s) in this window with a failed attempt, " +
          (lane.gaveUpRuns || 0) + " gave up");
      }
      (lane.nextFireTimes || []).forEach(function (t) {  /* what comes next, under the runs */
        var nx = x(ms(t)), later = ms(t) >= end;  /* (a replay report's: after its window) */
        var next = el("path", { d: later ? "M" + (nx - 9) + " " + (mid - 7) + "l9 7l-9 7z" :
          "M" + nx + " " + (mid - 7) + "l6 7l-6 7l-6 -7z", "class": "tl-next" + (later ? " later" : ""),
          "data-testid": "next-run", "data-time": t }, group);
        title(next, lane.id + " · next run scheduled for " + stamp(t, lane.timeZone) +
          (later ? " (after this window)" : ""));
      });
      var laneRight = -Infinity;  /* where the lane's last run drawn ends */
      (lane.runs || []).forEach(function (run) {
        var attempts = run.attempts || [];
        if (!attempts.length || (options.runFilter && !options.runFilter(run))) return;
        var runGroup = el("g", { "class": "tl-run-group", "data-testid": "run-" + run.id,
          "data-run": run.id, "data-attempts": attempts.length }, group);
        var segments = [], lastRight = -Infinity;
        /* each attempt at least 5 px wide, unless the run's attempts would then be drawn more
           than 12 px past their real time (trial 225: a 7-day window drew past retries after
           "now"): then narrower, down to 1.5 px */
        var real = Math.max.apply(null, attempts.map(function (a) {
          return x(a.endTime ? ms(a.endTime) : now);
        })) - x(ms(attempts[0].startTime));
        var least = attempts.length * 6 - real <= 12 ? 5 :
          Math.max(1.5, Math.min(5, (real + 5) / attempts.length - 1));
        var gap = least < 3 ? 0 : 1;
        attempts.forEach(function (a) {
          var s = ms(a.startTime), e = a.endTime ? ms(a.endTime) : now;
          var left = Math.max(x(s), lastRight + gap);
          var right = Math.max(left + least, x(e));
          segments.push([left, right, a]);
          lastRight = right;
        });
        /* a run begun where the one before it is drawn goes beside it, up to 12 px on (trial
           225: a forced run and a scheduled one of one instant hid each other) */
        var overlap = laneRight + 2 - segments[0][0];
        if (overlap > 0 && overlap <= 12) {
          segments.forEach(function (seg) { seg[0] += overlap; seg[1] += overlap; });
        }
        laneRight = Math.max(laneRight, segments[segments.length - 1][1]);
        var barEnd = segments[segments.length - 1][1];
        if (run.nextAttemptTime) barEnd = Math.max(barEnd, x(ms(run.nextAttemptTime)));
        if (run.state === "gave up") barEnd += 6;  /* its red end shows past the last attempt */
        var bar = el("rect", { x: segments[0][0], y: mid - 2,
          width: Math.max(1, barEnd - segments[0][0]), height: 4,
          "class": "tl-run" + (run.state === "gave up" ? " gave-up" : "") }, runGroup);
        /* the bar's clickable band: the run view */
        var band = el("rect", { x: segments[0][0], y: mid - 13, width: Math.max(6, barEnd - segments[0][0]),
          height: 26, "class": "tl-run-hit", "data-testid": "runbar-" + run.id,
          "data-state": run.state || "" }, runGroup);
        runGroup.insertBefore(band, bar);
        var started = run.execution && run.execution.state ? " · Cloud Run execution " +
          run.execution.id + ": " + run.execution.state : "";
        var runText = lane.id + " · run " + run.id + " scheduled for " + stamp(run.nominalTime, lane.timeZone) +
          (run.forced ? " (forced: Run now, or as if scheduled)" : "") + " · " + attempts.length + " attempt(s)" +
          (run.state ? " · " + stateText(run, lane) : "") + started + "\nclick for the run";
        title(band, runText);
        band.addEventListener("click", function () { if (options.onRun) options.onRun(run, lane); });
        if (started && !/^(SUCCEEDED|RUNNING)$/.test(run.execution.state)) {
          /* its RunJob answered 200 whatever the execution did (trial 220: all green) */
          var ended = el("rect", { x: barEnd + 3, y: mid - 4, width: 8, height: 8,
            "class": "tl-execution", "data-testid": "execution-marker", "data-run": run.id,
            "data-state": run.execution.state }, runGroup);
          title(ended, runText);
          ended.addEventListener("click", function () { if (options.onRun) options.onRun(run, lane); });
        }
        if (run.nextAttemptTime) {
          /* a retry due after the window: an arrow at its edge, not a ring that looks due */
          var due = ms(run.nextAttemptTime), px = x(due), later = due > end;
          var marker = { "data-testid": "pending-marker", "data-run": run.id,
            "data-time": run.nextAttemptTime, "class": "tl-pending" + (later ? " later" : "") };
          if (later) marker.d = "M" + (px - 9) + " " + (mid - 7) + "l9 7l-9 7z";
          else { marker.cx = px; marker.cy = mid; marker.r = 6; }
          var ring = el(later ? "path" : "circle", marker, runGroup);
          title(ring, lane.id + " · " + retryText(run) + " at " + stamp(run.nextAttemptTime, lane.timeZone) +
            (later ? " (after this window)" : ""));
          ring.addEventListener("click", function () { if (options.onRun) options.onRun(run, lane); });
        }
        segments.forEach(function (seg) {
          var a = seg[2];
          var rect = el("rect", { x: seg[0], y: mid - 9, width: seg[1] - seg[0], height: 18, rx: 2,
            "class": "tl-attempt outcome-" + outcome(a) + (a.injected ? " injected" : ""),
            "data-testid": "attempt-" + a.id, "data-outcome": outcome(a),
            "data-injected": a.injected ? "true" : "false", "data-attempt": a.attempt }, runGroup);
          title(rect, attemptText(lane, a));
          if (a.injected) {  /* a stripe under the segment: the fill stays the real outcome */
            var stripe = el("rect", { x: seg[0], y: mid + 10, width: seg[1] - seg[0], height: 3,
              "class": "tl-injected", "data-testid": "injected-marker" }, runGroup);
            title(stripe, "Injected fault: " + attemptText(lane, a));
          }
          if (a.duplicate) {
            var dot = el("circle", { cx: (seg[0] + seg[1]) / 2, cy: mid - 12, r: 3.2,
              "class": "tl-duplicate", "data-testid": "duplicate-marker" }, runGroup);
            title(dot, "Duplicate delivery: the target had already answered 2xx for this run");
          }
          rect.addEventListener("click", function () {
            var previous = svg.querySelector(".tl-attempt.selected");
            if (previous) previous.classList.remove("selected");
            rect.classList.add("selected");
            if (options.onAttempt) options.onAttempt(a, run, lane);
          });
        });
      });
      (lane.skipped || []).forEach(function (s) {
        var sx = x(ms(s.nominalTime));
        var mark = el("path", { d: "M" + (sx - 5) + " " + (top + 3) + " L" + (sx + 5) + " " + (top + 3) +
          " L" + sx + " " + (top + 11) + " Z", "class": "tl-skipped", "data-testid": "skipped-marker" }, group);
        title(mark, lane.id + " · skipped run scheduled for " + stamp(s.nominalTime) + " · " +
          (s.reason === "EMULATOR_DOWN" ? "the emulator was not running" :
           "the previous run was still going"));
      });
    });
    if (nowShown) {
      el("line", { x1: x(now), x2: x(now), y1: AXIS - 6, y2: height, "class": "tl-now",
        "data-testid": "now-line" }, svg);
      var nowLabel = el("text", { x: x(now) - 3, y: 15, "text-anchor": "end",
        "class": "tl-now-label", "data-testid": "now-label" }, svg);
      nowLabel.textContent = "now";
    }
    container.appendChild(svg);
    return svg;
  }

  /* "retry: attempt 3 of 4" for a run's pending retry. */
  function retryText(run) {
    return "retry: attempt " + run.nextAttempt + (run.maxAttempts ? " of " + run.maxAttempts : "");
  }
  /* How a run stands, in words. */
  function stateText(run, lane) {
    if (run.state === "retrying" && run.nextAttemptTime)
      return "next attempt at " + stamp(run.nextAttemptTime, lane && lane.timeZone);
    if (run.state === "gave up") return "gave up" + (run.gaveUp ? " (" + run.gaveUp + ")" : "");
    return run.state || "";
  }

  /* The time from a to b: "12.3 s" under a minute, else "4 h 30 min", "2 min 5 s". */
  function seconds(a, b) {
    var s = Math.round((ms(b) - ms(a)) / 100) / 10;
    if (s < 60) return s + " s";
    s = Math.round(s);
    return [[Math.floor(s / 3600), "h"], [Math.floor(s % 3600 / 60), "min"], [s % 60, "s"]]
      .filter(function (p) { return p[0]; }).map(function (p) { return p.join(" "); }).join(" ");
  }

  /* Fill `container` with one run (a GET /_emulator/runs run): how it stands — succeeded, gave
   * up and why, or its next attempt in the zone chosen and UTC — and its attempts in order with
   * the wait before each, their outcome and reason. onAttempt(attempt) is called when a row is
   * clicked. */
  function runView(container, run, lane, onAttempt) {
    container.textContent = "";
    var zone = (lane && lane.timeZone) || "Etc/UTC";
    var dl = add(container, "dl");
    function row(name, value, testid) {
      add(dl, "dt", name);
      var dd = add(dl, "dd", value === null || value === undefined || value === "" ? "—" : String(value));
      if (testid) dd.setAttribute("data-testid", testid);
      return dd;
    }
    row("Job", run.job, "run-job");
    /* a forced run's instant is when it was asked for; the header below is what it was sent as
       ("Run as if scheduled at…"'s time among them: trial 193) */
    row(run.forced ? "Forced at" : "Scheduled for", stamp(run.nominalTime, zone), "run-scheduled");
    if ((lane && lane.targetType) !== "PUBSUB") {  /* a message has no headers (trial 186) */
      row("ScheduleTime header", run.scheduleTime, "run-schedule-time-header");
    }
    var stateCell = row("State", stateText(run, lane), "run-state");
    stateCell.className = "run-state " + String(run.state || "").replace(/ /g, "-");
    if (run.nextAttemptTime) {
      var utc = /^(Etc\/)?UTC$/.test(zoneFor(zone));  /* in the zone chosen, and in UTC */
      row("Next attempt", retryText(run) + " at " + stamp(run.nextAttemptTime, zone) +
        (utc ? "" : " · " + utcStamp(run.nextAttemptTime)), "run-next-attempt");
    }
    row("Attempts", run.tries + (run.maxAttempts ? " of at most " + run.maxAttempts : ""),
      "run-attempt-count");
    add(container, "h3", "Attempts");
    var table = add(container, "table", undefined, "run-attempts");
    table.setAttribute("data-testid", "run-attempts");
    var head = add(table, "tr");  // (the zone is said once, in the header: the rows fit the panel)
    ["#", "Started (" + zoneLabel(zone) + ")", "Waited", "Outcome", "Took"].forEach(function (h) {
      add(head, "th", h);
    });
    var previous = null;
    (run.attempts || []).forEach(function (a) {
      var tr = add(table, "tr", undefined, "run-attempt outcome-row-" + outcome(a));
      tr.setAttribute("data-testid", "run-attempt-" + a.attempt);
      add(tr, "td", a.attempt + (a.injected ? " *" : ""));
      add(tr, "td", wall(a.startTime, zone));
      add(tr, "td", previous && previous.endTime ? seconds(previous.endTime, a.startTime) : "—");
      add(tr, "td", a.code === null || a.code === undefined ? "in flight" :
        a.code + (a.responseStatus ? " (" + a.responseStatus + ")" : ""), "code-" + outcome(a));
      add(tr, "td", a.endTime ? seconds(a.startTime, a.endTime) : "—");
      var reason = a.reason || (a.duplicate ? "duplicate delivery" :  /* as the CLI says a copy */
        /^Injected duplicate delivery/.test(a.debugInfo || "") ? "injected duplicate delivery" : "");
      var rows = [tr];
      if (reason) {  // under its attempt, the panel's whole width
        rows.push(add(table, "tr", undefined, "run-attempt-reason"));
        add(rows[1], "td");
        add(rows[1], "td", reason).colSpan = 4;
        rows[1].setAttribute("data-testid", "run-attempt-reason-" + a.attempt);
      }
      if (onAttempt) rows.forEach(function (r) { r.addEventListener("click", function () { onAttempt(a); }); });
      previous = a;
    });
    if (run.nextAttemptTime) {
      var tr = add(table, "tr", undefined, "run-attempt pending");
      tr.setAttribute("data-testid", "run-attempt-pending");
      add(tr, "td", String(run.nextAttempt));
      add(tr, "td", wall(run.nextAttemptTime, zone));
      add(tr, "td", previous && previous.endTime ? seconds(previous.endTime, run.nextAttemptTime) : "—");
      add(tr, "td", "pending");
      add(tr, "td", "");
    }
  }

  /* A side panel (`aside`) closed by its ✕ (`closeButton`) and by Esc, placed under the page's
   * fixed header (never under it). Returns open(title): shows the panel with that title. */
  function panel(aside, titleNode, closeButton) {
    function close() { aside.hidden = true; }
    closeButton.addEventListener("click", close);
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && !aside.hidden) close();
    });
    function place() {
      var top = document.querySelector(".top");
      var height = top ? top.getBoundingClientRect().bottom : 0;
      aside.style.top = Math.max(0, height) + "px";
    }
    window.addEventListener("resize", function () { if (!aside.hidden) place(); });
    window.addEventListener("scroll", function () { if (!aside.hidden) place(); });
    return function open(title) {
      place();
      aside.hidden = false;
      titleNode.textContent = title;
    };
  }

  /* The header and claims of a JWT (an OIDC token), or null when `token` is not one. */
  function jwtParts(token) {
    var pieces = String(token || "").split(".");
    if (pieces.length !== 3) return null;
    function part(text) {
      var b64 = text.replace(/-/g, "+").replace(/_/g, "/");
      while (b64.length % 4) b64 += "=";
      return JSON.parse(decoded(b64));
    }
    try { return { header: part(pieces[0]), claims: part(pieces[1]) }; } catch (e) { return null; }
  }

  /* A Cloud Run task attempt's exit: its code, or why the emulator ended it and the code it
   * got (a task found running at a restart has none): "0", "timeout (-15)", "interrupted". */
  function exitText(a) {
    var code = a.exitCode === undefined || a.exitCode === null ? "" : String(a.exitCode);
    return a.stopped ? a.stopped + (code ? " (" + code + ")" : "") : code;
  }

  function add(parent, tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    parent.appendChild(node);
    return node;
  }

  /* Fill `container` with one attempt's record (GET /_emulator/attempts/<id>): what was sent,
   * what came back, and why it counted as it did. */
  function details(container, a, jobZone) {
    container.textContent = "";
    var dl = add(container, "dl");
    function row(name, value, testid) {
      add(dl, "dt", name);
      var dd = add(dl, "dd");
      breakable(dd, value === null || value === undefined || value === "" ? "—" : String(value));
      if (testid) dd.setAttribute("data-testid", testid);
    }
    row("Job", a.job, "detail-job");
    row("Run", a.runId + (a.forced ? " (forced: Run now, or run as if scheduled)" : ""));
    row("Attempt", a.attempt + (a.injected ? " — injected fault" : ""), "detail-attempt");
    /* a forced run's instant is when it was forced; the header below is what it was sent as */
    row(a.forced ? "Forced at" : "Schedule time", stamp(a.nominalTime, jobZone),
      "detail-schedule-time");
    var published = (a.request || {}).pubsubTopic;  /* a message has no headers (trial 125) */
    if (!published) row("ScheduleTime header", a.scheduleTime);
    row("Started", stamp(a.startTime, jobZone));
    row("Ended", a.endTime ? stamp(a.endTime, jobZone) + " (" + Math.max(0, ms(a.endTime) - ms(a.startTime)) + " ms)" : "in flight");
    row("Outcome", a.code || "in flight", "detail-code");
    var noStatus = a.code && a.code !== "OK" && (a.responseStatus === null || a.responseStatus === undefined);
    if (!published) row("HTTP status", noStatus && a.injected && a.responseExcerpt ?
      "— (the target answered; the injected fault dropped its answer: see Why)" : a.responseStatus,
      "detail-status");
    add(container, "h3", a.code === "OK" ? "Status detail" : "Why").setAttribute(  // (an OK has no why)
      "data-testid", "detail-why");
    var said = (a.reason || "").split(" — emulator's hint: ")[0];  /* the debug text once */
    var reason = said && said !== (a.debugInfo || "").split(/\s+/).join(" ").trim();
    if (reason) add(container, "p", a.reason, "reason").setAttribute("data-testid", "detail-reason");
    add(container, "pre", a.debugInfo || "—").setAttribute("data-testid", "detail-debug");
    if (a.hint && !(reason && a.reason.indexOf(a.hint) >= 0))  /* (trial 126: said twice) */
      add(container, "p", "Emulator's hint, beside the service's answer: " + a.hint, "hint")
        .setAttribute("data-testid", "detail-hint");
    if (!published) {
      add(container, "h3", "Response body (first 4 KiB)" + (a.responseContentType ? " · " + a.responseContentType : ""));
      add(container, "pre", a.responseExcerpt || "(empty)").setAttribute("data-testid", "detail-response");
    }
    var request = a.request || {};
    add(container, "h3", "Request");
    var headers = request.headers || {};
    if (request.pubsubTopic) {  /* a Pub/Sub publish: the topic, the data and the attributes */
      add(container, "pre", "PUBLISH " + request.pubsubTopic).setAttribute("data-testid", "detail-request");
      add(container, "pre", "data: " + decoded(request.data)).setAttribute("data-testid", "detail-data");
      headers = request.attributes || {};
      if (!Object.keys(headers).length) add(container, "p", "No attributes.", "hint");
    } else {
      add(container, "pre", (request.method || "") + " " + (request.url || "") +
        (request.appEngineHost ? "\n(App Engine: production routes it to " +
          request.appEngineHost + ")" : "")).setAttribute("data-testid", "detail-request");
    }
    var table = add(container, "table");
    table.setAttribute("data-testid", "detail-headers");
    Object.keys(headers).forEach(function (name) {
      var tr = add(table, "tr");
      add(tr, "td", name);
      add(tr, "td", String(headers[name]));
      var bearer = /^Bearer\s+(\S+)$/i.exec(String(headers[name]));
      var jwt = name.toLowerCase() === "authorization" && bearer ? jwtParts(bearer[1]) : null;
      if (jwt) tokenTable(container, jwt);
    });
  }

  /* The OIDC token's header and claims, `exp`, `iat` and `nbf` also as dates. */
  function tokenTable(container, jwt) {
    add(container, "h3", "Token (decoded; the raw JWT is the Authorization header above)")
      .setAttribute("data-testid", "detail-token-title");
    var box = add(container, "table", undefined, "token");
    box.setAttribute("data-testid", "detail-token");
    function rows(kind, object) {
      Object.keys(object).forEach(function (key) {
        var tr = add(box, "tr");
        tr.setAttribute("data-testid", "token-" + kind + "-" + key);
        add(tr, "td", kind + "." + key);
        var value = object[key];
        var text = typeof value === "string" ? value : JSON.stringify(value);
        if ((key === "exp" || key === "iat" || key === "nbf") && typeof value === "number")
          text += " (" + utcStamp(new Date(value * 1000).toISOString()) + ")";
        add(tr, "td", text);
      });
    }
    rows("header", jwt.header);
    rows("claims", jwt.claims);
  }

  /* Text that may wrap after a "/" (a resource name, a URL) rather than inside a word. */
  function breakable(node, text) {  /* a line may break after each "/" and "_" (codes too) */
    String(text).split(/(?<=[\/_])/).forEach(function (part, i) {
      if (i) node.appendChild(document.createElement("wbr"));
      node.appendChild(document.createTextNode(part));
    });
  }

  /* A Pub/Sub message's base64 data as text (UTF-8), or as base64 when it is not text. */
  function decoded(data) {
    if (!data) return "(empty)";
    try {
      var bytes = atob(data), codes = [];
      for (var i = 0; i < bytes.length; i++) codes.push("%" + ("0" + bytes.charCodeAt(i).toString(16)).slice(-2));
      return decodeURIComponent(codes.join(""));
    } catch (e) {
      return data + " (base64)";
    }
  }

  root.SchedulerTimeline = {
    draw: draw, legend: legend, outcome: outcome, stamp: stamp, utcStamp: utcStamp,
    execution: execution, executionId: executionId,
    details: details, runView: runView, panel: panel, breakable: breakable, jwtParts: jwtParts,
    retryText: retryText, stateText: stateText, wallText: wallText, exitText: exitText,
    setZone: function (mode) { zoneMode = mode; }, browserZone: browserZone, zoneFor: zoneFor,
    time: function (t) { return clockText(t, true); }
  };
})(this);
