// What the dashboard's admin panels (jobs.js, usage.js) share: the admin key the dashboard keeps in
// this tab (dashboard.js), the refresh period, a GET with that key, and a table cell.
"use strict";

(function (global) {
  const KEY_STORAGE = "turnout.adminKey";
  const params = new URLSearchParams(location.search);
  const REFRESH_MS = Math.max(1000, Number(params.get("refresh") || 5) * 1000);
  const $ = (id) => document.getElementById(id);

  // The body of GET `path` with the admin key; null before the dashboard has the key (the next
  // tick tries again); an Error with the API's message otherwise.
  async function adminGet(path) {
    const key = sessionStorage.getItem(KEY_STORAGE);
    if (!key) return null;
    const response = await fetch(path, { headers: { Authorization: `Bearer ${key}` }, cache: "no-store" });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : `HTTP ${response.status}`);
    return body;
  }

  function cell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  global.TurnoutPanels = { REFRESH_MS, $, adminGet, cell };
})(window);
