// llmbench report.html: draws the charts from the JSON embedded in the page. Data only ever
// reaches the DOM through textContent / option.text, never as markup.
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("llmbench-data").textContent);
  var S = D.summary || {};
  var R = D.records || null;
  var LEVELS = Array.isArray(S.levels) ? S.levels : [];
  var charts = []; // {name, u, el, height}

  var C = {
    fg: "#1d2330", muted: "#5d6677", grid: "#eef0f4", tick: "#dfe3ea",
    accent: "#7b3fc4", good: "#1a7f4b", bad: "#c62f2f",
    queue: "#b8bfcc", prefill: "#f28e2b", decode: "#4e79a7", tail: "#9fc4e6",
    setup: "#76b7b2", headers: "#edc948",
  };
  var CAT = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

  // ---- helpers -------------------------------------------------------------------------

  function isNum(v) { return typeof v === "number" && isFinite(v); }
  function num(v) { return isNum(v) ? v : null; }

  function fmt(v, unit) {
    if (!isNum(v)) return "—";
    var a = Math.abs(v), s;
    if (a >= 1000) s = v.toFixed(0);
    else if (a >= 100) s = v.toFixed(1);
    else if (a >= 10) s = v.toFixed(2);
    else s = v.toPrecision(3);
    return unit ? s + " " + unit : s;
  }

  function loadText(l) {
    if (l && isNum(l.concurrency) && l.concurrency > 0) return "concurrency " + l.concurrency;
    if (l && isNum(l.rate) && l.rate > 0) return "rate " + l.rate + " req/s";
    return "";
  }
  function levelName(i) {
    var l = LEVELS[i];
    if (l && typeof l.name === "string" && l.name) return l.name;
    return loadText(l) || "level " + i;
  }
  function shortName(i) {
    var l = LEVELS[i];
    if (l && isNum(l.concurrency) && l.concurrency > 0) return "c=" + l.concurrency;
    if (l && isNum(l.rate) && l.rate > 0) return l.rate + "/s";
    return levelName(i);
  }

  // A sequential palette (plasma, cut before its pale yellow) so heavier load reads darker→warmer.
  var PLASMA = [[13, 8, 135], [84, 2, 163], [139, 10, 165], [185, 50, 137], [219, 92, 104], [244, 136, 73], [254, 188, 43]];
  function levelColor(i, n) {
    if (n <= 1) return "rgb(84,2,163)";
    var t = (i / (n - 1)) * 0.92, x = t * (PLASMA.length - 1), k = Math.min(Math.floor(x), PLASMA.length - 2), f = x - k;
    var a = PLASMA[k], b = PLASMA[k + 1];
    return "rgb(" + [0, 1, 2].map(function (j) { return Math.round(a[j] + (b[j] - a[j]) * f); }).join(",") + ")";
  }

  function pickIndex(p) { return p && isNum(p.index) ? p.index : -1; }
  var SWEET = pickIndex(S.sweet_spot), LIMIT = pickIndex(S.slo_limit);

  function figure(name) { return document.querySelector('figure[data-chart="' + name + '"]'); }
  function plotEl(name) { var f = figure(name); return f ? f.querySelector(".plot") : null; }

  function noData(name, msg) {
    var el = plotEl(name);
    if (!el) return;
    el.textContent = "";
    var d = document.createElement("div");
    d.className = "nodata";
    d.textContent = msg;
    el.appendChild(d);
  }

  function axis(label, extra) {
    var a = {
      label: label, stroke: C.muted, labelFont: "12px system-ui, sans-serif", font: "11px system-ui, sans-serif",
      grid: { stroke: C.grid, width: 1 }, ticks: { stroke: C.tick, width: 1, size: 4 },
    };
    for (var k in extra) a[k] = extra[k];
    return a;
  }

  function make(name, opts, data, height) {
    var el = plotEl(name);
    var old = charts.filter(function (c) { return c.name === name; });
    old.forEach(function (c) { c.u.destroy(); });
    charts = charts.filter(function (c) { return c.name !== name; });
    el.textContent = "";
    opts.width = Math.max(280, el.clientWidth);
    opts.height = height || 300;
    var u = new uPlot(opts, data, el);
    charts.push({ name: name, u: u, el: el, height: opts.height });
    return u;
  }

  // Pixel positions on the canvas (which is devicePixelRatio-scaled).
  function cx(u, v, scale) { return u.valToPos(v, scale || "x", true); }
  function cy(u, v, scale) { return u.valToPos(v, scale || "y", true); }

  function zeroRange(u, min, max) {
    if (!isNum(max)) return [0, 1];
    return [0, max > 0 ? max * 1.08 : 1];
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

  var HOVER_HINT = "Hover a bar for its timings; drag across to zoom in time, double-click to zoom out.";

  function anatomyLevels() { return R ? R.levels.filter(function (l) { return l.sample && l.sample.length; }) : []; }

  // phases sums a sample row's measured HTTP phases: setup (DNS + connect + TLS, before
  // the send) and after (write + headers, from the send to the response headers), in s.
  function phases(r) {
    var p = r[9], v = function (i) { return p && isNum(p[i]) ? p[i] : 0; };
    return { setup: v(0) + v(1) + v(2), after: v(3) + v(4) };
  }

  function anatomy() {
    if (!R) { noData("anatomy", "Per-request data (records.jsonl) was not given."); return; }
    var sel = document.getElementById("anatomy-level");
    var lvls = anatomyLevels();
    if (!lvls.length) { noData("anatomy", "records.jsonl holds no requests."); return; }
    var lv = lvls.filter(function (l) { return String(l.level) === sel.value; })[0] || lvls[0];
    // [index, scheduled, sent, first|null, last|null, done, tokens, warmup, error|null,
    //  then, when measured, [dns, connect, tls, write, headers] (null: not measured)]
    var rows = lv.sample;
    var n = rows.length;
    var lo = Infinity, hi = -Infinity;
    rows.forEach(function (r) { lo = Math.min(lo, r[1], r[2] - phases(r).setup); hi = Math.max(hi, r[5]); });
    if (!(hi > lo)) hi = lo + 1;
    var info = document.getElementById("anatomy-info");
    info.textContent = (n < lv.requests ? "a uniform sample of " + n + " of " + lv.requests + " requests" : n + " requests") +
      " · " + lv.ok + " ok, " + lv.failed + " failed" + (lv.requests > lv.measured ? ", " + (lv.requests - lv.measured) + " warm-up/cool-down" : "");
    document.getElementById("anatomy-title").textContent = "Per-request timeline: " + levelName(lv.level);
    var hover = document.getElementById("anatomy-hover");
    hover.textContent = HOVER_HINT;
    var height = Math.max(260, Math.min(520, n * 3 + 80));
    make("anatomy", {
      scales: { x: { time: false, range: function () { return [lo, hi]; } }, y: { range: function () { return [0, n]; } } },
      axes: [axis("time since run start (s)"), axis("requests (by send time)", { size: 60, values: function (u, v) { return v.map(function (y) { return Math.round(n - y); }); } })],
      series: [{}, { label: "requests", stroke: "rgba(0,0,0,0)", paths: function () { return null; }, points: { show: false } }],
      legend: { show: false },
      cursor: { points: { show: false }, drag: { x: true, y: false } },
      hooks: {
        draw: [function (u) {
          var ctx = u.ctx, dpr = window.devicePixelRatio || 1;
          // Whole-pixel rows keep thousands of thin bars crisp instead of a blended haze.
          var rowH = u.bbox.height / n, gap = rowH >= 3 ? Math.max(1, Math.round(rowH * 0.2)) : 0;
          ctx.save();
          ctx.beginPath();
          ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
          ctx.clip();
          var y, h;
          function seg(a, b, col) {
            if (!isNum(a) || !isNum(b) || b < a) return;
            var x0 = cx(u, a), x1 = cx(u, b);
            ctx.fillStyle = col;
            ctx.fillRect(x0, y, Math.max(dpr * 0.75, x1 - x0), h);
          }
          rows.forEach(function (r, k) {
            y = Math.round(u.bbox.top + k * rowH);
            h = Math.max(1, Math.round(u.bbox.top + (k + 1) * rowH) - y - gap);
            ctx.globalAlpha = r[7] ? 0.35 : 1;
            var ph = phases(r), from = r[2];
            seg(r[1], r[2] - ph.setup, C.queue);
            if (ph.setup > 0) seg(r[2] - ph.setup, r[2], C.setup);
            if (r[8]) { seg(r[2], r[5], C.bad); return; }
            if (ph.after > 0) { from = r[2] + ph.after; seg(r[2], Math.min(from, isNum(r[3]) ? r[3] : r[5]), C.headers); }
            if (isNum(r[3])) {
              seg(Math.min(from, r[3]), r[3], C.prefill);
              seg(r[3], r[4], C.decode);
              seg(r[4], r[5], C.tail);
            } else seg(Math.min(from, r[5]), r[5], C.prefill);
          });
          ctx.restore();
        }],
        setCursor: [function (u) {
          var top = u.cursor.top;
          if (!isNum(top) || top < 0) { hover.textContent = HOVER_HINT; return; }
          var k = Math.floor(top / (u.bbox.height / (window.devicePixelRatio || 1)) * n);
          var r = rows[Math.min(n - 1, Math.max(0, k))];
          if (!r) return;
          var ms = function (a, b) { return isNum(a) && isNum(b) ? fmt((b - a) * 1000, "ms") : "—"; };
          var parts = ["request " + r[0] + (r[7] ? " (warm-up)" : ""), "sent at " + r[2].toFixed(3) + " s",
            "waited " + ms(r[1], r[2])];
          var p = r[9];
          if (p) ["DNS", "connect", "TLS", "write", "headers"].forEach(function (n, i) { if (isNum(p[i])) parts.push(n + " " + fmt(p[i] * 1000, "ms")); });
          if (r[8]) parts.push("failed: " + r[8] + " after " + ms(r[2], r[5]));
          else parts.push("TTFT " + ms(r[2], r[3]), "decode " + ms(r[3], r[4]), "E2EL " + ms(r[2], r[4]), r[6] + " output tokens");
          hover.textContent = parts.join(" · ");
        }],
      },
    }, [[lo, hi], [0, n]], height);
  }

  // ---- over time ---------------------------------------------------------------------------

  // Shades each level's span on a time chart, labelled, beneath grid and series.
  function levelBands(u) {
    if (!R) return;
    var ctx = u.ctx, dpr = window.devicePixelRatio || 1, n = LEVELS.length || R.levels.length;
    ctx.save();
    ctx.font = Math.round(11 * dpr) + "px system-ui, sans-serif";
    ctx.textBaseline = "top";
    R.levels.forEach(function (lv, k) {
      if (!isNum(lv.start_s) || !isNum(lv.end_s)) return;
      var x0 = Math.max(u.bbox.left, cx(u, lv.start_s)), x1 = Math.min(u.bbox.left + u.bbox.width, cx(u, lv.end_s));
      if (x1 <= x0) return;
      ctx.fillStyle = k % 2 ? "rgba(123,63,196,0.05)" : "rgba(78,121,167,0.07)";
      ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
      ctx.fillStyle = levelColor(lv.level, n);
      if (x1 - x0 > 30 * dpr) ctx.fillText(shortName(lv.level), x0 + 3 * dpr, u.bbox.top + 3 * dpr);
    });
    ctx.restore();
  }

  function overTime() {
    if (!R || !R.over_time || !R.over_time.output_tokens_per_s || !R.over_time.output_tokens_per_s.length) {
      noData("overtime", R ? "records.jsonl holds no requests." : "Per-request data (records.jsonl) was not given.");
      return;
    }
    var ot = R.over_time, w = ot.width_s;
    document.getElementById("overtime-title").textContent = "Output tokens/s and in-flight requests (" + w + " s buckets)";
    var xs = ot.output_tokens_per_s.map(function (_, i) { return (i + 0.5) * w; });
    var data = [xs, ot.output_tokens_per_s, ot.in_flight];
    var series = [{ label: "time (s)", value: function (u, v) { return isNum(v) ? v.toFixed(1) + " s" : "—"; } },
      { label: "output tokens/s", stroke: C.decode, width: 1.5, fill: "rgba(78,121,167,0.12)", scale: "tok", value: function (u, v) { return fmt(v, "tok/s"); } },
      { label: "in-flight requests", stroke: C.prefill, width: 1.5, scale: "req", value: function (u, v) { return fmt(v); } }];
    if ((ot.failed_per_s || []).some(function (v) { return v > 0; })) {
      data.push(ot.failed_per_s);
      series.push({ label: "failed requests/s", stroke: C.bad, width: 1.5, scale: "req", value: function (u, v) { return fmt(v, "/s"); } });
    }
    make("overtime", {
      scales: { x: { time: false }, tok: { range: zeroRange }, req: { range: zeroRange } },
      axes: [axis("time since run start (s)"), axis("output tokens/s", { scale: "tok", size: 60 }),
        axis("requests (in flight, failed/s)", { scale: "req", side: 1, size: 60, grid: { show: false } })],
      series: series,
      hooks: { drawClear: [levelBands] },
    }, data, 320);
  }

  // Server metrics: levels[i].server.series and/or a top-level server_series, each columns
  // ({t_s: [...], name: [...]}) or rows ([{t_s, name: value}]).
  function serverRows() {
    var rows = [];
    function take(s) {
      if (!s) return;
      if (Array.isArray(s)) { s.forEach(function (r) { if (r && isNum(r.t_s)) rows.push(r); }); return; }
      if (typeof s === "object" && Array.isArray(s.t_s)) {
        s.t_s.forEach(function (t, i) {
          if (!isNum(t)) return;
          var r = { t_s: t };
          Object.keys(s).forEach(function (k) { if (k !== "t_s" && Array.isArray(s[k])) r[k] = s[k][i]; });
          rows.push(r);
        });
      }
    }
    take(S.server_series);
    LEVELS.forEach(function (l) { if (l && l.server && typeof l.server === "object") take(l.server.series); });
    rows.sort(function (a, b) { return a.t_s - b.t_s; });
    return rows;
  }

  function server() {
    var rows = serverRows();
    if (!rows.length) return;
    var keys = {};
    rows.forEach(function (r) { Object.keys(r).forEach(function (k) { if (k !== "t_s" && isNum(r[k])) keys[k] = true; }); });
    var names = Object.keys(keys).sort();
    if (!names.length) return;
    figure("server").hidden = false;
    var frac = function (k) { return /usage|ratio|fraction|hit|util/.test(k); };
    var xs = [], data;
    rows.forEach(function (r) { if (!xs.length || r.t_s > xs[xs.length - 1]) xs.push(r.t_s); });
    var idx = {};
    xs.forEach(function (t, i) { idx[t] = i; });
    data = [xs];
    var series = [{ label: "time (s)", value: function (u, v) { return isNum(v) ? v.toFixed(1) + " s" : "—"; } }];
    var hasFrac = false, hasCount = false;
    names.forEach(function (k, j) {
      var col = new Array(xs.length).fill(null);
      rows.forEach(function (r) { if (isNum(r[k])) col[idx[r.t_s]] = r[k]; });
      data.push(col);
      var f = frac(k);
      hasFrac = hasFrac || f; hasCount = hasCount || !f;
      series.push({ label: k.replace(/_/g, " ") + (f ? " (%)" : ""), stroke: CAT[j % CAT.length], width: 1.5, spanGaps: true, scale: f ? "frac" : "count",
        value: function (u, v) { return isNum(v) ? (f ? (v * 100).toFixed(1) + "%" : fmt(v)) : "—"; } });
    });
    var axes = [axis("time since run start (s)")];
    if (hasCount) axes.push(axis("requests / count", { scale: "count", size: 60 }));
    if (hasFrac) axes.push(axis("fraction (%)", { scale: "frac", side: 1, size: 50, grid: { show: !hasCount }, values: function (u, v) { return v.map(function (x) { return Math.round(x * 100) + "%"; }); } }));
    make("server", {
      scales: { x: { time: false }, count: { range: zeroRange }, frac: { range: [0, 1] } },
      axes: axes, series: series, hooks: { drawClear: [levelBands] },
    }, data, 280);
  }

  // ---- wiring ------------------------------------------------------------------------------

  function setupControls() {
    var sel = document.getElementById("anatomy-level");
    var lvls = anatomyLevels();
    lvls.forEach(function (l) {
      var o = document.createElement("option");
      o.value = String(l.level);
      o.text = levelName(l.level);
      sel.appendChild(o);
    });
    var has = function (i) { return lvls.some(function (l) { return l.level === i; }); };
    if (has(SWEET)) sel.value = String(SWEET);
    else if (lvls.length) sel.value = String(lvls[lvls.length - 1].level);
    sel.addEventListener("change", anatomy);
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
    // For tests and automation: which charts drew, and where.
    var rects = charts.map(function (c) {
      var r = c.u.over.getBoundingClientRect();
      return { name: c.name, x: Math.round(r.left + window.scrollX), y: Math.round(r.top + window.scrollY), w: Math.round(r.width), h: Math.round(r.height) };
    });
    document.querySelectorAll("figure.chart svg.chart").forEach(function (svg) {
      var r = svg.getBoundingClientRect();
      if (!r.width) return; // a metric the selector hides
      rects.push({ name: svg.closest("figure").getAttribute("data-chart"), x: Math.round(r.left + window.scrollX), y: Math.round(r.top + window.scrollY), w: Math.round(r.width), h: Math.round(r.height) });
    });
    document.documentElement.setAttribute("data-charts", JSON.stringify(rects));
    document.documentElement.setAttribute("data-height", String(document.documentElement.scrollHeight));
    document.documentElement.setAttribute("data-ready", "1");
  }

  run(setupControls);
  run(percentiles);
  run(cdfs);
  run(anatomy);
  run(overTime);
  run(server);
  // uPlot lays out on a microtask; publish once the charts have their final geometry.
  setTimeout(publish, 50);

  var pending = 0;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      charts.forEach(function (c) { c.u.setSize({ width: Math.max(280, c.el.clientWidth), height: c.height }); });
      publish();
    }, 150);
  });
})();
