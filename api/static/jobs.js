// Turnout dashboard, jobs view: recent jobs of every key (GET /v1/jobs?apiKeyId=*), a status
// filter and a question search, the owner's rating, each row opening the job's document and event timeline
// (GET /v1/admin/jobs/{id}). Uses the admin key the dashboard keeps in this tab (dashboard.js).
"use strict";

(function () {
  const { REFRESH_MS, $, adminGet: api, cell } = window.TurnoutPanels;  // panels.js
  const PAGE = 20;
  const SEARCH_DEBOUNCE_MS = 300;
  const state = { status: "", q: "", cursor: null, pages: 1, selected: null, timer: null, searchTimer: null };

  const when = (iso) => new Date(iso).toLocaleString([], { hour12: false });

  function listUrl(cursor) {
    const q = new URLSearchParams({ apiKeyId: "*", limit: String(PAGE) });
    if (state.status) q.append("status", state.status);
    if (state.q.trim()) q.set("q", state.q.trim());
    if (cursor) q.set("cursor", cursor);
    return `../jobs?${q}`;
  }

  function renderRows(items, append) {
    const body = $("job-rows");
    if (!append) body.textContent = "";
    for (const item of items) {
      const tr = document.createElement("tr");
      tr.dataset.jobId = item.id;
      tr.dataset.status = item.status;
      tr.classList.toggle("selected", item.id === state.selected);
      cell(tr, when(item.createdAt));
      const pill = document.createElement("span");
      pill.className = `pill ${item.status}`;
      pill.textContent = item.status;
      cell(tr, "").appendChild(pill);
      cell(tr, item.source);
      cell(tr, (item.resultSummary && item.resultSummary.tool) || "");
      cell(tr, item.question, "question");
      const rated = cell(tr, item.feedback ? item.feedback.rating : "", "rating");  // the owner's feedback
      if (item.feedback && item.feedback.comment) rated.title = item.feedback.comment;
      tr.addEventListener("click", () => openJob(item.id));
      body.appendChild(tr);
    }
    $("jobs-empty").hidden = body.children.length > 0;
  }

  async function load(append) {
    const view = $("jobs-view");
    try {
      const page = await api(listUrl(append ? state.cursor : null));
      if (page === null) return;
      renderRows(page.items, append);
      state.cursor = page.nextCursor;
      state.pages = append ? state.pages + 1 : 1;
      $("jobs-more").hidden = !page.nextCursor;
      $("jobs-error").hidden = true;
      view.dataset.loads = String(Number(view.dataset.loads) + 1);
      view.dataset.query = listUrl(null);
    } catch (err) {
      $("jobs-error").textContent = String(err.message || err);
      $("jobs-error").hidden = false;
    }
  }

  function describe(event) {
    const data = event.data || {};
    if (event.kind === "answer_delta") return "";
    const parts = Object.entries(data).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => `${k}=${v}`);
    return parts.join(" ");
  }

  async function openJob(jobId) {
    state.selected = jobId;
    for (const tr of document.querySelectorAll("#job-rows tr")) tr.classList.toggle("selected", tr.dataset.jobId === jobId);
    try {
      const view = await api(`../admin/jobs/${encodeURIComponent(jobId)}`);
      if (view === null) return;
      const detail = $("job-detail");
      $("job-detail-title").textContent = view.job.id;
      $("job-detail-status").className = `pill ${view.job.status}`;
      $("job-detail-status").textContent = view.job.status;
      const timeline = $("job-timeline");
      timeline.textContent = "";
      for (const event of view.events) {
        const li = document.createElement("li");
        li.dataset.kind = event.kind;
        li.dataset.eventId = String(event.id);
        const at = document.createElement("span");
        at.className = "at";
        at.textContent = new Date(event.at).toLocaleTimeString([], { hour12: false });
        li.append(at, `${event.kind} ${describe(event)}`.trim());
        timeline.appendChild(li);
      }
      if (view.eventsTruncated) timeline.insertAdjacentHTML("beforeend", "<li class=\"muted\">…</li>");
      $("job-document").textContent = JSON.stringify(view.job, null, 2);
      detail.dataset.jobId = view.job.id;
      detail.hidden = false;
    } catch (err) {
      $("jobs-error").textContent = String(err.message || err);
      $("jobs-error").hidden = false;
    }
  }

  function schedule() {
    clearTimeout(state.timer);
    state.timer = setTimeout(async () => {
      if (!document.hidden && state.pages === 1) await load(false);  // a longer list is left as it was read
      schedule();
    }, REFRESH_MS);
  }

  function init() {
    for (const b of document.querySelectorAll("[data-job-status]")) {
      b.addEventListener("click", () => {
        state.status = b.dataset.jobStatus;
        for (const other of document.querySelectorAll("[data-job-status]")) other.classList.toggle("active", other === b);
        load(false);
      });
    }
    $("job-search").addEventListener("input", (ev) => {
      state.q = ev.currentTarget.value;
      clearTimeout(state.searchTimer);
      state.searchTimer = setTimeout(() => load(false), SEARCH_DEBOUNCE_MS);
    });
    $("job-filters").addEventListener("submit", (ev) => { ev.preventDefault(); load(false); });
    $("jobs-more").addEventListener("click", () => load(true));
    load(false);
    schedule();
  }

  document.addEventListener("DOMContentLoaded", init);
})();
