// Small SVG time-series charts for the operations dashboard: lines (gaps for missing data)
// and stacked bars, with axes, grid, legend and a hover read-out. No dependencies.
"use strict";

(function (global) {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const PAD = { top: 10, right: 14, bottom: 24, left: 52 };

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG_NS, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  }

  // A "nice" axis: 0..max in about four steps of 1, 2, 2.5 or 5 times a power of ten.
  function niceTicks(max) {
    if (!(max > 0)) return { top: 1, step: 0.25 };
    const rough = max / 4;
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough);
    return { top: Math.ceil(max / step) * step, step };
  }

  function compact(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k";
    if (a >= 10 || Number.isInteger(v)) return String(Math.round(v));
    return v.toFixed(1);
  }

  function clock(epochS) {
    const d = new Date(epochS * 1000);
    return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
  }

  // spec: {id, kind: "line"|"bar", times: [epoch s], series: [{name, color, values, dashed}],
  //        format: v => string (axis/tooltip), empty: "text when there is nothing to draw"}
  function render(container, spec) {
    const width = Math.max(container.clientWidth, 200);
    const height = Math.max(container.clientHeight, 120);
    const n = spec.times.length;
    const fmt = spec.format || compact;
    container.textContent = "";
    container.classList.add("chart");

    const svg = el("svg", {
      viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
      "aria-label": spec.label || spec.id, "data-chart": spec.id, "data-kind": spec.kind,
    }, container);
    const plotW = width - PAD.left - PAD.right;
    const plotH = height - PAD.top - PAD.bottom;
    const slot = plotW / Math.max(n, 1);
    const xAt = (i) => PAD.left + slot * (i + 0.5);

    let max = 0;
    if (spec.kind === "bar") {
      for (let i = 0; i < n; i++) {
        let sum = 0;
        for (const s of spec.series) sum += s.values[i] || 0;
        max = Math.max(max, sum);
      }
    } else {
      for (const s of spec.series) for (const v of s.values) if (v !== null && v > max) max = v;
    }
    const ticks = niceTicks(max);
    const yAt = (v) => PAD.top + plotH - (v / ticks.top) * plotH;

    // Grid and axes.
    const grid = el("g", { class: "grid" }, svg);
    for (let v = 0; v <= ticks.top + ticks.step / 2; v += ticks.step) {
      el("line", { x1: PAD.left, x2: width - PAD.right, y1: yAt(v), y2: yAt(v) }, grid);
      const label = el("text", { x: PAD.left - 8, y: yAt(v) + 4, "text-anchor": "end", class: "axis" }, grid);
      label.textContent = fmt(v);
    }
    const every = n > 30 ? 10 : n > 10 ? 5 : 1;
    for (let i = 0; i < n; i++) {
      const fromEnd = n - 1 - i;
      if (fromEnd % every !== 0) continue;
      const label = el("text", { x: xAt(i), y: height - 6, "text-anchor": "middle", class: "axis" }, grid);
      label.textContent = clock(spec.times[i]);
    }

    let points = 0;
    const plot = el("g", { class: "plot" }, svg);
    if (spec.kind === "bar") {
      const base = new Array(n).fill(0);
      const barW = Math.max(Math.min(slot * 0.72, 28), 1.5);
      for (const s of spec.series) {
        const g = el("g", { "data-series": s.name, fill: s.color }, plot);
        g.setAttribute("data-values", JSON.stringify(s.values));
        for (let i = 0; i < n; i++) {
          const v = s.values[i] || 0;
          if (v <= 0) continue;
          const y0 = yAt(base[i]);
          const y1 = yAt(base[i] + v);
          el("rect", { x: xAt(i) - barW / 2, y: y1, width: barW, height: Math.max(y0 - y1, 1), rx: 1.5 }, g);
          base[i] += v;
          points++;
        }
      }
    } else {
      const has = (s, i) => i >= 0 && i < n && s.values[i] !== null && s.values[i] !== undefined;
      for (const s of spec.series) {
        let d = "";
        let pen = false;
        let last = null;
        for (let i = 0; i < n; i++) {
          const v = s.values[i];
          if (!has(s, i)) { pen = false; continue; }
          d += (pen ? "L" : "M") + xAt(i).toFixed(1) + " " + yAt(v).toFixed(1) + " ";
          pen = true;
          last = i;
          points++;
          // A lone sample has no segment to draw: mark it so it is still visible.
          if (!has(s, i - 1) && !has(s, i + 1) && i !== n - 1) {
            el("circle", { cx: xAt(i), cy: yAt(v), r: 2.5, fill: s.color }, plot);
          }
        }
        const path = el("path", {
          d: d.trim(), fill: "none", stroke: s.color, "stroke-width": 2, "stroke-linejoin": "round",
          "stroke-linecap": "round", "data-series": s.name,
        }, plot);
        if (s.dashed) path.setAttribute("stroke-dasharray", "5 4");
        path.setAttribute("data-values", JSON.stringify(s.values));
        if (last !== null) {
          el("circle", { cx: xAt(last), cy: yAt(s.values[last]), r: 3, fill: s.color, "data-series": s.name }, plot);
        }
      }
    }
    svg.setAttribute("data-points", String(points));
    if (points === 0 && spec.empty) {
      const t = el("text", { x: PAD.left + plotW / 2, y: PAD.top + plotH / 2, "text-anchor": "middle",
        class: "empty" }, svg);
      t.textContent = spec.empty;
    }

    // Hover read-out: a crosshair on the nearest minute and its values.
    const cross = el("line", { class: "cross", y1: PAD.top, y2: PAD.top + plotH, visibility: "hidden" }, svg);
    const tip = document.createElement("div");
    tip.className = "tip";
    tip.hidden = true;
    container.appendChild(tip);
    const overlay = el("rect", { x: PAD.left, y: PAD.top, width: plotW, height: plotH, fill: "transparent" }, svg);
    overlay.addEventListener("mousemove", (ev) => {
      const box = svg.getBoundingClientRect();
      const i = Math.min(n - 1, Math.max(0, Math.floor((ev.clientX - box.left - PAD.left) / slot)));
      cross.setAttribute("x1", xAt(i));
      cross.setAttribute("x2", xAt(i));
      cross.setAttribute("visibility", "visible");
      tip.textContent = "";
      const head = document.createElement("div");
      head.className = "tip-time";
      head.textContent = clock(spec.times[i]);
      tip.appendChild(head);
      for (const s of spec.series) {
        const row = document.createElement("div");
        const dot = document.createElement("span");
        dot.className = "dot";
        dot.style.background = s.color;
        row.appendChild(dot);
        row.appendChild(document.createTextNode(`${s.name}: ${fmt(s.values[i] ?? null)}`));
        tip.appendChild(row);
      }
      tip.hidden = false;
      const left = xAt(i) + 12;
      tip.style.left = (left + tip.offsetWidth > width ? xAt(i) - tip.offsetWidth - 12 : left) + "px";
      tip.style.top = PAD.top + "px";
    });
    overlay.addEventListener("mouseleave", () => {
      cross.setAttribute("visibility", "hidden");
      tip.hidden = true;
    });
    return svg;
  }

  function legend(container, series) {
    container.textContent = "";
    for (const s of series) {
      const item = document.createElement("span");
      item.className = "legend-item";
      const swatch = document.createElement("span");
      swatch.className = "swatch" + (s.dashed ? " dashed" : "");
      swatch.style.setProperty("--c", s.color);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(s.name));
      container.appendChild(item);
    }
  }

  global.TurnoutCharts = { render, legend, compact, clock, niceTicks };
})(window);
