/* d2lmini in-page figures: attention explorer, positional-encoding explorer, training
   monitor (d2lmini/webfig.py).  Draws the numbers Python embedded; defined once per page. */
(function () {
if (window.d2lfig) return;
var NS = "http://www.w3.org/2000/svg", FS = 11;
function el(tag, attrs, parent) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function text(p, x, y, s, attrs) {
  var t = el("text", Object.assign({x: x, y: y, "font-size": FS, fill: "currentColor"}, attrs || {}), p);
  t.textContent = s; return t;
}
function h(tag, attrs, parent, txt) {
  var e = document.createElement(tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (txt !== undefined) e.textContent = txt;
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(v) { return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(2) : +v.toPrecision(4) + ""; }
function niceTicks(lo, hi, n) {
  var span = hi - lo; if (!(span > 0)) return [lo];
  var raw = span / (n || 5), p = Math.pow(10, Math.floor(Math.log10(raw))), step = p;
  [1, 2, 2.5, 5, 10].some(function (m) { step = m * p; return m * p >= raw; });
  var out = [], t = Math.ceil(lo / step - 1e-9) * step;
  for (; t <= hi + 1e-9 * span; t += step) out.push(+t.toPrecision(12));
  return out;
}
function rgb(lut, v, lo, hi) {
  var t = hi > lo ? (v - lo) / (hi - lo) : 0;
  return lut[Math.round(Math.max(0, Math.min(1, t)) * (lut.length - 1))];
}
function heatURL(vals, mask, rows, cols, lut, lo, hi) {
  var c = document.createElement("canvas"); c.width = cols; c.height = rows;
  var ctx = c.getContext("2d"), img = ctx.createImageData(cols, rows);
  for (var i = 0; i < rows * cols; i++) {
    var off = mask && mask[i] === "0", v = vals[i];
    var col = off || v === null || isNaN(v) ? [211, 211, 211] : rgb(lut, v, lo, hi);
    img.data[4 * i] = col[0]; img.data[4 * i + 1] = col[1]; img.data[4 * i + 2] = col[2]; img.data[4 * i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0); return c.toDataURL();
}
// One heatmap: p = {values, mask, rows, cols, title}; o = {x, y, cw, ch, lut, lo, hi, xlabels, ylabels, showX, showY, name, readout}
function heatmap(svg, p, o) {
  var w = p.cols * o.cw, hh = p.rows * o.ch;
  var im = el("image", {x: o.x, y: o.y, width: w, height: hh, preserveAspectRatio: "none",
    style: "image-rendering:pixelated;image-rendering:crisp-edges"}, svg);
  im.setAttributeNS("http://www.w3.org/1999/xlink", "href", heatURL(p.values, p.mask, p.rows, p.cols, o.lut, o.lo, o.hi));
  im.setAttribute("href", im.getAttributeNS("http://www.w3.org/1999/xlink", "href"));
  el("rect", {x: o.x, y: o.y, width: w, height: hh, fill: "none", stroke: "currentColor", "stroke-width": 0.6}, svg);
  if (p.title) text(svg, o.x + w / 2, o.y - 5, p.title, {"text-anchor": "middle"});
  var ticks = function (labels, n, size) {
    var every = Math.max(1, Math.ceil(FS / Math.max(size, 1e-9)));
    if (!labels) { return niceTicks(0, n - 1, Math.max(2, Math.floor(n * size / 40))).filter(function (t) { return t === Math.round(t); }).map(function (t) { return [t, String(t)]; }); }
    return labels.map(function (s, i) { return [i, s]; }).filter(function (t) { return t[0] % every === 0; });
  };
  var rotate = o.xlabels && o.xlabels.some(function (s) { return String(s).length > 2; });
  if (o.showX) ticks(o.xlabels, p.cols, o.cw).forEach(function (t) {
    var x = o.x + (t[0] + 0.5) * o.cw;
    el("line", {x1: x, x2: x, y1: o.y + hh, y2: o.y + hh + 3, stroke: "currentColor"}, svg);
    if (rotate) text(svg, x + 4, o.y + hh + 6, t[1], {transform: "rotate(-90 " + (x + 4) + " " + (o.y + hh + 6) + ")", "text-anchor": "end"});
    else text(svg, x, o.y + hh + 5 + FS, t[1], {"text-anchor": "middle"});
  });
  if (o.showY) ticks(o.ylabels, p.rows, o.ch).forEach(function (t) {
    var y = o.y + (t[0] + 0.5) * o.ch;
    el("line", {x1: o.x - 3, x2: o.x, y1: y, y2: y, stroke: "currentColor"}, svg);
    text(svg, o.x - 5, y + FS * 0.35, t[1], {"text-anchor": "end"});
  });
  var show = function (ev) {
    var r = im.getBoundingClientRect(), cx = ev.touches ? ev.touches[0].clientX : ev.clientX,
        cy = ev.touches ? ev.touches[0].clientY : ev.clientY;
    var c = Math.floor((cx - r.left) / r.width * p.cols), rr = Math.floor((cy - r.top) / r.height * p.rows);
    if (c < 0 || rr < 0 || c >= p.cols || rr >= p.rows) return;
    var i = rr * p.cols + c, v = p.values[i], off = p.mask && p.mask[i] === "0";
    var yl = o.ylabels ? "'" + o.ylabels[rr] + "'" : rr, xl = o.xlabels ? "'" + o.xlabels[c] + "'" : c;
    o.readout.textContent = (p.title ? p.title + ", " : "") + o.name[0] + " " + yl + ", " + o.name[1] + " " + xl + ": " +
      (off ? "masked" : (v === null ? "-" : fmt(v)));
  };
  im.addEventListener("mousemove", show); im.addEventListener("touchstart", show, {passive: true});
  return [w, hh];
}
function colorbar(svg, x, y, hh, lut, lo, hi) {
  var vals = [], n = 64; for (var i = 0; i < n; i++) vals.push(hi - (hi - lo) * i / (n - 1));
  heatmap(svg, {values: vals, rows: n, cols: 1}, {x: x, y: y, cw: 10, ch: hh / n, lut: lut, lo: lo, hi: hi, name: ["", ""], readout: {}});
  niceTicks(lo, hi, Math.max(2, Math.min(6, Math.floor(hh / 30)))).forEach(function (t) {
    var yy = y + hh * (hi - t) / ((hi - lo) || 1);
    el("line", {x1: x + 10, x2: x + 13, y1: yy, y2: yy, stroke: "currentColor"}, svg);
    text(svg, x + 15, yy + FS * 0.35, fmt(t));
  });
}
function labelWidth(labels) {
  var m = 0; (labels || []).forEach(function (s) { m = Math.max(m, String(s).length); }); return m * FS * 0.62;
}
function newSvg(box, W, H, label) {
  box.innerHTML = "";
  return el("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
    "aria-label": label || (box.closest && box.closest(".d2l-fig") ? box.closest(".d2l-fig").getAttribute("data-d2lfig") + " figure" : "figure"),
    style: "max-width:100%;height:auto;color:inherit;font-family:sans-serif;overflow:visible"}, box);
}
function width(root) { return Math.max(280, Math.min(root.clientWidth || 720, 760)); }
// A grid of heatmaps: v = {title, panels: [{values, mask, rows, cols, title}], grid: [rows, cols], xlabels, ylabels, axis: [xname, yname]}
function drawGrid(box, v, o) {
  var W = o.W, p0 = v.panels[0], Tq = p0.rows, Tk = p0.cols, n = v.panels.length;
  var ml = 18 + (v.ylabels ? labelWidth(v.ylabels) + 8 : 24), cbw = 62, gap = 14;
  var cols = v.grid[1];
  var cellFor = function (c) { return Math.min(26, (W - ml - cbw - (c - 1) * gap) / (c * Tk)); };
  while (cols > 1 && cellFor(cols) < 9) cols--;
  var rows = Math.ceil(n / cols), cell = cellFor(cols), ch = Math.min(cell, 26);
  if (Tq * ch * rows > 640) ch = Math.max(4, 640 / (Tq * rows));
  // every token keeps its label (no thinning): cells at least as large as the text
  if (v.xlabels) cell = Math.max(cell, FS + 1);
  if (v.ylabels) ch = Math.max(ch, FS + 1);
  var need = ml + cols * Tk * cell + (cols - 1) * gap + cbw;
  if (need > W) W = Math.ceil(need);
  var rot = v.xlabels && v.xlabels.some(function (s) { return String(s).length > 2; });
  var xh = (rot ? labelWidth(v.xlabels) + 10 : FS + 8) + 18, th = v.panels[0].title ? 18 : 4;
  var top = 24, H = top + rows * (th + Tq * ch) + (rows - 1) * 6 + xh;
  var svg = newSvg(box, W, H, v.title ? v.title + " (heatmaps; hover for values)" : "attention heatmaps");
  if (W > o.W) svg.style.maxWidth = "none";  // wider than the page: its box scrolls
  text(svg, Math.min(W / 2, ml + (cols * Tk * cell + (cols - 1) * gap) / 2 + 30), 14, v.title, {"text-anchor": "middle", "font-size": 12});
  var lo = 0, hi = o.vmax;
  if (hi === null || hi === undefined) {
    hi = -Infinity;
    v.panels.forEach(function (p) { p.values.forEach(function (x, i) { if (x !== null && !(p.mask && p.mask[i] === "0")) hi = Math.max(hi, x); }); });
    if (hi === -Infinity) hi = 1;
  }
  v.panels.forEach(function (p, i) {
    var r = Math.floor(i / cols), c = i % cols, last = r === rows - 1 || i + cols >= n;
    var x = ml + c * (Tk * cell + gap), y = top + th + r * (th + Tq * ch + 6);
    heatmap(svg, p, {x: x, y: y, cw: cell, ch: ch, lut: o.lut, lo: lo, hi: hi, xlabels: v.xlabels, ylabels: v.ylabels,
      showX: last, showY: c === 0, name: v.axis, readout: o.readout});
    if (last) text(svg, x + Tk * cell / 2, H - 4, v.axis[1] === "key" ? "keys" : v.axis[1], {"text-anchor": "middle"});
  });
  var gy = top + th, gh = rows * (th + Tq * ch) - th + (rows - 1) * 6;
  text(svg, 12, gy + gh / 2, v.axis[0] === "query" ? "queries" : v.axis[0], {transform: "rotate(-90 12 " + (gy + gh / 2) + ")", "text-anchor": "middle"});
  colorbar(svg, ml + cols * Tk * cell + (cols - 1) * gap + 14, gy, Math.max(40, gh), o.lut, lo, hi);
}
function unscale(p) {
  var s = p.scale || 1;
  return s === 1 ? p.values : p.values.map(function (v) { return v === null ? null : v / s; });
}
function controls(root) { return h("div", {"class": "d2l-controls"}, root); }
function slider(parent, name, min, max, step, value, on) {
  var lab = h("label", {}, parent), span;
  h("span", {}, lab, name + " ");
  var inp = h("input", {type: "range", min: min, max: max, step: step, "aria-label": name}, lab);
  inp.value = value; span = h("output", {}, lab, String(value));
  inp.addEventListener("input", function () { span.textContent = inp.value; on(+inp.value); });
  var set = function (v, mx) {
    if (mx !== undefined) { inp.max = mx; lab.style.display = mx <= min ? "none" : ""; }  // one position: nothing to move
    inp.value = v; span.textContent = v;
  };
  if (max <= min) lab.style.display = "none";
  return {input: inp, set: set};
}
function select(parent, name, options, value, on, multiple) {
  var lab = h("label", {}, parent); h("span", {}, lab, name + " ");
  var s = h("select", multiple ? {multiple: "", size: 5, "aria-label": name} : {"aria-label": name}, lab);
  var fill = function (opts, val) {
    var top = s.scrollTop;  // keep the list where the reader scrolled it
    s.innerHTML = "";
    opts.forEach(function (o) { var op = h("option", {value: String(o[1])}, s, o[0]); op.selected = multiple ? val.indexOf(o[1]) >= 0 : String(o[1]) === String(val); });
    s.scrollTop = top;
  };
  fill(options, value);
  var chosen = function () { return Array.prototype.filter.call(s.options, function (o) { return o.selected; }).map(function (o) { return +o.value; }); };
  s.addEventListener("change", function () { if (multiple) on(chosen()); else on(s.value); });
  if (multiple) {
    s.title = "click an item to add or remove it";
    s.addEventListener("mousedown", function (e) {
      var o = e.target;
      if (!o || o.tagName !== "OPTION") return;
      e.preventDefault();  // a plain click would replace the selection
      o.selected = !o.selected;
      s.focus({preventScroll: true});
      on(chosen());
    });
  }
  return {input: s, fill: fill};
}
function onResize(root, draw) {
  var last = 0;
  window.addEventListener("resize", function () { var w = width(root); if (w !== last) { last = w; draw(); } });
}
// ------------------------------------------------------------------ attention explorer
function attention(root, d) {
  var st = Object.assign({}, d.state), ctl = controls(root), box = h("div", {"class": "d2l-plot"}, root);
  var readout = h("div", {"class": "d2l-readout"}, root, "hover over (or tap) a cell to read its weight");
  var info = function () { return d.kinds[st.kind]; };
  var kindRow = h("div", {"class": "d2l-buttons", role: "group", "aria-label": "attention"}, ctl), kb = {};
  if (Object.keys(d.kinds).length < 2) kindRow.style.display = "none";  // one kind: nothing to switch
  Object.keys(d.kinds).forEach(function (k) {
    kb[k] = h("button", {type: "button"}, kindRow, k);
    kb[k].addEventListener("click", function () {
      st.kind = k; var i = info();
      st.layer = Math.min(st.layer, i.L - 1); st.example = Math.min(st.example, i.B - 1);
      if (st.head !== "all" && st.head !== "mean" && +st.head >= i.h) st.head = "all";
      draw();
    });
  });
  var row = h("div", {"class": "d2l-row"}, ctl);
  var layer = slider(row, "layer", 0, 0, 1, st.layer, function (v) { st.layer = v; draw(); });
  var head = select(row, "head", [], st.head, function (v) { st.head = v === "all" || v === "mean" ? v : +v; draw(); });
  var example = slider(row, "example", 0, 0, 1, st.example, function (v) { st.example = v; draw(); });
  function draw() {
    var i = info();
    Object.keys(kb).forEach(function (k) { kb[k].setAttribute("aria-pressed", k === st.kind ? "true" : "false"); });
    layer.set(st.layer, i.L - 1); example.set(st.example, i.B - 1);
    var opts = [["all heads", "all"], ["mean", "mean"]];
    for (var j = 0; j < i.h; j++) opts.push([String(j), j]);
    head.fill(opts, st.head);
    head.input.parentNode.style.display = i.h > 1 ? "" : "none";  // one head: all = mean = 0
    var ref = d.views[[st.kind, st.layer, st.head, st.example].join("|")];
    var v = {title: ref.title, grid: ref.grid, axis: ["query", "key"], xlabels: d.labels[ref.xlabels], ylabels: d.labels[ref.ylabels],
      panels: ref.panels.map(function (pi, n) { var p = d.panels[pi]; return {values: unscale(p), mask: d.masks[p.mask], rows: p.rows, cols: p.cols, title: ref.titles ? ref.titles[n] : null}; })};
    drawGrid(box, v, {W: width(root), lut: d.lut, vmax: d.vmax, readout: readout});
    root.setAttribute("data-state", JSON.stringify(st));
  }
  draw(); onResize(root, draw);
}
// ------------------------------------------------------------------ positional encoding
function pe(d_model, n) {
  var P = [];
  for (var p = 0; p < n; p++) for (var i = 0; i < d_model; i++) {
    var f = Math.exp(-Math.log(10000) * (i - i % 2) / d_model);
    P.push(i % 2 ? Math.cos(p * f) : Math.sin(p * f));
  }
  return P;
}
var TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
function axes(svg, x, y, w, hh, xlim, ylim, o) {
  el("rect", {x: x, y: y, width: w, height: hh, fill: "none", stroke: "currentColor", "stroke-width": 0.6}, svg);
  var X = function (v) { return x + w * (v - xlim[0]) / (xlim[1] - xlim[0]); };
  var Y = o.log ? function (v) { return y + hh * (Math.log(ylim[1]) - Math.log(v)) / (Math.log(ylim[1]) - Math.log(ylim[0])); }
                : function (v) { return y + hh * (ylim[1] - v) / (ylim[1] - ylim[0]); };
  niceTicks(xlim[0], xlim[1], Math.max(2, Math.floor(w / 60))).forEach(function (t) {
    el("line", {x1: X(t), x2: X(t), y1: y, y2: y + hh, stroke: "currentColor", "stroke-opacity": 0.15}, svg);
    text(svg, X(t), y + hh + 5 + FS, fmt(t), {"text-anchor": "middle"});
  });
  var yt = [];
  if (o.log) {
    for (var e = Math.floor(Math.log10(ylim[0])); e <= Math.ceil(Math.log10(ylim[1])); e++)
      [1, 2, 5].forEach(function (m) { var t = m * Math.pow(10, e); if (t >= ylim[0] && t <= ylim[1]) yt.push(t); });
    if (yt.length > 6) yt = yt.filter(function (t) { return Math.abs(Math.log10(t) - Math.round(Math.log10(t))) < 1e-9 || yt.length < 10 && String(t.toPrecision(1))[0] === "5"; });
  } else yt = o.yticks || niceTicks(ylim[0], ylim[1], Math.max(3, Math.floor(hh / 40)));
  yt.forEach(function (t) {
    el("line", {x1: x, x2: x + w, y1: Y(t), y2: Y(t), stroke: "currentColor", "stroke-opacity": 0.15}, svg);
    text(svg, x - 4, Y(t) + FS * 0.35, o.log ? +t.toPrecision(2) + "" : fmt(t), {"text-anchor": "end"});
  });
  if (o.xlabel) text(svg, x + w / 2, y + hh + 2 * FS + 10, o.xlabel, {"text-anchor": "middle"});
  if (o.ylabel) text(svg, x - 40, y + hh / 2, o.ylabel, {transform: "rotate(-90 " + (x - 40) + " " + (y + hh / 2) + ")", "text-anchor": "middle"});
  if (o.title) text(svg, x + w / 2, y - 6, o.title, {"text-anchor": "middle"});
  return {X: X, Y: Y};
}
function line(svg, xs, ys, a, attrs) {
  var pts = []; for (var i = 0; i < xs.length; i++) if (ys[i] !== null && isFinite(a.Y(ys[i]))) pts.push(a.X(xs[i]).toFixed(1) + "," + a.Y(ys[i]).toFixed(1));
  return el("polyline", Object.assign({points: pts.join(" "), fill: "none", "stroke-width": 1.5}, attrs), svg);
}
function peExplorer(root, d) {
  var st = Object.assign({}, d.state), ctl = controls(root), box = h("div", {"class": "d2l-plot"}, root);
  var readout = h("div", {"class": "d2l-readout"}, root, "hover over (or tap) a heatmap to read a value");
  var row = h("div", {"class": "d2l-row"}, ctl);
  var dm = slider(row, "d_model", 2, d.max_d_model, 2, st.d_model, function (v) {
    st.d_model = v; st.dims = st.dims.filter(function (x) { return x < v; });
    if (!st.dims.length) for (var i = 0; i < Math.min(4, v); i++) st.dims.push(i);
    draw();
  });
  var np_ = slider(row, "positions", 2, d.max_positions, 1, st.num_positions, function (v) { st.num_positions = v; draw(); });
  var dims = select(row, "dims", [], st.dims, function (v) { st.dims = v; draw(); }, true);
  function draw() {
    var D = st.d_model, N = st.num_positions, P = pe(D, N), W = width(root);
    dm.set(D); np_.set(N);
    var opts = []; for (var i = 0; i < D; i++) opts.push([String(i), i]);
    dims.fill(opts, st.dims);
    var G = []; for (var a = 0; a < N; a++) for (var b = 0; b < N; b++) { var s = 0; for (var k = 0; k < D; k++) s += P[a * D + k] * P[b * D + k]; G.push(s); }
    var one = W < 640, pw = one ? W - 120 : (W - 3 * 110) / 3, ph = Math.max(140, Math.min(190, pw * 0.9));
    var legendH = 16 * Math.ceil(st.dims.length / Math.max(1, Math.floor((pw + 60) / 60)));
    var cell = 2 * FS + 28, H = one ? 3 * (ph + cell + 20) + legendH : ph + cell + 20 + legendH;
    var svg = newSvg(box, W, H, "positional encoding: the encoding, chosen dimensions, dot products"), pos = function (i) { return one ? [60, 20 + i * (ph + cell + 20) + (i === 2 ? legendH : 0)] : [55 + i * (pw + 110), 20]; };
    var q = pos(0);
    heatmap(svg, {values: P, rows: N, cols: D, title: "PE(pos, dim)"}, {x: q[0], y: q[1], cw: pw / D, ch: ph / N, lut: d.luts.pe, lo: -1, hi: 1,
      showX: true, showY: true, name: ["position", "dim"], readout: readout});
    text(svg, q[0] + pw / 2, q[1] + ph + 2 * FS + 10, "dimension", {"text-anchor": "middle"});
    text(svg, q[0] - 40, q[1] + ph / 2, "position", {transform: "rotate(-90 " + (q[0] - 40) + " " + (q[1] + ph / 2) + ")", "text-anchor": "middle"});
    colorbar(svg, q[0] + pw + 8, q[1], ph, d.luts.pe, -1, 1);
    q = pos(1);
    var xs = []; for (var p = 0; p < N; p++) xs.push(p);
    var ax = axes(svg, q[0], q[1], pw, ph, [0, Math.max(1, N - 1)], [-1.1, 1.1], {xlabel: "position", ylabel: "value", title: "chosen dimensions", yticks: [-1, -0.5, 0, 0.5, 1]});
    var per = Math.max(1, Math.floor((pw + 60) / 60));
    st.dims.forEach(function (dd, j) {
      var ys = []; for (var p = 0; p < N; p++) ys.push(P[p * D + dd]);
      line(svg, xs, ys, ax, {stroke: TAB10[j % 10], "data-dim": dd});
      var lx = q[0] + (j % per) * 60, ly = q[1] + ph + 2 * FS + 26 + 16 * Math.floor(j / per);
      el("line", {x1: lx, x2: lx + 14, y1: ly - 4, y2: ly - 4, stroke: TAB10[j % 10], "stroke-width": 2}, svg);
      text(svg, lx + 18, ly, "dim " + dd);
    });
    q = pos(2);
    var lo = Math.min.apply(null, G), hi = Math.max.apply(null, G);
    heatmap(svg, {values: G, rows: N, cols: N, title: "PE(i) \u00b7 PE(j)"}, {x: q[0], y: q[1], cw: pw / N, ch: ph / N, lut: d.luts.dot, lo: lo, hi: hi,
      showX: true, showY: true, name: ["i", "j"], readout: readout});
    text(svg, q[0] + pw / 2, q[1] + ph + 2 * FS + 10, "position j", {"text-anchor": "middle"});
    text(svg, q[0] - 40, q[1] + ph / 2, "position i", {transform: "rotate(-90 " + (q[0] - 40) + " " + (q[1] + ph / 2) + ")", "text-anchor": "middle"});
    colorbar(svg, q[0] + pw + 8, q[1], ph, d.luts.dot, lo, hi);
    root.setAttribute("data-state", JSON.stringify(st));
  }
  draw(); onResize(root, draw);
}
// ------------------------------------------------------------------ training monitor
// The smoothed loss: a centred moving mean (no lag), its window shrinking symmetrically
// near the ends; the same as d2lmini.monitor.smooth.
function window_(n) { return Math.max(1, Math.floor(n / 25)); }
function smooth(y) {
  var n = y.length, r = Math.floor(window_(n) / 2), c = [0], out = [];
  for (var i = 0; i < n; i++) c.push(c[i] + y[i]);
  for (var i = 0; i < n; i++) { var q = Math.min(r, i, n - 1 - i); out.push((c[i + q + 1] - c[i - q]) / (2 * q + 1)); }
  return out;
}
function monitor(root, d) {
  var ctl = controls(root), box = h("div", {"class": "d2l-plot"}, root), i = d.frames.length - 1, timer = null;
  var readout = h("div", {"class": "d2l-readout"}, root, "\u25b6 plays the snapshots; drag the slider to scrub");
  var row = h("div", {"class": "d2l-row"}, ctl);
  var btn = h("button", {type: "button", "aria-label": "play"}, row, "\u25b6 play");
  var sl = slider(row, "snapshot", 0, d.frames.length - 1, 1, i, function (v) { stop(); i = v; draw(); });
  function stop() { if (timer) clearInterval(timer); timer = null; btn.textContent = "\u25b6 play"; }
  btn.addEventListener("click", function () {
    if (timer) return stop();
    if (i >= d.frames.length - 1) i = 0;
    btn.textContent = "\u275a\u275a pause"; draw();
    timer = setInterval(function () { if (i >= d.frames.length - 1) return stop(); i++; draw(); }, 1000 / d.fps);
  });
  function draw() {
    var f = d.frames[i], W = width(root), n = f.panels.length, one = W < 600;
    sl.set(i);
    var lw = one ? W - 70 : Math.max(220, (n ? 0.45 : 0.9) * W - 60), lh = 170;
    var p0 = n ? d.panels[f.panels[0]] : null;
    var hx = one ? 0 : lw + 70, hw = one ? W : W - lw - 70;
    var H = lh + 60, svg;
    if (n) {
      var v = {title: d.title, grid: [1, n], axis: d.axis, xlabels: d.xlabels, ylabels: d.ylabels,
        panels: f.panels.map(function (pi, k) { var p = d.panels[pi]; return {values: unscale(p), mask: d.mask, rows: p.rows, cols: p.cols, title: d.head_titles ? d.head_titles[k] : null}; })};
      var hb = h("div", {}, null);
      drawGrid(hb, v, {W: hw, lut: d.lut, vmax: 1, readout: readout});
      var hs = hb.firstChild, hH = +hs.getAttribute("height");
      H = one ? lh + 60 + hH + 10 : Math.max(H, hH);
      var hW = +hs.getAttribute("width"), W2 = Math.max(W, (one ? 0 : hx) + hW);
      svg = newSvg(box, W2, H, "training loss and attention at step " + f.step);
      if (W2 > W) svg.style.maxWidth = "none";  // every token labelled: the box scrolls
      var g = el("g", {transform: "translate(" + hx + "," + (one ? lh + 70 : 0) + ")"}, svg);
      while (hs.firstChild) g.appendChild(hs.firstChild);
    } else svg = newSvg(box, W, H, "training loss at step " + f.step);
    var steps = []; for (var s = 1; s <= f.step; s++) steps.push(s);
    var y = d.losses.slice(0, f.step), sm = smooth(y), k = window_(y.length), tail = y.slice(-k);
    var mean = tail.reduce(function (a, b) { return a + b; }, 0) / tail.length;
    var ax = axes(svg, 56, 24, lw, lh, d.xlim, d.ylim, {log: true, xlabel: "step", ylabel: "loss",
      title: "step " + f.step + ": loss " + (+mean.toPrecision(3)) + (k > 1 ? " (last " + k + ")" : "")});
    line(svg, steps, y, ax, {stroke: "#1f77b4", "stroke-opacity": 0.3, "stroke-width": 1});
    line(svg, steps, sm, ax, {stroke: "#1f77b4", "stroke-width": 2});
    // legend, inside the plot's top right corner
    [["each step", 0.3, 1], [k > 1 ? "centred mean of " + (2 * Math.floor(k / 2) + 1) : "each step", 1, 2]].forEach(function (e, j) {
      if (j === 1 && k <= 1) return;
      var lx = 56 + lw - 150, ly = 24 + 14 + 15 * j;
      el("line", {x1: lx, x2: lx + 18, y1: ly - 4, y2: ly - 4, stroke: "#1f77b4", "stroke-opacity": e[1], "stroke-width": e[2]}, svg);
      text(svg, lx + 22, ly, e[0]);
    });
    root.setAttribute("data-state", JSON.stringify({frame: i, step: f.step}));
  }
  draw(); onResize(root, draw);
}
window.d2lfig = {attention: attention, pe: peExplorer, monitor: monitor};
})();
