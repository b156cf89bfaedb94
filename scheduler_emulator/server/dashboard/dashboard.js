/* The dashboard page: reads the /_emulator/ read model, acts through the v1 API with JSON
 * requests (never a form or text/plain post), refreshes itself every few seconds. */
(function () {
  "use strict";
  var TL = window.SchedulerTimeline;
  var POLL_MS = 2000;
  var NOTICE_MS = 5000;  /* how long "Paused nightly" and the like stay in the status line */
  var state = {
    view: "timeline", clock: null, token: sessionStorage.getItem("scheduler-emulator-token") || "",
    jobsOffset: 0, jobsPage: 50, lanesOffset: 0, lanesPage: 50,
    windowEnd: null, /* null: follow the clock */ busy: false, timer: null
  };
  function $(id) { return document.getElementById(id); }

  function status(text, isError) {
    var node = $("status");
    node.textContent = text;
    node.className = "status" + (isError ? " error" : "");
    state.noticeUntil = 0;
  }
  /* A successful action's result, kept in the status line for NOTICE_MS. */
  function notice(text) {
    status(text);
    $("status").className = "status done";
    state.noticeUntil = Date.now() + NOTICE_MS;
  }

  function request(method, path, body) {
    var headers = { "Accept": "application/json" };
    if (state.token) headers["Authorization"] = "Bearer " + state.token;
    var init = { method: method, headers: headers, credentials: "same-origin" };
    if (method !== "GET") {
      headers["Content-Type"] = "application/json";  /* a non-simple request, same-origin */
      init.body = JSON.stringify(body || {});
    }
    return fetch(path, init).then(function (response) {
      return response.text().then(function (text) {
        var data = text ? JSON.parse(text) : {};
        if (response.status === 401) { askToken(); }
        if (!response.ok) {
          var message = data.error && data.error.message ? data.error.message : response.statusText;
          throw new Error(message);
        }
        return data;
      });
    });
  }

  function askToken() {
    $("token-dialog").hidden = false;
    $("token-input").focus();
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      if (params[k] !== "" && params[k] !== null && params[k] !== undefined)
        parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(params[k]));
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  /* ------------------------------------------------------------------ clock */
  function showClock(clock) {
    state.clock = clock;
    $("clock-mode").textContent = clock.mode === "manual" ? "manual clock" : "system clock";
    $("clock-mode").className = "badge " + clock.mode;
    $("clock-now").textContent = TL.stamp(clock.now);
    $("clock-controls").hidden = clock.mode !== "manual";
    $("clock-moveto-input").placeholder = clock.now;
    $("clock-next").disabled = !clock.nextDue;
    $("clock-next").title = clock.nextDue ? "Move to " + TL.stamp(clock.nextDue) : "Nothing is due";
  }
  function clockAction(path, body, done) {
    status("Moving the clock…");
    return request("POST", path, body).then(function () { return refresh(); })
      .then(function () { notice(done.replace("{now}", TL.stamp(state.clock.now))); })
      .catch(function (e) { status(e.message, true); });
  }

  /* ------------------------------------------------------------------ jobs */
  function button(label, testid, onClick, cls) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.setAttribute("data-testid", testid);
    if (cls) b.className = cls;
    b.addEventListener("click", onClick);
    return b;
  }
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (text !== undefined) td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function jobAction(job, verb) {
    var path = "/v1/" + job.name + (verb === "delete" ? "" : ":" + verb);
    if (verb === "delete" && !window.confirm("Delete job " + job.id + "? Its attempts stay listed.")) return;
    status((verb === "run" ? "Running " : verb.charAt(0).toUpperCase() + verb.slice(1) + " ") + job.id + "…");
    request(verb === "delete" ? "DELETE" : "POST", path, verb === "delete" ? undefined : {})
      .then(function () {
        notice({ run: "Started a run of ", pause: "Paused ", resume: "Resumed ",
                 "delete": "Deleted " }[verb] + job.id);
        return refresh();
      })
      .catch(function (e) { status(e.message, true); });
  }
  function renderJobs(data) {
    var body = $("jobs-body");
    body.textContent = "";
    data.jobs.forEach(function (job) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-testid", "job-row-" + job.id);
      var name = cell(tr);
      name.appendChild(document.createTextNode(job.id));
      var sub = document.createElement("div");
      sub.className = "sub";
      TL.breakable(sub, job.name.replace(/\/jobs\/[^/]*$/, ""));
      name.appendChild(sub);
      var sched = cell(tr);
      sched.appendChild(document.createTextNode(job.scheduleText));
      var subS = document.createElement("div");
      subS.className = "sub";
      subS.textContent = job.schedule + " · " + job.timeZone;
      sched.appendChild(subS);
      TL.breakable(cell(tr, undefined, "sub target"), job.target);
      var st = cell(tr, job.state, "state " + job.state);
      st.setAttribute("data-testid", "job-state-" + job.id);
      var last = cell(tr);
      if (job.lastAttempt) {
        var code = document.createElement("span");
        var pending = job.lastAttempt.code === null;  // its target has not answered yet
        code.className = pending ? "code-pending" : job.lastAttempt.code === "OK" ? "code-ok" : "code-bad";
        code.textContent = pending ? "in flight" : job.lastAttempt.code;
        if (job.lastAttempt.message) code.title = job.lastAttempt.message;
        last.appendChild(code);
        var when = document.createElement("div");
        when.className = "sub";
        when.textContent = TL.stamp(job.lastAttempt.time);
        last.appendChild(when);
      } else {
        last.textContent = "none yet";
        last.className = "sub";
      }
      var times = cell(tr, "", "times");
      times.textContent = job.nextFireTimes.length ? job.nextFireTimes.map(function (t) {
        return t.replace("T", " ").replace("Z", "");
      }).join("\n") : (job.state === "PAUSED" ? "paused" : "—");
      times.style.whiteSpace = "pre";
      var actions = cell(tr, undefined, "actions");
      actions.appendChild(button("Run now", "job-run-" + job.id, function () { jobAction(job, "run"); }));
      if (job.state === "PAUSED")
        actions.appendChild(button("Resume", "job-resume-" + job.id, function () { jobAction(job, "resume"); }));
      else
        actions.appendChild(button("Pause", "job-pause-" + job.id, function () { jobAction(job, "pause"); }));
      actions.appendChild(button("Delete", "job-delete-" + job.id, function () { jobAction(job, "delete"); }, "danger"));
      body.appendChild(tr);
    });
    var first = data.totalSize ? state.jobsOffset + 1 : 0;
    $("jobs-page").textContent = first + "–" + (state.jobsOffset + data.jobs.length) + " of " + data.totalSize;
    $("jobs-prev").disabled = state.jobsOffset === 0;
    $("jobs-next").disabled = !data.nextPageToken;
  }
  function loadJobs() {
    return request("GET", "/_emulator/jobs" + query({
      name: $("jobs-filter-name").value, state: $("jobs-filter-state").value,
      pageSize: state.jobsPage, pageToken: state.jobsOffset || ""
    })).then(function (data) {
      var key = JSON.stringify(data) + state.jobsOffset;
      if (key === state.jobsShown) return;
      state.jobsShown = key;
      renderJobs(data);
    });
  }

  /* ------------------------------------------------------------------ timeline */
  function spanMs() { return Number($("timeline-span").value) * 1000; }
  function windowOf() {
    var end = state.windowEnd;
    if (end === null) {
      var now = Date.parse(state.clock.now), pad = spanMs() / 24;
      end = Math.ceil((now + pad / 2) / pad) * pad;  /* a little room after now, on a round time */
    }
    return [end - spanMs(), end];
  }
  function placeDetails() {  /* below the header, so that the clock controls stay usable */
    document.documentElement.style.setProperty("--header-height",
      document.querySelector(".top").getBoundingClientRect().height + "px");
  }
  function showDetails(attempt) {
    placeDetails();
    $("details").hidden = false;
    $("details-title").textContent = "Attempt " + attempt.attempt + " of run " + (attempt.runId || "");
    $("details-body").textContent = "Loading…";
    request("GET", "/_emulator/attempts/" + attempt.id).then(function (full) {
      $("details-title").textContent = full.job.split("/").pop() + " · run " + full.runId + " · attempt " + full.attempt;
      TL.details($("details-body"), full);
      showExecution($("details-body"), full);
    }).catch(function (e) { $("details-body").textContent = e.message; });
  }
  /* An attempt answered by the Cloud Run Admin API (jobs/J:run): the execution it started, with
   * each task attempt's exit code and output (GET /_emulator/executions/<id>). */
  function showExecution(container, attempt) {
    var text = attempt.responseExcerpt || "", found = /executions\/([a-z][-a-z0-9]*)"/.exec(text);
    if (!found && /"kind": "Execution"/.test(text)) found = /"name": "([a-z][-a-z0-9]*)"/.exec(text);
    if (!found) return;
    var section = document.createElement("section");
    section.setAttribute("data-testid", "detail-execution");
    container.insertBefore(section, container.querySelector("h3"));  /* after the summary */
    request("GET", "/_emulator/executions/" + found[1]).then(function (e) {
      var h = document.createElement("h3"), link = document.createElement("a");
      link.href = "/_emulator/executions/" + found[1];
      link.textContent = "Cloud Run execution " + found[1];
      h.appendChild(link);
      section.appendChild(h);
      var p = document.createElement("p");
      p.setAttribute("data-testid", "execution-state");
      p.textContent = e.state + " · " + e.succeededCount + " of " + e.taskCount + " tasks succeeded" +
        (e.retriedCount ? " · " + e.retriedCount + " retried" : "");
      section.appendChild(p);
      var table = document.createElement("table");
      table.setAttribute("data-testid", "execution-tasks");
      [["task", "attempt", "exit code", "took", "stdout", "stderr"]].concat(e.taskAttempts.map(function (a) {
        var took = a.endTime ? (Date.parse(a.endTime) - Date.parse(a.startTime)) + " ms" : "running";
        return [a.index, a.attempt, a.stopped ? a.stopped + " (" + a.exitCode + ")" : a.exitCode,
          took, a.stdout, a.stderr];
      })).forEach(function (cells, i) {
        var tr = table.insertRow();
        cells.forEach(function (cell) {
          var td = document.createElement(i ? "td" : "th");
          td.textContent = cell === undefined || cell === "" ? "—" : String(cell);
          tr.appendChild(td);
        });
      });
      section.appendChild(table);
    }).catch(function (err) { section.textContent = "Cloud Run execution " + found[1] + ": " + err.message; });
  }
  function loadTimeline() {
    var w = windowOf();
    return request("GET", "/_emulator/timeline" + query({
      start: new Date(w[0]).toISOString(), end: new Date(w[1]).toISOString(),
      name: $("timeline-filter-name").value, pageSize: state.lanesPage,
      pageToken: state.lanesOffset || ""
    })).then(function (data) {
      var key = JSON.stringify(data);
      if (key === state.drawn) return;  /* nothing changed: keep the drawing (and the selection) */
      state.drawn = key;
      TL.draw($("timeline"), data, { onAttempt: showDetails });
      $("timeline-range").textContent = TL.stamp(data.start) + " → " + TL.stamp(data.end);
      var first = data.totalSize ? state.lanesOffset + 1 : 0;
      $("timeline-page").textContent = "jobs " + first + "–" + (state.lanesOffset + data.lanes.length) + " of " + data.totalSize;
      $("timeline-prev").disabled = state.lanesOffset === 0;
      $("timeline-next").disabled = !data.nextPageToken;
      document.body.setAttribute("data-timeline-ready", String(Date.now()));
    });
  }

  /* ------------------------------------------------------------------ faults */
  function loadFaults() {
    return request("GET", "/_emulator/faults").then(function (plan) {
      var box = $("faults");
      box.textContent = "";
      box.className = "faults";
      var p = document.createElement("p");
      p.textContent = plan.rules.length ? "Seed " + plan.seed + ", " + plan.rules.length + " rule(s):" : "No fault rules: every attempt goes to its target as it is.";
      box.appendChild(p);
      if (!plan.rules.length) return;
      var table = document.createElement("table");
      table.setAttribute("data-testid", "faults-table");
      plan.rules.forEach(function (rule, i) {
        var tr = document.createElement("tr");
        cell(tr, String(i + 1));
        cell(tr, rule.action);
        cell(tr, Object.keys(rule).filter(function (k) { return k !== "action" && rule[k] !== null; })
          .map(function (k) { return k + ": " + JSON.stringify(rule[k]); }).join(", "));
        table.appendChild(tr);
      });
      box.appendChild(table);
    });
  }

  /* ------------------------------------------------------------------ refresh */
  function refresh() {
    if (state.busy) return Promise.resolve();
    state.busy = true;
    return request("GET", "/_emulator/clock").then(function (clock) {
      showClock(clock);
      if (state.view === "jobs") return loadJobs();
      if (state.view === "faults") return loadFaults();
      return loadTimeline();
    }).then(function () {
      var keep = $("status").classList.contains("error") || /…$/.test($("status").textContent) ||
        Date.now() < state.noticeUntil;
      if (!keep) status("Updated " + TL.time(Date.now()) + " UTC");
    }).catch(function (e) { status(e.message, true); })
      .then(function () { state.busy = false; });
  }
  function show(view) {
    state.drawn = state.jobsShown = null;
    state.view = ["jobs", "timeline", "faults"].indexOf(view) >= 0 ? view : "timeline";
    $("details").hidden = true;
    ["jobs", "timeline", "faults"].forEach(function (v) {
      $("view-" + v).hidden = v !== state.view;
      $("tab-" + v).className = v === state.view ? "active" : "";
    });
    refresh();
  }

  /* ------------------------------------------------------------------ wiring */
  window.addEventListener("hashchange", function () { show(location.hash.slice(1)); });
  $("clock-advance").addEventListener("click", function () {
    var step = $("clock-step");
    clockAction("/_emulator/clock:advance", { seconds: Number(step.value) },
      "Advanced " + step.options[step.selectedIndex].text + " to {now}");
  });
  $("clock-next").addEventListener("click", function () {
    if (state.clock && state.clock.nextDue)
      clockAction("/_emulator/clock:moveTo", { time: state.clock.nextDue }, "Moved to the next due instant: {now}");
  });
  $("clock-moveto").addEventListener("click", function () {
    clockAction("/_emulator/clock:moveTo", { time: $("clock-moveto-input").value.trim() }, "Moved the clock to {now}");
  });
  $("timeline-span").addEventListener("change", function () { refresh(); });
  $("timeline-earlier").addEventListener("click", function () {
    state.windowEnd = windowOf()[1] - spanMs() / 2; refresh();
  });
  $("timeline-later").addEventListener("click", function () {
    state.windowEnd = windowOf()[1] + spanMs() / 2; refresh();
  });
  $("timeline-now").addEventListener("click", function () { state.windowEnd = null; refresh(); });
  $("timeline-prev").addEventListener("click", function () {
    state.lanesOffset = Math.max(0, state.lanesOffset - state.lanesPage); refresh();
  });
  $("timeline-next").addEventListener("click", function () { state.lanesOffset += state.lanesPage; refresh(); });
  $("jobs-prev").addEventListener("click", function () {
    state.jobsOffset = Math.max(0, state.jobsOffset - state.jobsPage); refresh();
  });
  $("jobs-next").addEventListener("click", function () { state.jobsOffset += state.jobsPage; refresh(); });
  $("jobs-filter-name").addEventListener("input", function () { state.jobsOffset = 0; refresh(); });
  $("jobs-filter-state").addEventListener("change", function () { state.jobsOffset = 0; refresh(); });
  $("timeline-filter-name").addEventListener("input", function () { state.lanesOffset = 0; refresh(); });
  $("details-close").addEventListener("click", function () { $("details").hidden = true; });
  $("token-form").addEventListener("submit", function (event) {
    event.preventDefault();
    state.token = $("token-input").value;
    sessionStorage.setItem("scheduler-emulator-token", state.token);
    $("token-dialog").hidden = true;
    refresh();
  });
  window.addEventListener("resize", placeDetails);
  TL.legend($("legend"));
  show(location.hash.slice(1) || "timeline");
  state.timer = setInterval(function () { if (!document.hidden) refresh(); }, POLL_MS);
})();
