// llmbench report.html: the charts are SVG drawn when the page was written (internal/chart);
// this script only shows the one chosen (metric, scale, level) and names the request under
// the pointer, from the JSON embedded in the page. Data only ever reaches the DOM through
// textContent, never as markup.
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("llmbench-data").textContent);
  var R = D.records || null;

  // ---- helpers -------------------------------------------------------------------------

  function isNum(v) { return typeof v === "number" && isFinite(v); }

  function fmt(v, unit) {
    if (!isNum(v)) return "—";
    var a = Math.abs(v), s;
    if (a >= 1000) s = v.toFixed(0);
    else if (a >= 100) s = v.toFixed(1);
    else if (a >= 10) s = v.toFixed(2);
    else s = v.toPrecision(3);
    return unit ? s + " " + unit : s;
  }

  // ---- throughput vs latency -------------------------------------------------------------
  // Drawn on the server as inline SVG (internal/chart), like plan.html's and
  // calibration.html's charts.

  // ---- percentiles by level ---------------------------------------------------------------

  // Each metric's chart is drawn on the server (internal/chart); the selector shows one.
  function percentiles() {
    var sel = document.getElementById("pct-metric");
    var metric = sel && sel.value ? sel.value : "ttft_ms";
    var title = sel && sel.selectedIndex >= 0 ? sel.options[sel.selectedIndex].text : metric;
    document.getElementById("pct-title").textContent = title + ": percentiles by level (ms)";
    document.querySelectorAll("#percentiles [data-pct]").forEach(function (d) { d.hidden = d.getAttribute("data-pct") !== metric; });
  }

  // ---- CDFs --------------------------------------------------------------------------------

  // The CDF charts are drawn on the server (internal/chart), on a linear and on a log
  // latency axis; the checkbox shows one.
  function cdfs() {
    var box = document.getElementById("cdf-log");
    var scale = box && box.checked ? "log" : "linear";
    document.querySelectorAll("#cdf [data-scale]").forEach(function (d) { d.hidden = d.getAttribute("data-scale") !== scale; });
  }

  // ---- request anatomy ---------------------------------------------------------------------

  var HOVER_HINT = "Hover a bar for its timings.";

  function anatomyShown() {
    var sel = document.getElementById("anatomy-level");
    return document.querySelector('#anatomy [data-anatomy="' + (sel ? sel.value : "") + '"]');
  }

  // Each level's timeline is drawn on the server (internal/chart); the selector shows one.
  function anatomy() {
    var shown = anatomyShown();
    document.querySelectorAll("#anatomy [data-anatomy]").forEach(function (d) { d.hidden = d !== shown; });
    document.getElementById("anatomy-hover").textContent = shown ? HOVER_HINT : "";
    if (!shown) return;
    document.getElementById("anatomy-info").textContent = shown.getAttribute("data-info");
    document.getElementById("anatomy-title").textContent = "Per-request timeline: " + shown.getAttribute("data-name");
  }

  function sampleOf(level) {
    var lv = R && R.levels ? R.levels.filter(function (l) { return String(l.level) === level; })[0] : null;
    return lv && lv.sample ? lv.sample : [];
  }

  // hover names the request under the pointer: the chart's data-plot and data-y map the
  // pointer to a row, data-rows a row to the level's sample, [index, scheduled, sent,
  // first|null, last|null, done, tokens, warmup, error|null, then, when measured, [dns,
  // connect, tls, write, headers]].
  function hover(e) {
    var out = document.getElementById("anatomy-hover"), shown = anatomyShown();
    var svg = shown ? shown.querySelector("svg[data-plot]") : null;
    if (!svg) return;
    var box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
    var p = svg.getAttribute("data-plot").split(" ").map(Number);
    var y = (e.clientY - box.top) * vb.height / box.height, x = (e.clientX - box.left) * vb.width / box.width;
    var rows = shown.getAttribute("data-rows").split(",").map(Number);
    if (x < p[0] || x > p[2] || y < p[1] || y > p[3] || !rows.length) { out.textContent = HOVER_HINT; return; }
    var k = Math.min(rows.length - 1, Math.floor((y - p[1]) / (p[3] - p[1]) * rows.length));
    var r = sampleOf(shown.getAttribute("data-anatomy"))[rows[k]];
    if (!r) return;
    var ms = function (a, b) { return isNum(a) && isNum(b) ? fmt((b - a) * 1000, "ms") : "—"; };
    var parts = ["request " + r[0] + (r[7] ? " (warm-up)" : ""), "sent at " + r[2].toFixed(3) + " s", "waited " + ms(r[1], r[2])];
    var ph = r[9];
    if (ph) ["DNS", "connect", "TLS", "write", "headers"].forEach(function (n, i) { if (isNum(ph[i])) parts.push(n + " " + fmt(ph[i] * 1000, "ms")); });
    if (r[8]) parts.push("failed: " + r[8] + " after " + ms(r[2], r[5]));
    else parts.push("TTFT " + ms(r[2], r[3]), "decode " + ms(r[3], r[4]), "E2EL " + ms(r[2], r[4]), r[6] + " output tokens");
    out.textContent = parts.join(" · ");
  }

  // ---- wiring ------------------------------------------------------------------------------

  function setupControls() {
    var sel = document.getElementById("anatomy-level");
    sel.addEventListener("change", anatomy);
    var plot = document.querySelector('figure[data-chart="anatomy"] .plot');
    plot.addEventListener("mousemove", hover);
    plot.addEventListener("mouseleave", function () { if (anatomyShown()) document.getElementById("anatomy-hover").textContent = HOVER_HINT; });
    document.getElementById("pct-metric").addEventListener("change", percentiles);

    var cdfSec = document.querySelector("#cdf .note");
    if (cdfSec) {
      var lab = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.id = "cdf-log";
      lab.appendChild(box);
      lab.appendChild(document.createTextNode(" logarithmic latency axis"));
      var div = document.createElement("div");
      div.className = "controls";
      div.appendChild(lab);
      cdfSec.parentNode.insertBefore(div, cdfSec.nextSibling);
      box.addEventListener("change", cdfs);
    }
    if (R && R.notes && R.notes.length) {
      var p = document.createElement("p");
      p.className = "note";
      p.textContent = "Note: " + R.notes.join("; ");
      document.getElementById("anatomy").appendChild(p);
    }
  }

  function run(step) {
    try { step(); } catch (e) { console.error("llmbench report: " + (e && e.stack || e)); }
  }

  function publish() {
    // For tests and automation: which charts are shown, and where (a figure's charts as one).
    var rects = [], seen = {};
    document.querySelectorAll("figure.chart svg.chart").forEach(function (svg) {
      var r = svg.getBoundingClientRect();
      if (!r.width) return; // a metric, scale or level the selector hides
      var name = svg.closest("figure").getAttribute("data-chart");
      var c = { name: name, x: Math.round(r.left + window.scrollX), y: Math.round(r.top + window.scrollY), w: Math.round(r.width), h: Math.round(r.height) };
      if (seen[name]) { // a second chart of the figure: the union of their boxes
        var o = seen[name], bottom = Math.max(o.y + o.h, c.y + c.h), right = Math.max(o.x + o.w, c.x + c.w);
        o.x = Math.min(o.x, c.x); o.y = Math.min(o.y, c.y); o.w = right - o.x; o.h = bottom - o.y;
        return;
      }
      seen[name] = c;
      rects.push(c);
    });
    document.documentElement.setAttribute("data-charts", JSON.stringify(rects));
    document.documentElement.setAttribute("data-height", String(document.documentElement.scrollHeight));
    document.documentElement.setAttribute("data-ready", "1");
  }

  run(setupControls);
  run(percentiles);
  run(cdfs);
  run(anatomy);
  run(publish);
})();
