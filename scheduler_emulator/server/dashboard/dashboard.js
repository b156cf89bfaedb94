/* The dashboard page: reads the /_emulator/ read model, acts through the v1 API with JSON
 * requests (never a form or text/plain post), refreshes itself every few seconds. */
(function () {
  "use strict";
  var TL = window.SchedulerTimeline;
  var POLL_MS = 2000;
  var NOTICE_MS = 5000;  /* how long "Paused nightly" and the like stay in the status line */
  var ZONE_KEY = "scheduler-emulator-zone";  /* the remembered choice of zone */
  var state = {
    view: "timeline", clock: null, token: sessionStorage.getItem("scheduler-emulator-token") || "",
    zone: localStorage.getItem(ZONE_KEY) || "utc", asOf: null /* the job whose "as of" form is open */,
    jobsOffset: 0, jobsPage: 50, lanesOffset: 0, lanesPage: 50,
    windowEnd: null, /* null: follow the clock */ busy: null, again: null, timer: null
  };
  function $(id) { return document.getElementById(id); }
  var openPanel = TL.panel($("details"), $("details-title"), $("details-close"));

  /* "YYYY-MM-DDTHH:MM:SS" of instant t (ms) in IANA zone `zone`. */
  function zoneWall(t, zone) { return TL.wallText(t, zone).slice(0, 19).replace(" ", "T"); }
  /* What "Move to" and "Run as if scheduled at" take, as RFC 3339: RFC 3339, or YYYY-MM-DD
   * HH:MM[:SS] (and the picker's YYYY-MM-DDTHH:MM[:SS]) read in IANA zone `zone` ("UTC", the
   * browser's, a job's) — of a local time that happens twice (a fall-back), the first not
   * before the clock (the second when both are before it); of one that never happens (a
   * spring-forward gap), the instant the clocks jump on (an hour on in most zones). */
  function instantText(text, zone) {
    var m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})(:\d{2})?(\.\d+)?$/.exec(text.trim());
    if (m && !realWall(m[1], m[2] + (m[3] || ":00"))) {  /* (trial 137: 02-30 rolled over) */
      status("Not a time: " + JSON.stringify(text.trim()) + " has no such date or time.", true);
      return null;
    }
    if (m && /^(Etc\/)?UTC$/.test(zone)) return m[1] + "T" + m[2] + (m[3] || ":00") + (m[4] || "") + "Z";
    if (m) {
      var wall = m[1] + "T" + m[2] + (m[3] || ":00"), t = Date.parse(wall + "Z");
      for (var i = 0; i < 2; i++) t += Date.parse(wall + "Z") - Date.parse(zoneWall(t, zone) + "Z");
      if (zoneWall(t, zone) !== wall) {  /* in a gap: read with the offset before the jump, so */
        var before = t - 6 * 3600000;    /* it lands past it (trial 201: -05:00 landed before) */
        t = Date.parse(wall + "Z") - (Date.parse(zoneWall(before, zone) + "Z") - before);
      }
      if (zoneWall(t - 3600000, zone) === zoneWall(t, zone)) t -= 3600000;  /* the first of two */
      var later = zoneWall(t + 3600000, zone) === zoneWall(t, zone) && t < Date.parse(state.clock.now);
      return new Date((later ? t + 3600000 : t) + Number("0" + (m[4] || ""))*1000).toISOString();
    }
    if (/^\d{4}-\d{2}-\d{2}T/.test(text.trim())) return text.trim();  /* RFC 3339: the server's */
    status("Not a time: " + JSON.stringify(text.trim()) + ". Type YYYY-MM-DD HH:MM[:SS] (" +
      zone + ") or RFC 3339, such as 2026-09-24T02:00:00Z or 2026-09-24T02:00:00-04:00.", true);
    return null;
  }

  /* Whether "YYYY-MM-DD" and "HH:MM:SS" name a day of the calendar and a time of the clock. */
  function realWall(day, time) {
    var d = day.split("-").map(Number), t = time.split(":").map(Number);
    var last = new Date(Date.UTC(d[0], d[1], 0)).getUTCDate();  /* the month's last day */
    return d[1] >= 1 && d[1] <= 12 && d[2] >= 1 && d[2] <= last && t[0] <= 23 && t[1] <= 59 &&
      t[2] <= 59;
  }

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
    return fetch(path, init).catch(function () {  /* no answer at all (trial 130) */
      state.down = true;
      throw new Error("The daemon at " + location.host + " does not answer (stopped or " +
        "restarting?): the page shows what it last read, and asks again every " + POLL_MS / 1000 + " s.");
    }).then(function (response) {
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
    $("token-refused").hidden = !state.token;  /* a token was sent, and refused */
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
    if (!state.clock && clock.mode === "system")  /* a live daemon: its last hour first (trials
      209, 209b: 6 hours squeezed a few minutes of runs against "now") */
      $("timeline-span").value = "3600";
    state.clock = clock;
    $("clock-mode").textContent = clock.mode === "manual" ? "manual clock" : "system clock";
    $("clock-mode").className = "badge clock-" + clock.mode;
    $("clock-now").textContent = TL.stamp(clock.now);
    /* what comes next, whichever job's (trial 163: found only by comparing the lanes) */
    var jobs = clock.nextDueJobs || [], count = clock.nextDueJobCount || 0;  /* and which (trial 172) */
    $("clock-next-due").textContent = clock.nextDue ? "next due " + TL.stamp(clock.nextDue) +
      (jobs.length ? ": " + jobs[0] + (count > 1 ? " +" + (count - 1) : "") : "") : "nothing due";
    $("clock-next-due").title = jobs.length ? "Due then: " + jobs.join(", ") +
      (count > jobs.length ? " and " + (count - jobs.length) + " more" : "") : "";
    /* Move-to times are UTC, or the browser's when times are shown in it (named beside). */
    var local = state.zone === "local", zone = local ? TL.browserZone() : "UTC";
    var picker = $("clock-moveto-picker");  /* follows the clock until the user picks a time */
    if (!picker.value || picker.value === picker.dataset.clock) {
      picker.value = zoneWall(Date.parse(clock.now), zone);
      picker.dataset.clock = picker.value;  /* as the browser keeps it (19:07, not 19:07:00) */
    }
    $("clock-moveto-zone").textContent = zone;
    picker.title = "Pick a date and time (" + zone + ")";
    $("clock-controls").hidden = clock.mode !== "manual";
    $("clock-moveto-input").placeholder = clock.now;
    $("clock-moveto-input").title = "YYYY-MM-DD HH:MM[:SS] (" + zone + ") or RFC 3339";
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
  function runAsOf(job, text) {
    var when = instantText(text, TL.zoneFor(job.timeZone));  /* (trial 130: it was UTC) */
    if (when === null) return;
    var shown = TL.stamp(when, job.timeZone);  /* in the zone typed in (trial 137: UTC) */
    status("Running " + job.id + " as if scheduled at " + shown + "…");
    request("POST", "/_emulator/runs", { job: job.name, scheduleTime: when })
      .then(function () {
        state.asOf = null;
        notice("Started a run of " + job.id + " as if scheduled at " + shown);
        state.jobsShown = null;
        return refresh();
      })
      .catch(function (e) { status(e.message, true); });
  }
  function asOfForm(job, actions) {
    var form = document.createElement("form");
    form.className = "run-as-of";
    form.setAttribute("data-testid", "job-run-as-of-form-" + job.id);
    var input = document.createElement("input");
    var zone = TL.zoneFor(job.timeZone);  /* as the job's times are shown */
    input.placeholder = "YYYY-MM-DD HH:MM (" + zone + ")";
    input.size = Math.max(24, input.placeholder.length);  /* (trial 137: "(Europe" cut) */
    input.title = "RFC 3339, or YYYY-MM-DD HH:MM[:SS] in " + zone;
    input.setAttribute("data-testid", "job-run-as-of-input-" + job.id);
    var send = document.createElement("button");
    send.type = "submit";
    send.textContent = "Run";
    send.setAttribute("data-testid", "job-run-as-of-send-" + job.id);
    form.appendChild(input);
    form.appendChild(send);
    form.addEventListener("submit", function (event) { event.preventDefault(); runAsOf(job, input.value); });
    actions.appendChild(form);
  }
  /* The last attempt's reason, as `attempts` and the run panel give it (the service's answer),
   * in `node`; the job's status text until it is read, once per attempt (trials 126, 130). */
  function lastReason(job, node) {
    /* the attempt's reason, as attempts and the run panel give it, whole in the tooltip: three
     * lines show (trial 163: it was the short status text) */
    var reason = node.title = job.lastAttempt.reason || job.lastAttempt.message;
    var parts = reason.split(" — emulator's hint: ");  /* the hint first: three lines show, and a
       long answer hid it (trial 225) */
    TL.breakable(node, parts.length === 2 ? "emulator's hint: " + parts[1] + " — " + parts[0] : reason);
  }
  function jobAction(job, verb) {
    var path = "/v1/" + job.name + (verb === "delete" ? "" : ":" + verb);
    if (verb === "delete" && !window.confirm("Delete job " + job.id + "? Its lane leaves the timeline; its runs " +
      "and attempts stay in the history (scheduler-emulator runs --job " + job.id + ").")) return;
    status((verb === "run" ? "Running " : verb.charAt(0).toUpperCase() + verb.slice(1) + " ") + job.id + "…");
    var retrying = verb === "pause" && job.nextAttemptTime;  /* the scheduled run's (trial 170) */
    request(verb === "delete" ? "DELETE" : "POST", path, verb === "delete" ? undefined : {})
      .then(function (answer) {
        if (verb === "resume") {  /* as the CLI's resume says (trial 103) */
          return answer && answer.scheduleTime ? "; next run at " + TL.stamp(answer.scheduleTime) : "";
        }
        if (verb !== "run") return "";
        /* what the forced run sent: the job's next scheduled time (as the CLI's run says) */
        return request("GET", "/_emulator/runs" + query({ job: job.name, pageSize: 5 }))
          .then(function (page) {
            var run = page.runs.filter(function (r) { return r.forced; })[0];
            return !run ? "" : run.scheduleTime ? ", sending ScheduleTime " + run.scheduleTime :
              ", sending no ScheduleTime";
          });
      })
      .then(function (sent) {
        if (verb === "run" && job.state === "PAUSED") sent += " (the job is PAUSED: a forced run goes anyway)";
        notice({ run: "Started a run of ", pause: "Paused ", resume: "Resumed ",
                 "delete": "Deleted " }[verb] + job.id + sent +
               (retrying ? " (its pending retry is dropped: the run gave up)" : ""));
        return refresh();
      })
      .catch(function (e) { status(e.message, true); });
  }
  function renderJobs(data) {
    var body = $("jobs-body");
    body.textContent = "";
    if (!data.jobs.length) {  /* as the terminal's "(no jobs)" */
      var none = cell(document.createElement("tr"), "No jobs" +
        ($("jobs-filter-name").value || $("jobs-filter-state").value ? " match." : " yet."), "sub");
      none.colSpan = 7;
      none.setAttribute("data-testid", "jobs-none");
      body.appendChild(none.parentNode);
    }
    data.jobs.forEach(function (job) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-testid", "job-row-" + job.id);
      var name = cell(tr);
      name.appendChild(document.createTextNode(job.id));
      if (job.description) name.title = job.description;
      var sub = document.createElement("div");
      sub.className = "sub";
      TL.breakable(sub, job.name.replace(/\/jobs\/[^/]*$/, ""));
      name.appendChild(sub);
      var sched = cell(tr);
      sched.appendChild(document.createTextNode(job.scheduleText));
      var subS = document.createElement("div");
      subS.className = "sub";  /* an English-like schedule reads as itself: not twice (225) */
      subS.textContent = (job.schedule === job.scheduleText ? "" : job.schedule + " · ") +
        job.timeZone;
      sched.appendChild(subS);
      TL.breakable(cell(tr, undefined, "sub target"), job.target);
      var st = cell(tr, job.state, "state " + job.state);
      st.setAttribute("data-testid", "job-state-" + job.id);
      var last = cell(tr);
      if (job.lastAttempt) {
        var code = document.createElement("span");
        var pending = job.lastAttempt.code === null;  // its target has not answered yet
        code.className = pending ? "code-pending" : job.lastAttempt.code === "OK" ? "code-ok" : "code-bad";
        TL.breakable(code, pending ? "in flight" : job.lastAttempt.code);  /* FAILED_PRECONDITION
          pushed the actions past an 800 px window (trial 80) */
        last.appendChild(code);
        if (job.lastAttempt.message && !pending && job.lastAttempt.code !== "OK") {
          var reason = document.createElement("div");  /* why it failed, not only its code */
          reason.className = "sub last-reason";
          reason.setAttribute("data-testid", "job-reason-" + job.id);
          lastReason(job, reason);
          last.appendChild(reason);
        }
        var when = document.createElement("div");
        when.className = "sub";
        when.textContent = TL.stamp(job.lastAttempt.time, job.timeZone);
        last.appendChild(when);
      } else {
        last.textContent = "none yet";
        last.className = "sub";
      }
      var times = cell(tr, "", "times");
      times.setAttribute("data-testid", "job-times-" + job.id);
      var zone = TL.zoneFor(job.timeZone);  /* the zone "Times in" chose */
      times.textContent = job.nextFireTimes.length ? job.nextFireTimes.map(function (t) {
        return TL.wallText(Date.parse(t), zone);
      }).join("\n") : (job.state === "PAUSED" ? "paused" : "—");
      var pendingRun = (data.pending || {})[job.name];
      if (pendingRun) {  /* a pending retry, above the schedule times (not one of them): next */
        var retry = document.createElement("div");
        retry.className = "pending-retry";
        retry.setAttribute("data-testid", "job-pending-" + job.id);
        retry.textContent = TL.retryText(pendingRun) + (pendingRun.forced ? " (forced run)" : "") + " at " +
          TL.wallText(Date.parse(pendingRun.nextAttemptTime), zone);
        retry.title = TL.retryText(pendingRun) + " of run " + pendingRun.id + " at " +
          TL.wallText(Date.parse(pendingRun.nextAttemptTime), zone) + " " + zone;
        times.insertBefore(retry, times.firstChild);
      }
      if (job.delayedRunTime) {  /* a time missed while its run went on: it runs as that ends */
        var late = document.createElement("div");
        late.className = "pending-retry";
        late.setAttribute("data-testid", "job-late-" + job.id);
        late.textContent = (pendingRun ? "then " : "") +
          TL.wallText(Date.parse(job.delayedRunTime), zone) + ", late, as the run ends";
        late.title = "missed while the job's run went on; the later times it misses are skipped";
        times.insertBefore(late, pendingRun ? times.firstChild.nextSibling : times.firstChild);
      }
      if (state.zone !== "utc") {
        var zoneNote = document.createElement("div");
        zoneNote.className = "sub";
        zoneNote.setAttribute("data-testid", "job-zone-" + job.id);
        zoneNote.textContent = zone;
        times.appendChild(zoneNote);
      }
      var actions = cell(tr, undefined, "actions");
      actions.appendChild(button("Run now", "job-run-" + job.id, function () { jobAction(job, "run"); }));
      actions.appendChild(button("Run as if scheduled at…", "job-run-as-of-" + job.id, function () {
        state.asOf = state.asOf === job.id ? null : job.id;
        state.jobsShown = null;
        refresh();
      }));
      if (state.asOf === job.id) asOfForm(job, actions);
      if (job.state === "PAUSED")
        actions.appendChild(button("Resume", "job-resume-" + job.id, function () { jobAction(job, "resume"); }));
      else
        actions.appendChild(button("Pause", "job-pause-" + job.id, function () { jobAction(job, "pause"); }));
      actions.appendChild(button("Delete", "job-delete-" + job.id, function () { jobAction(job, "delete"); }, "danger"));
      body.appendChild(tr);
    });
    $("jobs-times-head").textContent = "Next fire times (" +
      { utc: "UTC", job: "each job's zone", local: "this browser's zone" }[state.zone] + ")";
    var first = data.totalSize ? state.jobsOffset + 1 : 0;
    $("jobs-page").textContent = first + "–" + (state.jobsOffset + data.jobs.length) + " of " + data.totalSize;
    $("jobs-prev").disabled = state.jobsOffset === 0;
    $("jobs-next").disabled = !data.nextPageToken;
  }
  function loadJobs() {
    var which = $("jobs-filter-state").value, failed = which === "failed";  /* (trial 172) */
    return request("GET", "/_emulator/jobs" + query({
      name: $("jobs-filter-name").value, state: failed ? "" : which, failed: failed ? "true" : "",
      pageSize: state.jobsPage, pageToken: state.jobsOffset || ""
    })).then(function (data) {
      /* the pending retries: one page of the runs still going, by job */
      return request("GET", "/_emulator/runs" + query({ state: "in-progress", pageSize: 1000 }))
        .then(function (runs) {
          data.pending = {};
          runs.runs.forEach(function (run) {  /* the first due (trial 170: the oldest run's won) */
            var kept = data.pending[run.job], due = Date.parse(run.nextAttemptTime);
            if (due && !(kept && Date.parse(kept.nextAttemptTime) <= due)) data.pending[run.job] = run;
          });
          return data;
        });
    }).then(function (data) {
      var key = JSON.stringify(data) + state.jobsOffset + state.zone + state.asOf;
      if (key === state.jobsShown) return;
      state.jobsShown = key;
      var focused = document.activeElement && document.activeElement.getAttribute("data-testid");
      var typed = focused && /^job-run-as-of-input-/.test(focused) ? document.activeElement.value : null;
      renderJobs(data);
      if (typed !== null) {  /* keep what is being typed across a redraw */
        var again = document.querySelector('[data-testid="' + focused + '"]');
        if (again) { again.value = typed; again.focus(); }
      }
    });
  }

  /* ------------------------------------------------------------------ timeline */
  function spanMs() { return Number($("timeline-span").value) * 1000; }
  /* The window: the span chosen up to a little after now (on a round time), plus an eighth of
     it ahead for what comes next (trial 81's 6 h window showed 14 minutes after now, and no
     next run); Earlier / Later move it by half the span. */
  function windowOf() {
    var end = state.windowEnd, ahead = spanMs() / 8;
    if (end === null) {
      var now = Date.parse(state.clock.now), pad = spanMs() / 24;
      end = Math.ceil((now + pad / 2) / pad) * pad;
    }
    return [end - spanMs(), end + ahead];
  }
  function showDetails(attempt, run, lane) {
    openPanel("Attempt " + attempt.attempt + " of run " + (attempt.runId || (run && run.id) || ""));
    $("details").setAttribute("data-showing", "attempt");
    $("details-body").textContent = "Loading…";
    request("GET", "/_emulator/attempts/" + attempt.id).then(function (full) {
      $("details-title").textContent = full.job.split("/").pop() + " · run " + full.runId + " · attempt " + full.attempt;
      TL.details($("details-body"), full, lane && lane.timeZone);
      if (attempt.duplicate) {  /* as the timeline's dot and the terminal views say (trial 80) */
        var first = (run && run.attempts || []).filter(function (a) {
          return a.responseStatus >= 200 && a.responseStatus < 300 && a.id !== attempt.id;
        })[0];
        var note = document.createElement("p");
        note.className = "detail-duplicate";
        note.setAttribute("data-testid", "detail-duplicate");
        note.textContent = "Duplicate delivery: the target had already answered 2xx" +
          (first ? " to attempt " + first.attempt : "") + " of this run.";
        $("details-body").insertBefore(note, $("details-body").firstChild);
      }
      if (run && lane) {  /* a narrow window leaves little of a run's bar to click: from here */
        var whole = button("Run " + run.id + ", all its attempts", "details-open-run",
          function () { showRun(run, lane); }, "open-run");
        $("details-body").insertBefore(whole, $("details-body").firstChild);
      }
      showExecution($("details-body"), full);
    }).catch(function (e) { $("details-body").textContent = e.message; });
  }
  /* The run view: the run as GET /_emulator/runs has it (its attempts whole, its state). */
  function showRun(run, lane) {
    openPanel(lane.id + " · run " + run.id);
    $("details").setAttribute("data-showing", "run");
    TL.runView($("details-body"), run, lane);  /* what the timeline knows, at once */
    state.shownRun = { run: run, lane: lane, drawn: null };
    return loadRun();
  }
  /* The open run view as GET /_emulator/runs has it now, drawn again when it changed: each
     refresh calls this, so a clock move or another zone shows in it (a trial's went stale). */
  function loadRun() {
    var shown = state.shownRun, run = shown.run, lane = shown.lane;
    return request("GET", "/_emulator/runs" + query({
      job: lane.job, scheduledAfter: run.nominalTime,
      scheduledBefore: new Date(Date.parse(run.nominalTime) + 1).toISOString(), pageSize: 100
    })).then(function (page) {
      var full = page.runs.filter(function (r) { return r.id === run.id; })[0];
      var key = JSON.stringify(full) + state.zone;
      if (!full || shown !== state.shownRun || !runShown() || key === shown.drawn) return;
      shown.drawn = key;
      TL.runView($("details-body"), full, lane, function (a) { showDetails(a, full, lane); });
      /* the execution its last such attempt started, as `runs` says it (trial 163: a run read
         "succeeded" whatever the execution did) */
      full.attempts.slice().reverse().some(function (a) { return showExecution($("details-body"), a); });
    }).catch(function (e) { status(e.message, true); });
  }
  function runShown() {
    return !$("details").hidden && $("details").getAttribute("data-showing") === "run";
  }
  /* An attempt answered by the Cloud Run Admin API (jobs/J:run): the execution it started, with
   * each task attempt's exit code and output (GET /_emulator/executions/<id>); false for another
   * attempt. */
  function showExecution(container, attempt) {
    var id = TL.executionId(attempt);
    if (!id) return false;
    var section = document.createElement("section");
    section.setAttribute("data-testid", "detail-execution");
    container.insertBefore(section, container.querySelector("h3"));  /* after the summary */
    request("GET", "/_emulator/executions/" + id).then(function (e) {
      TL.execution(section, e, id, "/_emulator/executions/" + id);
    }).catch(function (err) { section.textContent = "Cloud Run execution " + id + ": " + err.message; });
    return true;
  }
  function runFilter() {
    var which = $("timeline-filter-runs").value;
    if (!which) return null;
    return function (run) {
      if (which === "failed") return run.failedAttempts > 0;
      if (which === "execution-failed") {  /* its RunJob answered 200 (trial 225) */
        return !!run.execution && !/^(SUCCEEDED|RUNNING)$/.test(run.execution.state || "RUNNING");
      }
      if (which === "gave-up") return run.state === "gave up";
      return run.state === "retrying" || run.state === "in progress";
    };
  }
  function loadTimeline() {
    var w = windowOf();
    return request("GET", "/_emulator/timeline" + query({
      start: new Date(w[0]).toISOString(), end: new Date(w[1]).toISOString(),
      name: $("timeline-filter-name").value, pageSize: state.lanesPage,
      pageToken: state.lanesOffset || ""
    })).then(function (data) {
      var key = JSON.stringify(data) + $("timeline-filter-runs").value + state.zone +
        $("timeline").clientWidth;  /* drawn to the page's width: a resize draws it again */
      if (key === state.drawn) return;  /* nothing changed: keep the drawing (and the selection) */
      state.drawn = key;
      var svg = TL.draw($("timeline"), data, { onAttempt: showDetails, onRun: showRun,
        runFilter: runFilter(), named: !!$("timeline-filter-name").value });
      $("timeline-range").textContent = TL.stamp(data.start) + " → " + TL.stamp(data.end);
      var first = data.totalSize ? state.lanesOffset + 1 : 0;
      var drawn = svg.querySelectorAll(".tl-lane-group").length;
      $("timeline-page").textContent = "jobs " + first + "–" + (state.lanesOffset + data.lanes.length) +
        " of " + data.totalSize + (drawn < data.lanes.length ? " (" + drawn + " shown: the Runs filter)" : "");
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
        var fired = (plan.fired || [])[i] || 0;  /* (trial 225: had it fired at all?) */
        cell(tr, "fired for " + fired + " attempt" + (fired === 1 ? "" : "s"), "sub");
        table.appendChild(tr);
      });
      box.appendChild(table);
    });
  }

  /* ------------------------------------------------------------------ refresh */
  function refresh() {
    /* One refresh at a time; a call during one runs once more after it (a clock move must not be
       shown half: the clock read before it and the timeline after). */
    if (state.busy) {
      if (!state.again) state.again = state.busy.then(function () { state.again = null; return refresh(); });
      return state.again;
    }
    state.busy = request("GET", "/_emulator/clock").then(function (clock) {
      showClock(clock);
      if (state.view === "jobs") return loadJobs();
      if (state.view === "faults") return loadFaults();
      return loadTimeline();
    }).then(function () {
      if (state.shownRun && runShown()) return loadRun();
    }).then(function () {
      var keep = $("status").classList.contains("error") || /…$/.test($("status").textContent) ||
        Date.now() < state.noticeUntil;
      if (state.down) notice("The daemon answers again.");
      else if (!keep) status("Refreshed at " + TL.time(Date.now()) + " UTC (real time)");
      state.down = false;
    }).catch(function (e) { status(e.message, true); })
      .then(function () { state.busy = null; });
    return state.busy;
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
  window.addEventListener("resize", function () {  /* once the resizing settles */
    clearTimeout(state.resized);
    state.resized = setTimeout(refresh, 150);
  });
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
    var typed = $("clock-moveto-input").value.trim() || $("clock-moveto-picker").value;
    var when = instantText(typed, state.zone === "local" ? TL.browserZone() : "UTC");
    if (when !== null) clockAction("/_emulator/clock:moveTo", { time: when }, "Moved the clock to {now}");
  });
  $("clock-moveto-picker").addEventListener("change", function () {
    $("clock-moveto-input").value = $("clock-moveto-picker").value.replace("T", " ");
  });
  $("time-zone").value = state.zone;
  TL.setZone(state.zone);
  $("time-zone").addEventListener("change", function () {
    state.zone = $("time-zone").value;
    localStorage.setItem(ZONE_KEY, state.zone);
    TL.setZone(state.zone);
    $("clock-moveto-picker").value = $("clock-moveto-input").value = "";  /* read in the zone */
    state.drawn = state.jobsShown = null;
    refresh();
  });
  $("timeline-filter-runs").addEventListener("change", function () { refresh(); });
  $("timeline-span").addEventListener("change", function () { refresh(); });
  $("timeline-earlier").addEventListener("click", function () {
    state.windowEnd = windowOf()[0] + spanMs() / 2; refresh();
  });
  $("timeline-later").addEventListener("click", function () {
    state.windowEnd = windowOf()[0] + 3 * spanMs() / 2; refresh();
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
  $("token-form").addEventListener("submit", function (event) {
    event.preventDefault();
    state.token = $("token-input").value;
    sessionStorage.setItem("scheduler-emulator-token", state.token);
    $("token-dialog").hidden = true;
    notice("Using the token entered");  /* the 401 said before is over (a trial's stayed up) */
    refresh();
  });
  TL.legend($("legend"));
  show(location.hash.slice(1) || "timeline");
  /* Poll every POLL_MS, or, when a refresh takes long (a long window of a busy history),
     after four times its length: the page keeps the daemon busy a fifth of the time at most. */
  function poll() {
    var started = Date.now();
    (document.hidden ? Promise.resolve() : refresh()).then(function () {
      state.timer = setTimeout(poll, Math.max(POLL_MS, 4 * (Date.now() - started)));
    });
  }
  state.timer = setTimeout(poll, POLL_MS);
})();
