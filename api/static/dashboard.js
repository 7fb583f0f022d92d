// Turnout operations dashboard: polls /v1/ops/queues (admin key) and /v1/ops/health, draws
// everything from those two documents. The key comes from the URL fragment (#key=…, never
// sent to the server) or a prompt, and lives in this tab's sessionStorage.
"use strict";

(function () {
  const C = window.TurnoutCharts;
  const KEY_STORAGE = "turnout.adminKey";
  const QUEUE_COLORS = {
    router: "#5b8def", search: "#2fbf71", rag: "#a879ff", webhooks: "#ffa62b",
    embeddings: "#22c3e6", maintenance: "#8e98ab",
  };
  const params = new URLSearchParams(location.search);
  const REFRESH_MS = Math.max(1000, Number(params.get("refresh") || 5) * 1000);

  const state = { windowMin: 15, paused: false, timer: null, last: null, health: null, refreshes: 0 };

  // ---------------------------------------------------------------- key handling
  function takeKeyFromFragment() {
    const m = /(?:^#|&)key=([^&]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem(KEY_STORAGE, decodeURIComponent(m[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
  }
  const adminKey = () => sessionStorage.getItem(KEY_STORAGE);

  function askForKey(message) {
    const dialog = document.getElementById("key-dialog");
    const error = document.getElementById("key-error");
    error.hidden = !message;
    error.textContent = message || "";
    if (!dialog.open) dialog.showModal();
  }

  // ---------------------------------------------------------------- formatting
  const nf = new Intl.NumberFormat("en-US");
  const int = (v) => (v === null || v === undefined ? "–" : nf.format(v));
  function ms(v) {
    if (v === null || v === undefined) return "–";
    if (v === 0) return "0";
    if (v < 1) return v.toFixed(2) + " ms";
    if (v < 1000) return Math.round(v) + " ms";
    if (v < 60000) return (v / 1000).toFixed(v < 10000 ? 2 : 1) + " s";
    return (v / 60000).toFixed(1) + " min";
  }
  const clockTime = (iso) => new Date(iso).toLocaleTimeString([], { hour12: false });

  function age(s) {
    if (s === null || s === undefined) return "–";
    if (s < 90) return Math.round(s) + "s";
    if (s < 5400) return Math.round(s / 60) + "m";
    return (s / 3600).toFixed(1) + "h";
  }

  function setMetric(name, value, text) {
    for (const node of document.querySelectorAll(`[data-metric="${name}"]`)) {
      node.dataset.value = value === null || value === undefined ? "" : String(value);
      node.textContent = text !== undefined ? text : typeof value === "number" ? C.compact(value) : String(value ?? "–");
      node.title = typeof value === "number" ? nf.format(value) : "";
    }
  }

  // ---------------------------------------------------------------- rendering
  function renderHealth(health) {
    const box = document.getElementById("health");
    box.textContent = "";
    const labels = { postgres: "PostgreSQL", redis: "Redis", vector_store: "Vector store", vectorStore: "Vector store",
      llm: "LLM endpoint", embeddings: "Embeddings" };
    for (const [name, check] of Object.entries(health.checks)) {
      const chip = document.createElement("div");
      chip.className = `chip ${check.status}`;
      chip.dataset.dependency = name;
      chip.dataset.status = check.status;
      chip.title = check.detail || "";
      const dot = document.createElement("span");
      dot.className = "dot";
      const label = document.createElement("span");
      label.className = "chip-name";
      label.textContent = labels[name] || name;
      const value = document.createElement("span");
      value.className = "chip-value";
      value.textContent = check.status === "up"
        ? (check.latencyMs !== null && check.latencyMs !== undefined ? ms(check.latencyMs) : "up")
        : check.status === "not_configured" ? "not configured" : "down";
      chip.append(dot, label, value);
      const live = name === "llm" && check.detail ? check.detail.split("router = ")[1] : undefined;
      if (live) {  // the local model's profile names the router that is live (fallback until it is ready)
        const router = document.createElement("span");
        router.className = "chip-value";
        router.dataset.metric = "router.live";
        router.textContent = `router: ${live.split(";")[0]}`;
        chip.append(router);
      }
      box.appendChild(chip);
    }
    const overall = document.getElementById("overall");
    overall.className = `pill ${health.status}`;
    setMetric("health.status", health.status, { ok: "all systems up", degraded: "degraded", down: "down" }[health.status]);
  }

  function sumQueues(summary, pick) {
    return summary.queues.reduce((acc, q) => acc + pick(q), 0);
  }

  function renderTiles(s) {
    const jobs = s.jobs.byStatus;
    setMetric("jobs.inflight", (jobs.queued || 0) + (jobs.running || 0));
    for (const k of ["queued", "running", "succeeded", "failed", "cancelled"]) setMetric(`jobs.${k}`, jobs[k] || 0);
    const finished5 = sumQueues(s, (q) => q.windows["5m"].succeeded + q.windows["5m"].failed + q.windows["5m"].retried);
    setMetric("tasks.perMinute", Math.round((finished5 / 5) * 10) / 10);
    setMetric("tasks.failed5m", sumQueues(s, (q) => q.windows["5m"].failed));
    setMetric("tasks.retried5m", sumQueues(s, (q) => q.windows["5m"].retried));
    setMetric("tasks.failed60m", sumQueues(s, (q) => q.windows["60m"].failed));
    setMetric("tasks.retried60m", sumQueues(s, (q) => q.windows["60m"].retried));
    const llm5 = s.llm.windows["5m"];
    setMetric("llm.tokensPerMinute", llm5.tokensPerMinute);
    setMetric("llm.callsPerMinute", llm5.callsPerMinute);
    setMetric("llm.totalTokens", s.llm.total.totalTokens);
    setMetric("llm.totalCalls", s.llm.total.calls);
    setMetric("limiter.waits5m", s.rateLimiter.waits5m);
    setMetric("limiter.waits60m", s.rateLimiter.waits60m);
    setMetric("limiter.p95", s.rateLimiter.p95WaitMs60m, ms(s.rateLimiter.p95WaitMs60m));
    const rel = s.reliability;
    const outcomes = {};
    for (const kind of Object.values(rel.llmCalls)) for (const [o, n] of Object.entries(kind)) outcomes[o] = (outcomes[o] || 0) + n;
    const total = (obj) => Object.values(obj).reduce((a, b) => a + b, 0);
    setMetric("reliability.llmErrors", total(outcomes) - (outcomes.ok || 0));
    setMetric("reliability.llmOutcomes", "", ["429", "5xx", "timeout", "unreachable", "rejected"].map((o) => `${o} ${outcomes[o] || 0}`).join(" · "));
    setMetric("reliability.retries", total(rel.llmRetries));
    setMetric("reliability.fallbacks", total(rel.fallbacks));
    setMetric("reliability.gaveUp", rel.rateLimiter.gave_up || 0);
    setMetric("reliability.restarts", total(rel.restarts));
    const last = rel.recentRestarts[0];
    setMetric("reliability.lastRestart", "", last ? `last: ${last.child} (${last.reason}) at ${clockTime(last.at)}` : "none yet");
    setMetric("reliability.cacheHit", rel.pageCache.hit || 0);
    setMetric("reliability.cacheMiss", rel.pageCache.miss || 0);
    setMetric("webhooks.pending", s.webhooks.pending);
    setMetric("webhooks.retrying", s.webhooks.retrying);
    setMetric("webhooks.dead", s.webhooks.dead);
    setMetric("webhooks.endpointsDisabled", s.webhooks.endpointsDisabled);
    setMetric("webhooks.endpointsFailing", s.webhooks.endpointsFailing);
    const alive = s.workers.filter((w) => w.alive).length;
    setMetric("workers.alive", alive);
    setMetric("workers.lost", s.workers.length - alive);
  }

  function queueSeries(s, pick, options) {
    return s.queues.map((q) => ({
      name: q.name, color: QUEUE_COLORS[q.name] || "#ccc",
      values: pick(s.series.queues[q.name]).slice(-state.windowMin), ...(options || {}),
    }));
  }

  function sumSeries(s, pick) {
    const n = s.series.minuteStarts.length;
    const out = new Array(n).fill(0);
    for (const q of Object.values(s.series.queues)) pick(q).forEach((v, i) => { out[i] += v || 0; });
    return out.slice(-state.windowMin);
  }

  // Merged p50 over all queues is not derivable from per-queue p50s; show the busiest queue's.
  function busiestP50(s) {
    const n = s.series.minuteStarts.length;
    const out = new Array(n).fill(null);
    for (let i = 0; i < n; i++) {
      let best = -1;
      for (const q of Object.values(s.series.queues)) {
        const done = q.succeeded[i] + q.failed[i] + q.retried[i];
        if (done > best && q.runP50Ms[i] !== null) { best = done; out[i] = q.runP50Ms[i]; }
      }
    }
    return out.slice(-state.windowMin);
  }

  function chart(id, kind, series, format, empty) {
    const s = state.last;
    const times = s.series.minuteStarts.slice(-state.windowMin);
    C.legend(document.querySelector(`[data-legend-for="${id}"]`), series);
    C.render(document.getElementById(`chart-${id}`), { id, kind, times, series, format, empty, label: id });
  }

  function renderCharts() {
    const s = state.last;
    if (!s) return;
    const depth = queueSeries(s, (q) => q.depth);
    const busy = depth.filter((x) => x.values.some((v) => v > 0));
    chart("depth", "line", busy.length ? busy : depth, C.compact, "no depth samples yet");
    const throughput = queueSeries(s, (q) => q.succeeded.map((v, i) => v + q.failed[i] + q.retried[i]))
      .filter((x) => x.values.some((v) => v > 0));
    chart("throughput", "bar", throughput.length ? throughput : queueSeries(s, (q) => q.succeeded).slice(0, 1),
      C.compact, "no tasks finished in this window");
    const p95 = queueSeries(s, (q) => q.runP95Ms).filter((x) => x.values.some((v) => v !== null));
    const latency = [...p95, { name: "p50 (busiest)", color: "#dfe6f3", values: busiestP50(s), dashed: true }];
    chart("latency", "line", latency, ms, "no tasks ran in this window");
    chart("failures", "bar", [
      { name: "failed", color: "#ff5d5d", values: sumSeries(s, (q) => q.failed) },
      { name: "retried", color: "#ffb547", values: sumSeries(s, (q) => q.retried) },
    ], C.compact, "no failures or retries — good");
    chart("tokens", "bar", [
      { name: "input", color: "#5b8def", values: s.series.llmInputTokens.slice(-state.windowMin) },
      { name: "output", color: "#a879ff", values: s.series.llmOutputTokens.slice(-state.windowMin) },
    ], C.compact, "no LLM calls in this window");
    chart("webhooks", "bar", [
      { name: "delivered", color: "#2fbf71", values: s.series.webhookDelivered.slice(-state.windowMin) },
      { name: "failed", color: "#ff5d5d", values: s.series.webhookFailed.slice(-state.windowMin) },
    ], C.compact, "no webhook attempts in this window");
  }

  function cell(row, text, cls, metric, value) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    if (metric) {
      td.dataset.metric = metric;
      td.dataset.value = String(value);
    }
    row.appendChild(td);
    return td;
  }

  function renderQueues(s) {
    const body = document.getElementById("queue-rows");
    body.textContent = "";
    for (const q of s.queues) {
      const w5 = q.windows["5m"];
      const w60 = q.windows["60m"];
      const tr = document.createElement("tr");
      tr.dataset.queue = q.name;
      const name = cell(tr, "", "qname");
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.setProperty("--c", QUEUE_COLORS[q.name] || "#ccc");
      name.append(sw, document.createTextNode(q.name));
      cell(tr, int(q.depth), "num" + (q.depth > 0 ? " strong" : ""), `queue.${q.name}.depth`, q.depth);
      cell(tr, int(q.reserved), "num", `queue.${q.name}.reserved`, q.reserved);
      cell(tr, age(q.oldestMessageAgeS), "num" + (q.oldestMessageAgeS > 60 ? " warn" : ""));
      const workers = cell(tr, "", "workers", `queue.${q.name}.consumersAlive`, q.consumersAlive);
      if (!q.consumers.length) {
        const none = document.createElement("span");
        none.className = "bad";
        none.textContent = "none";
        workers.appendChild(none);
      }
      for (const c of q.consumers) {
        const dot = document.createElement("span");
        dot.className = "wdot " + (c.alive ? "alive" : "lost");
        dot.title = `${c.hostname} · heartbeat ${age(c.lastSeenS)} ago`;
        workers.appendChild(dot);
      }
      cell(tr, String(w5.tasksPerMinute), "num", `queue.${q.name}.tasksPerMinute`, w5.tasksPerMinute);
      cell(tr, `${ms(w5.runTime.p50Ms)} / ${ms(w5.runTime.p95Ms)}`, "num");
      cell(tr, `${ms(w5.queueWait.p50Ms)} / ${ms(w5.queueWait.p95Ms)}`, "num");
      const failed = cell(tr, `${w5.failed} / ${w60.failed}`, "num" + (w5.failed ? " bad" : ""));
      failed.dataset.metric = `queue.${q.name}.failed`;
      failed.dataset.value = `${w5.failed}/${w60.failed}`;
      const retried = cell(tr, `${w5.retried} / ${w60.retried}`, "num" + (w5.retried ? " warn" : ""));
      retried.dataset.metric = `queue.${q.name}.retried`;
      retried.dataset.value = `${w5.retried}/${w60.retried}`;
      tr.dataset.succeeded5m = String(w5.succeeded);
      body.appendChild(tr);
    }
  }

  function renderReembed(s) {
    const run = s.reembed;
    const bar = document.getElementById("reembed-bar");
    if (!run) {
      setMetric("reembed.status", "", "no run yet");
      for (const k of ["processed", "total", "percent", "rate", "eta"]) setMetric(`reembed.${k}`, "", "–");
      bar.style.width = "0%";
      document.getElementById("reembed-model").textContent = "";
      return;
    }
    const processed = run.done + run.failed;
    setMetric("reembed.status", run.status, run.status);
    document.getElementById("reembed-status").className = `hint pill ${run.status}`;
    setMetric("reembed.processed", processed, int(processed));
    setMetric("reembed.total", run.total, int(run.total));
    setMetric("reembed.percent", run.progress, (run.progress * 100).toFixed(1) + "%");
    setMetric("reembed.rate", run.ratePerS, run.ratePerS === null ? "–" : `${C.compact(run.ratePerS)}/s`);
    setMetric("reembed.eta", run.etaS, run.status === "running" || run.status === "queued" ? age(run.etaS) : "done");
    bar.style.width = (run.progress * 100).toFixed(2) + "%";
    bar.className = "bar " + run.status;
    document.getElementById("reembed-model").textContent =
      `model ${run.model} → ${run.collection} · ${int(run.failed)} failed · chunks: ${int(run.chunksEmbedded)} embedded, ` +
      `${int(run.chunksSkipped)} unchanged`;
  }

  function renderFailures(s) {
    const list = document.getElementById("failures");
    list.textContent = "";
    if (!s.recentFailures.length) {
      const li = document.createElement("li");
      li.className = "muted";
      li.textContent = "none recorded";
      list.appendChild(li);
      return;
    }
    for (const f of s.recentFailures.slice(0, 6)) {
      const li = document.createElement("li");
      const when = document.createElement("span");
      when.className = "when";
      when.textContent = clockTime(f.at);
      const what = document.createElement("span");
      what.className = "what";
      what.textContent = f.task.replace(/^turnout\./, "");
      const err = document.createElement("div");
      err.className = "err";
      err.textContent = f.error;
      li.append(when, what, err);
      list.appendChild(li);
    }
  }

  function renderWorkers(s) {
    const list = document.getElementById("workers");
    list.textContent = "";
    if (!s.workers.length) {
      const li = document.createElement("li");
      li.className = "bad";
      li.textContent = "no worker heartbeat seen: start `turnout worker`";
      list.appendChild(li);
    }
    for (const w of s.workers) {
      const li = document.createElement("li");
      li.dataset.worker = w.hostname;
      li.dataset.alive = String(w.alive);
      const dot = document.createElement("span");
      dot.className = "wdot " + (w.alive ? "alive" : "lost");
      const name = document.createElement("span");
      name.className = "wname";
      name.textContent = w.hostname;
      const seen = document.createElement("span");
      seen.className = "muted when";
      seen.textContent = w.alive ? `${age(w.lastSeenS)} ago` : `lost ${age(w.lastSeenS)} ago`;
      const queues = document.createElement("div");
      queues.className = "muted small";
      queues.textContent = (w.queues.join(", ") || "no queues") + (w.concurrency ? ` · ${w.concurrency} threads` : "");
      li.append(dot, name, seen, queues);
      list.appendChild(li);
    }
  }

  function render() {
    const s = state.last;
    renderTiles(s);
    renderQueues(s);
    renderWorkers(s);
    renderReembed(s);
    renderFailures(s);
    renderCharts();
    document.body.dataset.generatedAt = s.generatedAt;
    document.getElementById("updated").textContent =
      `updated ${clockTime(s.generatedAt)} · every ${REFRESH_MS / 1000}s`;
  }

  // ---------------------------------------------------------------- polling
  function banner(text) {
    const b = document.getElementById("banner");
    b.hidden = !text;
    b.textContent = text || "";
  }

  async function refresh() {
    const key = adminKey();
    if (!key) { askForKey(); return; }
    try {
      const [queues, health] = await Promise.all([
        fetch("queues", { headers: { Authorization: `Bearer ${key}` }, cache: "no-store" }),
        fetch("health", { cache: "no-store" }),
      ]);
      if (queues.status === 401 || queues.status === 403) {
        sessionStorage.removeItem(KEY_STORAGE);
        const body = await queues.json().catch(() => ({}));
        askForKey((body.error && body.error.message) || "this key was refused");
        return;
      }
      const healthDoc = await health.json();
      state.health = healthDoc;
      renderHealth(healthDoc);
      if (!queues.ok) {
        const body = await queues.json().catch(() => ({}));
        banner(`Cannot read queue figures: ${(body.error && body.error.message) || queues.status}`);
        return;
      }
      state.last = await queues.json();
      render();
      banner("");
      state.refreshes += 1;
      document.body.dataset.refreshes = String(state.refreshes);
      document.body.dataset.ready = "true";
    } catch (err) {
      banner(`Connection lost (${err.message}); retrying every ${REFRESH_MS / 1000}s. Showing the last figures.`);
    } finally {
      schedule();
    }
  }

  function schedule() {
    clearTimeout(state.timer);
    if (!state.paused && !document.hidden) state.timer = setTimeout(refresh, REFRESH_MS);
  }

  function setWindow(minutes) {
    state.windowMin = minutes;
    for (const b of document.querySelectorAll("[data-window]")) {
      b.classList.toggle("active", Number(b.dataset.window) === minutes);
    }
    renderCharts();
  }

  function init() {
    takeKeyFromFragment();
    setWindow(Number(params.get("window")) === 60 ? 60 : 15);
    for (const b of document.querySelectorAll("[data-window]")) {
      b.addEventListener("click", () => setWindow(Number(b.dataset.window)));
    }
    document.getElementById("pause").addEventListener("click", (ev) => {
      state.paused = !state.paused;
      ev.currentTarget.textContent = state.paused ? "Resume" : "Pause";
      ev.currentTarget.setAttribute("aria-pressed", String(state.paused));
      if (state.paused) clearTimeout(state.timer); else refresh();
    });
    document.getElementById("forget").addEventListener("click", () => {
      sessionStorage.removeItem(KEY_STORAGE);
      askForKey();
    });
    document.getElementById("key-form").addEventListener("submit", () => {
      const value = document.getElementById("key-input").value.trim();
      if (value) sessionStorage.setItem(KEY_STORAGE, value);
      refresh();
    });
    document.addEventListener("visibilitychange", () => { if (!document.hidden && !state.paused) refresh(); });
    let resizeTimer = null;
    window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(renderCharts, 150); });
    refresh();
  }

  document.addEventListener("DOMContentLoaded", init);
})();
