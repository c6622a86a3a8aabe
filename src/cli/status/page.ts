// The live status page: one static HTML document with its script inline (no framework, no chart
// library: each series is a tile with its number and an SVG line of its recent history). It polls
// /status.json once a second and updates the tiles in place; /healthz gives the store's latency.
// Kept as a string module so `tsc` ships it in dist/ with the CLI.

/** The page served at `/`. */
export const STATUS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>onceflow status</title>
<style>
  :root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --line: #0969da; --muted: #6e7781; }
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; }
  header { display: flex; gap: 1.5rem; align-items: baseline; flex-wrap: wrap; border-bottom: 1px solid #8884; padding: .8rem 0; }
  header h1 { font-size: 1.3rem; margin: 0; }
  #health.ok { color: var(--ok); } #health.down { color: var(--bad); }
  .muted { color: var(--muted); }
  section { margin-top: 1.2rem; }
  section h2 { font-size: 1rem; margin: 0 0 .4rem; }
  .tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: .6rem; }
  .tile { border: 1px solid #8884; border-radius: 6px; padding: .5rem .6rem; }
  .tile .label { font-size: 12px; color: var(--muted); overflow-wrap: anywhere; }
  .tile .value { font-size: 1.5rem; font-variant-numeric: tabular-nums; }
  .tile .rate { font-size: 12px; color: var(--muted); margin-left: .4rem; }
  .tile svg { display: block; width: 100%; height: 40px; }
  .tile svg path { fill: none; stroke: var(--line); stroke-width: 1.5; }
  .tile.good .value { color: var(--ok); } .tile.bad .value { color: var(--bad); }
  .tile.bad svg path { stroke: var(--bad); } .tile.good svg path { stroke: var(--ok); }
  .empty { color: var(--muted); font-style: italic; }
</style>
</head>
<body>
<header>
  <h1>onceflow status</h1>
  <span id="title" class="muted"></span>
  <span>store: <b id="store">?</b></span>
  <span id="health">health: ?</span>
  <span id="updated" class="muted">waiting for the first sample</span>
</header>
<main id="sections"></main>
<script>
// One function scope: a global named like a window property (history) would collide.
(function () {
"use strict";
// Sections in the order an operator reads them; a metric goes to the first whose pattern its name
// matches, the rest to "other".
var SECTIONS = [
  ["demo", "Settlement demo: doubles per guard (onceflow stays at zero)", /_demo_/],
  ["ledger", "Ledger outcomes", /ledger/],
  ["idempotency", "Idempotency", /idempotency/],
  ["limiter", "Limiter decisions", /limiter/],
  ["reorder", "Reorder gaps and compensator", /reorder|gap|compensator|adaptive|version_gate/],
  ["streams", "Stream lag, pending and dead letters", /stream|consumer|producer|dead_letter/],
  ["gateway", "Gateway connections", /gateway|_ws_/],
  ["store", "Store calls", /store/],
  ["other", "Other", /./]
];
// 120 samples at one a second: the last two minutes.
var HISTORY = 120;
var history = {};
var previous = {};
var main = document.getElementById("sections");

function sectionOf(name) {
  for (var i = 0; i < SECTIONS.length; i++) if (SECTIONS[i][2].test(name)) return SECTIONS[i];
  return SECTIONS[SECTIONS.length - 1];
}
function sectionEl(section) {
  var el = document.getElementById("section-" + section[0]);
  if (el) return el;
  el = document.createElement("section");
  el.id = "section-" + section[0];
  el.dataset.order = String(SECTIONS.indexOf(section));
  var h = document.createElement("h2");
  h.textContent = section[1];
  var tiles = document.createElement("div");
  tiles.className = "tiles";
  el.appendChild(h);
  el.appendChild(tiles);
  var after = null;
  for (var c = main.firstElementChild; c; c = c.nextElementSibling)
    if (Number(c.dataset.order) > Number(el.dataset.order)) { after = c; break; }
  main.insertBefore(el, after);
  return el;
}
function labelText(labels) {
  var parts = [];
  for (var k in labels) parts.push(k + "=" + labels[k]);
  return parts.length ? "{" + parts.join(", ") + "}" : "";
}
function format(v) {
  if (!isFinite(v)) return String(v);
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(2) + "M";
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + "k";
  return Number.isInteger(v) ? String(v) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toPrecision(3);
}
function sparkPath(points) {
  if (points.length < 2) return "M0,20 L100,20";
  var lo = Math.min.apply(null, points), hi = Math.max.apply(null, points);
  var span = hi - lo || 1;
  var d = "";
  for (var i = 0; i < points.length; i++) {
    var x = (i / (points.length - 1)) * 100;
    var y = 38 - ((points[i] - lo) / span) * 36;
    d += (i ? " L" : "M") + x.toFixed(2) + "," + y.toFixed(2);
  }
  return d;
}
// One number per series: a counter's or gauge's value; a histogram's count and mean.
function seriesOf(metric) {
  var out = [];
  if (metric.type === "histogram" || metric.type === "summary") {
    var groups = {};
    metric.values.forEach(function (v) {
      var labels = {};
      for (var k in v.labels) if (k !== "le" && k !== "quantile") labels[k] = v.labels[k];
      var key = labelText(labels);
      var g = groups[key] || (groups[key] = { labels: labels, sum: 0, count: 0 });
      if (v.metricName === metric.name + "_sum") g.sum = v.value;
      if (v.metricName === metric.name + "_count") g.count = v.value;
    });
    for (var key in groups) {
      var g = groups[key];
      out.push({ id: metric.name + "_count" + key, label: metric.name + "_count " + key, value: g.count, counter: true,
        note: g.count ? "mean " + format(g.sum / g.count) : "" });
    }
    return out;
  }
  metric.values.forEach(function (v) {
    var key = labelText(v.labels);
    out.push({ id: metric.name + key, label: metric.name + " " + key, value: v.value, counter: metric.type === "counter", note: "" });
  });
  return out;
}
function tileEl(section, s) {
  var id = "tile-" + s.id;
  var el = document.getElementById(id);
  if (el) return el;
  el = document.createElement("div");
  el.className = "tile";
  el.id = id;
  el.dataset.series = s.id;
  el.innerHTML = '<div class="label"></div><div><span class="value"></span><span class="rate"></span></div>' +
    '<svg viewBox="0 0 100 40" preserveAspectRatio="none"><path d=""></path></svg>';
  el.querySelector(".label").textContent = s.label;
  sectionEl(section).querySelector(".tiles").appendChild(el);
  return el;
}
function render(status) {
  document.getElementById("title").textContent = status.title;
  document.getElementById("store").textContent = status.store;
  var seen = 0;
  status.metrics.forEach(function (metric) {
    if (/^(process|nodejs)_/.test(metric.name)) return;
    var section = sectionOf(metric.name);
    seriesOf(metric).forEach(function (s) {
      seen++;
      var points = history[s.id] || (history[s.id] = []);
      points.push(s.value);
      if (points.length > HISTORY) points.shift();
      var el = tileEl(section, s);
      el.querySelector(".value").textContent = format(s.value);
      var last = previous[s.id];
      var rate = s.counter && last ? (s.value - last.value) / ((status.time - last.time) / 1000) : undefined;
      el.querySelector(".rate").textContent = (rate !== undefined && isFinite(rate) ? format(rate) + "/s " : "") + s.note;
      previous[s.id] = { value: s.value, time: status.time };
      el.querySelector("path").setAttribute("d", sparkPath(points));
      if (/_demo_doubled$/.test(metric.name)) el.className = "tile " + (s.value === 0 ? "good" : "bad");
    });
  });
  if (seen === 0 && !document.getElementById("nothing")) {
    var p = document.createElement("p");
    p.id = "nothing";
    p.className = "empty";
    p.textContent = "No onceflow metrics yet: they appear with the first events.";
    main.appendChild(p);
  } else if (seen > 0 && document.getElementById("nothing")) document.getElementById("nothing").remove();
  document.getElementById("updated").textContent = "updated " + new Date(status.time).toLocaleTimeString();
}
function poll() {
  fetch("status.json", { cache: "no-store" })
    .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error("status " + r.status)); })
    .then(render)
    .catch(function (e) { document.getElementById("updated").textContent = "cannot reach the server: " + e.message; });
  fetch("healthz", { cache: "no-store" })
    .then(function (r) { return r.json(); })
    .then(function (h) {
      var el = document.getElementById("health");
      el.className = h.ok ? "ok" : "down";
      el.textContent = h.ok ? "store answers in " + h.latencyMs.toFixed(1) + " ms" : "store down: " + h.error;
    })
    .catch(function () {
      var el = document.getElementById("health");
      el.className = "down";
      el.textContent = "health: unknown";
    });
}
poll();
setInterval(poll, 1000);
})();
</script>
</body>
</html>
`;
