/* The attempt timeline: one lane per job, a bar per run, a segment per attempt coloured by
 * its real outcome (an injected fault adds a pink stripe under it, it does not hide the outcome),
 * duplicate deliveries dotted, skipped runs marked at their schedule time, and the clock's
 * "now" line.
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
  function stamp(text) { return text ? dayText(ms(text)) + " " + clockText(ms(text), true) + " UTC" : "—"; }

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
    injected.appendChild(document.createTextNode("Injected fault (pink stripe under the attempt; its colour is the real outcome)"));
    injected.setAttribute("data-testid", "legend-injected");
    container.appendChild(injected);
    var skipped = document.createElement("span");
    skipped.textContent = "▼ skipped run   ● duplicate delivery   ┆ now (the emulator's clock)";
    container.appendChild(skipped);
  }

  function attemptText(lane, a) {
    var what = a.code === null || a.code === undefined ? "in flight" :
      a.code + (a.responseStatus ? " (HTTP " + a.responseStatus + ")" : "");
    return lane.id + " · attempt " + a.attempt + " · " + what + (a.injected ? " · injected" : "") +
      "\nstarted " + stamp(a.startTime) + (a.debugInfo ? "\n" + a.debugInfo : "");
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
    for (var t = first; t <= end; t += step * 1000) {
      el("line", { x1: x(t), x2: x(t), y1: AXIS - 4, y2: height, "class": "tl-grid" }, svg);
      var midnight = new Date(t).getUTCHours() === 0 && new Date(t).getUTCMinutes() === 0;
      var text = midnight || step >= 86400 ? dayText(t).slice(5) + " " + clockText(t) : clockText(t);
      if (x(t) + 7 * text.length > width) continue;  /* no room left for the label */
      if (nowShown && x(t) + 3 < x(now) + 2 && x(t) + 3 + 6.2 * text.length > x(now) - NOW_LABEL - 2)
        continue;  /* the "now" label is there */
      el("text", { x: x(t) + 3, y: 15, "class": "tl-axis" }, svg).textContent = text;
    }
    var zone = el("text", { x: 8, y: 15, "class": "tl-axis" }, svg);
    zone.textContent = "UTC";
    if (!lanes.length) {
      el("text", { x: LABEL, y: AXIS + 20, "class": "tl-empty" }, svg).textContent =
        "No jobs match.";
    }
    lanes.forEach(function (lane, index) {
      var top = AXIS + index * LANE, mid = top + LANE / 2;
      var group = el("g", { "class": "tl-lane-group", "data-testid": "lane-" + lane.id,
        "data-job": lane.job }, svg);
      el("rect", { x: 0, y: top, width: width, height: LANE,
        "class": "tl-lane" + (index % 2 ? " odd" : "") }, group);
      var name = el("text", { x: 8, y: mid + 4, "class": "tl-label" +
        (lane.state === "PAUSED" ? " paused" : "") }, group);
      name.textContent = (lane.id.length > 24 ? lane.id.slice(0, 23) + "…" : lane.id) +
        (lane.state === "PAUSED" ? " (paused)" : "");
      title(name, lane.job);
      (lane.runs || []).forEach(function (run) {
        var attempts = run.attempts || [];
        if (!attempts.length) return;
        var runGroup = el("g", { "class": "tl-run-group", "data-testid": "run-" + run.id,
          "data-run": run.id, "data-attempts": attempts.length }, group);
        var segments = [], lastRight = -Infinity;
        attempts.forEach(function (a) {
          var s = ms(a.startTime), e = a.endTime ? ms(a.endTime) : now;
          var left = Math.max(x(s), lastRight + 1);
          var right = Math.max(left + 5, x(e));
          segments.push([left, right, a]);
          lastRight = right;
        });
        var bar = el("rect", { x: segments[0][0], y: mid - 2,
          width: Math.max(1, segments[segments.length - 1][1] - segments[0][0]), height: 4,
          "class": "tl-run" }, runGroup);
        title(bar, lane.id + " · run " + run.id + " scheduled for " + stamp(run.nominalTime) +
          (run.forced ? " (Run now)" : "") + " · " + attempts.length + " attempt(s)");
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

  function add(parent, tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    parent.appendChild(node);
    return node;
  }

  /* Fill `container` with one attempt's record (GET /_emulator/attempts/<id>): what was sent,
   * what came back, and why it counted as it did. */
  function details(container, a) {
    container.textContent = "";
    var dl = add(container, "dl");
    function row(name, value, testid) {
      add(dl, "dt", name);
      var dd = add(dl, "dd");
      breakable(dd, value === null || value === undefined || value === "" ? "—" : String(value));
      if (testid) dd.setAttribute("data-testid", testid);
    }
    row("Job", a.job, "detail-job");
    row("Run", a.runId + (a.forced ? " (Run now)" : ""));
    row("Attempt", a.attempt + (a.injected ? " — injected fault" : ""), "detail-attempt");
    row("Schedule time", stamp(a.nominalTime), "detail-schedule-time");
    row("ScheduleTime header", a.scheduleTime);
    row("Started", stamp(a.startTime));
    row("Ended", a.endTime ? stamp(a.endTime) + " (" + Math.max(0, ms(a.endTime) - ms(a.startTime)) + " ms)" : "in flight");
    row("Outcome", a.code || "in flight", "detail-code");
    row("HTTP status", a.responseStatus, "detail-status");
    add(container, "h3", "Why");
    add(container, "pre", a.debugInfo || "—").setAttribute("data-testid", "detail-debug");
    if (a.hint) add(container, "p", a.hint, "hint").setAttribute("data-testid", "detail-hint");
    add(container, "h3", "Response body (first 4 KiB)" + (a.responseContentType ? " · " + a.responseContentType : ""));
    add(container, "pre", a.responseExcerpt || "(empty)").setAttribute("data-testid", "detail-response");
    var request = a.request || {};
    add(container, "h3", "Request");
    var headers = request.headers || {};
    if (request.pubsubTopic) {  /* a Pub/Sub publish: the topic, the data and the attributes */
      add(container, "pre", "PUBLISH " + request.pubsubTopic).setAttribute("data-testid", "detail-request");
      add(container, "pre", "data: " + decoded(request.data)).setAttribute("data-testid", "detail-data");
      headers = request.attributes || {};
      if (!Object.keys(headers).length) add(container, "p", "No attributes.", "hint");
    } else {
      add(container, "pre", (request.method || "") + " " + (request.url || ""))
        .setAttribute("data-testid", "detail-request");
    }
    var table = add(container, "table");
    table.setAttribute("data-testid", "detail-headers");
    Object.keys(headers).forEach(function (name) {
      var tr = add(table, "tr");
      add(tr, "td", name);
      add(tr, "td", String(headers[name]));
    });
  }

  /* Text that may wrap after a "/" (a resource name, a URL) rather than inside a word. */
  function breakable(node, text) {
    text.split("/").forEach(function (part, i, parts) {
      node.appendChild(document.createTextNode(part + (i < parts.length - 1 ? "/" : "")));
      if (i < parts.length - 1) node.appendChild(document.createElement("wbr"));
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
    draw: draw, legend: legend, outcome: outcome, stamp: stamp, details: details,
    breakable: breakable,
    time: function (t) { return clockText(t, true); }
  };
})(this);
