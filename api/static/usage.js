// Turnout dashboard, usage panel: every key's LLM spend this month by day and model, and the keys'
// budgets (GET /v1/usage with the admin key the dashboard keeps in this tab, dashboard.js).
"use strict";

(function () {
  const { REFRESH_MS, $, adminGet, cell } = window.TurnoutPanels;  // panels.js
  const usd = (v) => (v === null || v === undefined ? "–" : `$${Number(v).toFixed(6)}`);
  const count = (v) => Number(v).toLocaleString("en");
  const resets = (iso) => new Date(iso).toISOString().slice(0, 16).replace("T", " ") + "Z";

  function period(p) {
    const parts = [];
    if (p.limitUsd !== null || p.spentUsd > 0) {
      const held = p.heldUsd > 0 ? ` (+${usd(p.heldUsd)} held)` : "";
      parts.push(p.limitUsd === null ? `${usd(p.spentUsd)}${held}` : `${usd(p.spentUsd)}${held} of ${usd(p.limitUsd)}`);
    }
    if (p.limitTokens !== null) parts.push(`${count(p.spentTokens)} of ${count(p.limitTokens)} tokens`);
    if (p.limitUsd !== null || p.limitTokens !== null) parts.push(`resets ${resets(p.resetAt)}`);
    return parts.join(" · ") || "no limit";
  }

  function render(report) {
    $("usage-cost").textContent = usd(report.totals.costUsd);
    $("usage-calls").textContent = count(report.totals.calls);
    $("usage-input").textContent = count(report.totals.inputTokens);
    $("usage-output").textContent = count(report.totals.outputTokens);
    const rows = $("usage-rows");
    rows.textContent = "";
    for (const d of [...report.days].reverse()) {  // newest day first
      const tr = document.createElement("tr");
      tr.dataset.key = d.apiKeyId;
      tr.dataset.day = d.date;
      tr.dataset.model = d.model;
      for (const [text, cls] of [[d.date], [d.apiKeyId], [d.model], [count(d.calls), "num"],
        [count(d.inputTokens), "num"], [count(d.outputTokens), "num"], [usd(d.costUsd), "num"]]) cell(tr, text, cls);
      rows.appendChild(tr);
    }
    $("usage-empty").hidden = report.days.length > 0;
    const spent = new Set(report.days.map((d) => d.apiKeyId));
    const budgets = $("budget-rows");
    budgets.textContent = "";
    for (const b of report.budgets) {
      const limited = [b.day, b.month].some((p) => p.limitUsd !== null || p.limitTokens !== null);
      if (!limited && !spent.has(b.apiKeyId)) continue;  // an idle key without a budget says nothing
      const tr = document.createElement("tr");
      tr.dataset.key = b.apiKeyId;
      tr.dataset.exceeded = String(b.day.exceeded || b.month.exceeded);
      cell(tr, b.apiKeyId);
      cell(tr, period(b.day), b.day.exceeded ? "exceeded" : "");
      cell(tr, period(b.month), b.month.exceeded ? "exceeded" : "");
      budgets.appendChild(tr);
    }
  }

  async function load() {
    const view = $("usage-view");
    try {
      const body = await adminGet("../usage");
      if (body === null) return;  // the dashboard asks for the key; the next tick tries again
      render(body);
      $("usage-error").hidden = true;
      view.dataset.loads = String(Number(view.dataset.loads) + 1);
    } catch (err) {
      $("usage-error").textContent = String(err.message || err);
      $("usage-error").hidden = false;
    }
  }

  function schedule() {
    setTimeout(async () => {
      if (!document.hidden) await load();
      schedule();
    }, REFRESH_MS);
  }

  document.addEventListener("DOMContentLoaded", () => { load(); schedule(); });
})();
