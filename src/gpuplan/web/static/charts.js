// gpuplan charts: inline SVG drawn from plain numbers (no library, nothing fetched).
(() => {
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function fmtGiB(x) {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

// Ticks for a log axis between lo and hi: 1-2-5 per decade.
function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo && v <= hi) out.push(v);
    }
  }
  return out;
}

function shortNumber(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(v >= 1e7 ? 0 : 1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(v >= 1e4 ? 0 : 1) + "k";
  return v >= 1 ? String(+v.toFixed(2)) : String(+v.toPrecision(2));
}

// The memory of one GPU as a stacked bar against the card's usable capacity, with the three levels.
// parts: [{name, gib, color}], levels: {allocated, reserved, device}, capacity: GiB or null.
function stackedBar(host, parts, levels, capacity) {
  host.replaceChildren();
  const W = 1000, H = 130, x0 = 10, barY = 34, barH = 34;
  const top = Math.max(levels.allocated, levels.device, capacity || 0) * 1.04 || 1;
  const sx = (g) => x0 + (g / top) * (W - 2 * x0);
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", class: "chart bar",
    "aria-label": `memory per GPU: device peak ${fmtGiB(levels.device)} GiB` +
      (capacity ? ` of ${fmtGiB(capacity)} GiB usable` : "")});
  root.appendChild(svg("rect", {x: x0, y: barY, width: W - 2 * x0, height: barH, class: "bar-bg"}));
  let at = 0;
  const segments = [...parts,
    {name: "allocator slack (reserved - allocated)", gib: levels.reserved - levels.allocated, cls: "slack"},
    {name: "outside the allocator (CUDA context, NCCL)", gib: levels.device - levels.reserved, cls: "outside"}];
  for (const p of segments) {
    if (!(p.gib > 0)) continue;
    const rect = svg("rect", {x: sx(at), y: barY, width: Math.max(sx(at + p.gib) - sx(at), 0.5), height: barH,
      class: "seg " + (p.cls || ""), fill: p.color || ""});
    rect.appendChild(svg("title", {}, `${p.name}: ${fmtGiB(p.gib)} GiB`));
    root.appendChild(rect);
    at += p.gib;
  }
  // the three levels, labelled below the bar (staggered when they crowd)
  let lastX = -1e9, row = 0;
  for (const [name, value] of [["allocated", levels.allocated], ["reserved", levels.reserved],
                               ["device", levels.device]]) {
    const x = sx(value);
    row = x - lastX < 150 ? row + 1 : 0;
    lastX = x;
    root.appendChild(svg("line", {x1: x, x2: x, y1: barY - 4, y2: barY + barH + 8 + 16 * row, class: "level"}));
    root.appendChild(svg("text", {x: x, y: barY + barH + 20 + 16 * row, class: "level-label",
      "text-anchor": x > W - 160 ? "end" : "start"}, `${name} ${fmtGiB(value)}`));
  }
  if (capacity) {
    const x = sx(capacity);
    root.appendChild(svg("line", {x1: x, x2: x, y1: 8, y2: barY + barH + 4, class: "capacity"}));
    root.appendChild(svg("text", {x: x, y: 22, class: "capacity-label", "text-anchor": x > W / 2 ? "end" : "start"},
      `usable ${fmtGiB(capacity)} GiB`));
  }
  host.appendChild(root);
}

// Setups as points: x = $ per million tokens, y = tokens/s (log-log); the Pareto front joined.
function scatter(host, setups, label) {
  host.replaceChildren();
  if (!setups.length) return;
  const W = 640, H = 320, L = 64, R = 16, T = 14, B = 44;
  const xs = setups.map((s) => s.usd_per_million_tokens), ys = setups.map((s) => s.tokens_per_s);
  const pad = (lo, hi) => [lo / 1.4, hi * 1.4];
  const [xlo, xhi] = pad(Math.min(...xs), Math.max(...xs));
  const [ylo, yhi] = pad(Math.min(...ys), Math.max(...ys));
  const sx = (v) => L + (Math.log(v / xlo) / Math.log(xhi / xlo)) * (W - L - R);
  const sy = (v) => H - B - (Math.log(v / ylo) / Math.log(yhi / ylo)) * (H - T - B);
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "chart scatter", role: "img",
    "aria-label": "cost against speed of the setups that fit"});
  for (const t of logTicks(xlo, xhi)) {
    root.appendChild(svg("line", {x1: sx(t), x2: sx(t), y1: T, y2: H - B, class: "grid"}));
    root.appendChild(svg("text", {x: sx(t), y: H - B + 16, "text-anchor": "middle", class: "tick"}, "$" + shortNumber(t)));
  }
  for (const t of logTicks(ylo, yhi)) {
    root.appendChild(svg("line", {x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: "grid"}));
    root.appendChild(svg("text", {x: L - 6, y: sy(t) + 4, "text-anchor": "end", class: "tick"}, shortNumber(t)));
  }
  root.appendChild(svg("text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "axis"},
    "$ per million tokens (log)"));
  root.appendChild(svg("text", {x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`,
    "text-anchor": "middle", class: "axis"}, "tokens/s (log)"));
  const front = setups.filter((s) => s.pareto).sort((a, b) => a.usd_per_million_tokens - b.usd_per_million_tokens);
  if (front.length > 1) {
    root.appendChild(svg("polyline", {class: "front",
      points: front.map((s) => `${sx(s.usd_per_million_tokens)},${sy(s.tokens_per_s)}`).join(" ")}));
  }
  setups.forEach((s, i) => {
    const dot = svg("circle", {cx: sx(s.usd_per_million_tokens), cy: sy(s.tokens_per_s), r: s.pareto ? 6 : 4.5,
      class: s.pareto ? "dot pareto" : "dot"});
    dot.appendChild(svg("title", {}, `#${i + 1} ${label(s)}`));
    root.appendChild(dot);
    root.appendChild(svg("text", {x: sx(s.usd_per_million_tokens) + 7, y: sy(s.tokens_per_s) - 6,
      class: "dot-label"}, String(i + 1)));
  });
  host.appendChild(root);
}

function tokens(v) {
  return v >= 1024 && v % 1024 === 0 ? `${v / 1024}k` : shortNumber(v);
}

// Device memory against context length (log-log), with each card's usable capacity as a horizontal line.
function curve(host, points, capacities, current, field) {
  host.replaceChildren();
  const pts = points.filter((p) => p.device_peak_gib !== null && p.device_peak_gib > 0);
  if (!pts.length) return;
  const W = 640, H = 320, L = 56, R = 190, T = 12, B = 44;
  const xlo = pts[0].tokens, xhi = pts[pts.length - 1].tokens;
  const gibs = pts.map((p) => p.device_peak_gib);
  const ylo = Math.min(...gibs, current && current.capacity ? current.capacity : Infinity) / 1.3;
  const yhi = Math.max(...gibs, current && current.capacity ? current.capacity : 0) * 1.3;
  const sx = (v) => L + (xhi > xlo ? Math.log2(v / xlo) / Math.log2(xhi / xlo) : 0.5) * (W - L - R);
  const sy = (g) => H - B - (Math.log(g / ylo) / Math.log(yhi / ylo)) * (H - T - B);
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, class: "chart curve", role: "img",
    "aria-label": `device memory against ${field}`});
  for (const t of logTicks(ylo, yhi)) {
    root.appendChild(svg("line", {x1: L, x2: W - R, y1: sy(t), y2: sy(t), class: "grid"}));
    root.appendChild(svg("text", {x: L - 6, y: sy(t) + 4, "text-anchor": "end", class: "tick"}, shortNumber(t)));
  }
  for (const p of pts) {
    if (Math.log2(p.tokens) % 1 !== 0) continue;
    root.appendChild(svg("text", {x: sx(p.tokens), y: H - B + 16, "text-anchor": "middle", class: "tick"},
      tokens(p.tokens)));
  }
  root.appendChild(svg("text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "axis"},
    `${field.replace(/_/g, " ")} (log scale)`));
  root.appendChild(svg("text", {x: 14, y: (T + H - B) / 2, transform: `rotate(-90 14 ${(T + H - B) / 2})`,
    "text-anchor": "middle", class: "axis"}, "device GiB per GPU (log)"));
  const shown = capacities.filter((c) => c.capacity_gib >= ylo && c.capacity_gib <= yhi)
    .sort((a, b) => a.capacity_gib - b.capacity_gib);
  const isMine = (c) => current && current.gpus && c.gpus.some((g) => current.gpus.includes(g));
  const mineY = shown.filter(isMine).map((c) => sy(c.capacity_gib));
  let lastY = 1e9;
  for (const c of shown) {
    const y = sy(c.capacity_gib), mine = isMine(c);
    root.appendChild(svg("line", {x1: L, x2: W - R, y1: y, y2: y, class: mine ? "cap cap-mine" : "cap"}));
    const crowded = lastY - y < 12 || mineY.some((m) => Math.abs(m - y) < 12);
    if (mine || !crowded) {
      const names = c.gpus.length > 1 ? `${c.gpus[0]} +${c.gpus.length - 1}` : c.gpus[0];
      const text = svg("text", {x: W - R + 4, y: y + 4, class: mine ? "cap-label cap-mine" : "cap-label"},
        `${fmtGiB(c.capacity_gib)}: ${mine ? current.gpus[0] : names}`);
      text.appendChild(svg("title", {}, c.gpus.join(", ")));
      root.appendChild(text);
      lastY = y;
    }
  }
  root.appendChild(svg("polyline", {class: "line",
    points: pts.map((p) => `${sx(p.tokens)},${sy(p.device_peak_gib)}`).join(" ")}));
  for (const p of pts) {
    const here = current && p.tokens === current.tokens;
    const dot = svg("circle", {cx: sx(p.tokens), cy: sy(p.device_peak_gib), r: here ? 6 : 3.5,
      class: here ? "dot here" : "dot"});
    dot.appendChild(svg("title", {}, `${p.tokens.toLocaleString()} tokens: ${fmtGiB(p.device_peak_gib)} GiB`));
    root.appendChild(dot);
  }
  host.appendChild(root);
}

window.gpuplanCharts = {stackedBar, scatter, curve, fmtGiB};
})();
