/* d2lmini attention views: head view and model view (d2lmini/views.py).
   Draws the numbers Python embedded; decides nothing about what a setting shows.
   Defined once per page: a second copy (another output) returns at once. */
(function () {
"use strict";
if (window.d2lviews) return;
var NS = "http://www.w3.org/2000/svg", FS = 12;

function el(tag, attrs, parent) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function h(tag, attrs, parent, txt) {
  var e = document.createElement(tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (txt !== undefined) e.textContent = txt;
  if (parent) parent.appendChild(e);
  return e;
}
function text(p, x, y, s, attrs) {
  var t = el("text", Object.assign({x: x, y: y, "font-size": FS, fill: "currentColor"}, attrs || {}), p);
  t.textContent = s;
  return t;
}
// a token as shown: whitespace made visible (a space would be an empty label)
function shown(s) { s = String(s); return s.trim() === "" ? s.replace(/ /g, "\u2423").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5") || "\u2205" : s; }
function fmt(v) { return v === null ? "-" : (+v.toFixed(3)).toString(); }
function quote(s) { return "'" + shown(s) + "'"; }
function panel(d, i) {
  var p = d.panels[i], s = p.scale || 1, m = p.mask === null || p.mask === undefined ? null : d.masks[p.mask];
  return {rows: p.rows, cols: p.cols, mask: m,
          values: s === 1 ? p.values : p.values.map(function (v) { return v === null ? null : v / s; }),
          at: function (r, c) { var i = r * p.cols + c; return m && m[i] === "0" ? null : this.values[i]; }};
}
function labelWidth(labels, fs) {
  var n = 0;
  labels.forEach(function (s) { n = Math.max(n, String(s).length); });
  return n * (fs || FS) * 0.62;
}
function width(root) { return Math.max(300, Math.min(root.clientWidth || 720, 760)); }
function onResize(root, draw) {
  var last = width(root);
  window.addEventListener("resize", function () { var w = width(root); if (w !== last) { last = w; draw(); } });
}
function newSvg(box, W, H, label) {
  box.innerHTML = "";
  return el("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": label,
    "class": "d2l-view-svg"}, box);
}
// Controls shared by both views: kind of attention (buttons), example (select), and
// for the head view the layer (select).  A control with one possible value is not shown.
function choices(ctl, d, st, names, redraw) {
  var kinds = Object.keys(d.kinds), made = {};
  if (kinds.length > 1) {
    var row = h("div", {"class": "d2l-buttons", role: "group", "aria-label": "attention"}, ctl);
    kinds.forEach(function (k) {
      var b = h("button", {type: "button", "data-kind": k}, row, k);
      b.addEventListener("click", function () {
        st.kind = k;
        var i = d.kinds[k];
        if (st.layer !== undefined) st.layer = Math.min(st.layer, i.L - 1);
        st.example = Math.min(st.example, i.B - 1);
        redraw();
      });
    });
    made.kind = row;
  }
  var line = h("div", {"class": "d2l-row"}, ctl);
  names.forEach(function (name) {
    var lab = h("label", {}, line);
    h("span", {}, lab, name + " ");
    var s = h("select", {"aria-label": name}, lab);
    s.addEventListener("change", function () { st[name] = +s.value; redraw(); });
    made[name] = {label: lab, select: s};
  });
  return function sync() {
    var i = d.kinds[st.kind];
    if (made.kind) Array.prototype.forEach.call(made.kind.children, function (b) {
      b.setAttribute("aria-pressed", b.getAttribute("data-kind") === st.kind ? "true" : "false");
    });
    names.forEach(function (name) {
      var n = name === "layer" ? i.L : i.B, c = made[name];
      c.label.style.display = n > 1 ? "" : "none";
      if (c.select.options.length !== n) {
        c.select.innerHTML = "";
        for (var j = 0; j < n; j++) h("option", {value: String(j)}, c.select, String(j));
      }
      c.select.value = String(st[name]);
    });
  };
}

// ------------------------------------------------------------------ head view
function headView(root, d) {
  var st = Object.assign({}, d.state), focus = null, pinned = false, shown_ = null;
  var ctl = h("div", {"class": "d2l-controls"}, root);
  var sync = choices(ctl, d, st, ["layer", "example"], function () { focus = null; pinned = false; draw(); });
  var headRow = h("div", {"class": "d2l-buttons d2l-heads", role: "group", "aria-label": "heads"}, ctl);
  var box = h("div", {"class": "d2l-plot"}, root);
  var readout = h("div", {"class": "d2l-readout", "aria-live": "polite"}, root,
                  "hover over (or tap) a token to keep only its lines; hover a line for its weight");
  function heads() {
    var n = d.kinds[st.kind].h;
    st.heads = st.heads.filter(function (j) { return j < n; });
    if (headRow.children.length !== n) {
      headRow.innerHTML = "";
      headRow.style.display = n > 1 ? "" : "none";
      for (var j = 0; j < n; j++) (function (j) {
        var b = h("button", {type: "button", "data-head": j, "aria-label": "head " + j}, headRow);
        h("span", {"class": "d2l-swatch", style: "background:" + d.colors[j]}, b);
        b.appendChild(document.createTextNode("head " + j));
        b.addEventListener("click", function () {
          var k = st.heads.indexOf(j);
          if (k >= 0) st.heads.splice(k, 1); else st.heads.push(j);
          st.heads.sort(function (a, b) { return a - b; });
          draw();
        });
      })(j);
    }
    Array.prototype.forEach.call(headRow.children, function (b) {
      b.setAttribute("aria-pressed", st.heads.indexOf(+b.getAttribute("data-head")) >= 0 ? "true" : "false");
    });
  }
  function describe(v, P, side, i) {
    // the exact weights of one token's lines, largest first, per shown head
    var labs = side === "q" ? v.k : v.q, parts = [];
    st.heads.forEach(function (j) {
      var p = P[j], best = [];
      var n = side === "q" ? p.cols : p.rows;
      for (var t = 0; t < n; t++) {
        var w = side === "q" ? p.at(i, t) : p.at(t, i);
        if (w !== null) best.push([w, t]);
      }
      best.sort(function (a, b) { return b[0] - a[0]; });
      parts.push("head " + j + ": " + best.slice(0, 3).map(function (b) {
        return quote(labs[b[1]]) + " " + fmt(b[0]);
      }).join(", "));
    });
    var who = side === "q" ? "query " : "key ";
    return who + quote((side === "q" ? v.q : v.k)[i]) + " (position " + i + ") " +
      (side === "q" ? "attends to" : "is attended by") + " \u2014 " + parts.join("; ");
  }
  function draw() {
    sync(); heads();
    var ref = d.views[[st.kind, st.layer, st.example].join("|")];
    var v = {q: d.labels[ref.q], k: d.labels[ref.k]}, P = ref.heads.map(function (i) { return panel(d, i); });
    var W = width(root), Tq = v.q.length, Tk = v.k.length;
    shown_ = {v: v, P: P};
    var lw = Math.max(56, Math.min(140, labelWidth(v.q.concat(v.k)) + 10));
    var gap = Math.max(110, Math.min(320, W - 2 * lw - 20)), x0 = (W - 2 * lw - gap) / 2;
    var rh = Math.max(Tq, Tk) > 40 ? 15 : 18, top = 26, H = top + Math.max(Tq, Tk) * rh + 8;
    var xl = x0 + lw, xr = x0 + lw + gap;
    var svg = newSvg(box, W, H, ref.title + ": lines from each query (left) to each key (right)");
    text(svg, xl, 14, "queries", {"text-anchor": "end", "font-weight": "bold"});
    text(svg, xr, 14, "keys", {"font-weight": "bold"});
    var yq = function (i) { return top + (i + 0.5) * rh; };
    var g = el("g", {"class": "d2l-lines"}, svg);
    st.heads.forEach(function (j) {
      var p = P[j], gh = el("g", {stroke: d.colors[j], "data-head": j}, g);
      for (var r = 0; r < p.rows; r++) for (var c = 0; c < p.cols; c++) {
        if (focus && (focus[0] === "q" ? focus[1] !== r : focus[1] !== c)) continue;
        var w = p.at(r, c);
        if (w === null || w < 0.005) continue;
        var ln = el("line", {x1: xl + 4, y1: yq(r), x2: xr - 4, y2: yq(c), "stroke-opacity": Math.min(1, w).toFixed(3),
          "stroke-width": focus ? 2.5 : 2, "data-q": r, "data-k": c}, gh);
        ln.addEventListener("mouseenter", function (e) {
          var t = e.target, r = +t.getAttribute("data-q"), c = +t.getAttribute("data-k"), j = +t.parentNode.getAttribute("data-head");
          readout.textContent = "head " + j + ": query " + quote(v.q[r]) + " (" + r + ") \u2192 key " + quote(v.k[c]) +
            " (" + c + "): " + fmt(P[j].at(r, c));
        });
      }
    });
    function token(side, i) {
      var x = side === "q" ? xl : xr, y = yq(i), on = focus && focus[0] === side && focus[1] === i;
      var gt = el("g", {"class": "d2l-token" + (on ? " d2l-on" : ""), tabindex: 0, role: "button",
        "data-side": side, "data-i": i, "aria-label": (side === "q" ? "query " : "key ") + (side === "q" ? v.q : v.k)[i]}, svg);
      el("rect", {x: side === "q" ? x - lw + 2 : x - 2, y: y - rh / 2 + 1, width: lw - 2, height: rh - 2, rx: 3}, gt);
      text(gt, side === "q" ? x - 4 : x + 4, y + FS * 0.35, shown((side === "q" ? v.q : v.k)[i]), {"text-anchor": side === "q" ? "end" : "start"});
      var enter = function () { if (!pinned && !(focus && focus[0] === side && focus[1] === i)) { focus = [side, i]; draw(); readout.textContent = describe(v, P, side, i); } };
      var leave = function () { if (!pinned && focus) { focus = null; draw(); } };
      var tap = function (e) {
        e.preventDefault();
        if (pinned && focus && focus[0] === side && focus[1] === i) { pinned = false; focus = null; draw(); return; }
        pinned = true; focus = [side, i]; draw(); readout.textContent = describe(v, P, side, i);
      };
      gt.addEventListener("mouseenter", enter);
      gt.addEventListener("mouseleave", leave);
      gt.addEventListener("click", tap);
      gt.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") tap(e); });
    }
    for (var i = 0; i < Tq; i++) token("q", i);
    for (var k = 0; k < Tk; k++) token("k", k);
    root.setAttribute("data-state", JSON.stringify({kind: st.kind, layer: st.layer, example: st.example,
      heads: st.heads, focus: focus}));
  }
  draw(); onResize(root, draw);
  // for a page that drives the view (the live models): keep one token's lines
  return {focus: function (side, i) {
    focus = side === null ? null : [side, i]; pinned = side !== null; draw();
    if (focus) readout.textContent = describe(shown_.v, shown_.P, side, i);
  }};
}

// ------------------------------------------------------------------ model view
function heatURL(p, lut, lo, hi) {
  var c = document.createElement("canvas"); c.width = p.cols; c.height = p.rows;
  var ctx = c.getContext("2d"), img = ctx.createImageData(p.cols, p.rows);
  for (var r = 0; r < p.rows; r++) for (var k = 0; k < p.cols; k++) {
    var i = r * p.cols + k, v = p.at(r, k), t = hi > lo ? (v - lo) / (hi - lo) : 0;
    var col = v === null ? [211, 211, 211] : lut[Math.round(Math.max(0, Math.min(1, t)) * (lut.length - 1))];
    img.data[4 * i] = col[0]; img.data[4 * i + 1] = col[1]; img.data[4 * i + 2] = col[2]; img.data[4 * i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  return c.toDataURL();
}
function image(svg, p, x, y, w, hh, lut, lo, hi) {
  var im = el("image", {x: x, y: y, width: w, height: hh, preserveAspectRatio: "none",
    style: "image-rendering:pixelated;image-rendering:crisp-edges"}, svg);
  im.setAttribute("href", heatURL(p, lut, lo, hi));
  el("rect", {x: x, y: y, width: w, height: hh, fill: "none", stroke: "currentColor", "stroke-width": 0.6}, svg);
  return im;
}
function modelView(root, d) {
  var st = Object.assign({}, d.state);
  var ctl = h("div", {"class": "d2l-controls"}, root);
  var sync = choices(ctl, d, st, ["example"], function () { draw(); });
  var box = h("div", {"class": "d2l-plot"}, root);
  var readout = h("div", {"class": "d2l-readout", "aria-live": "polite"}, root,
                  "click (or tap) a head to open it; hover the open map to read a weight");
  var big = h("div", {"class": "d2l-plot d2l-scroll"}, root);
  function draw() {
    sync();
    var i = d.kinds[st.kind], W = width(root), L = i.L, n = i.h;
    var ml = 58, gap = 6, top = 20;
    var cell = Math.max(34, Math.min(96, (W - ml - 4 - (n - 1) * gap) / n));
    var cols = Math.max(1, Math.min(n, Math.floor((W - ml + gap) / (cell + gap))));
    var rowsPer = Math.ceil(n / cols), H = top + L * rowsPer * (cell + gap) + 4;
    var svg = newSvg(box, W, H, st.kind + " attention of example " + st.example + ": " + L + " layers by " + n + " heads");
    for (var j = 0; j < Math.min(n, cols); j++)
      text(svg, ml + j * (cell + gap) + cell / 2, 14, "head " + j, {"text-anchor": "middle"});
    for (var l = 0; l < L; l++) {
      var ref = d.views[[st.kind, l, st.example].join("|")];
      var y0 = top + l * rowsPer * (cell + gap);
      text(svg, ml - 8, y0 + cell / 2 + FS * 0.35, "layer " + l, {"text-anchor": "end"});
      ref.heads.forEach(function (pi, j) {
        var p = panel(d, pi), x = ml + (j % cols) * (cell + gap), y = y0 + Math.floor(j / cols) * (cell + gap);
        var open = st.open && st.open[0] === l && st.open[1] === j;
        var gt = el("g", {"class": "d2l-thumb" + (open ? " d2l-on" : ""), tabindex: 0, role: "button",
          "aria-label": "layer " + l + ", head " + j, "data-layer": l, "data-head": j}, svg);
        image(gt, p, x, y, cell, cell, d.lut, 0, 1);
        el("rect", {"class": "d2l-frame", x: x - 2, y: y - 2, width: cell + 4, height: cell + 4, rx: 3}, gt);
        var toggle = function (l, j) { return function (e) {
          e.preventDefault();
          st.open = st.open && st.open[0] === l && st.open[1] === j ? null : [l, j];
          draw();
        }; }(l, j);
        gt.addEventListener("click", toggle);
        gt.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") toggle(e); });
      });
    }
    drawOpen();
    root.setAttribute("data-state", JSON.stringify(st));
  }
  function drawOpen() {
    big.innerHTML = "";
    if (!st.open) return;
    var l = st.open[0], j = st.open[1], ref = d.views[[st.kind, l, st.example].join("|")];
    var p = panel(d, ref.heads[j]), q = d.labels[ref.q], k = d.labels[ref.k], W = width(root);
    var ml = Math.min(140, labelWidth(q)) + 14, cw = Math.max(12, Math.min(24, (W - ml - 12) / p.cols));
    var ch = Math.max(12, Math.min(24, cw)), rot = k.some(function (s) { return String(s).length > 2; });
    var xh = rot ? Math.min(140, labelWidth(k)) + 12 : FS + 10;
    var Wb = ml + p.cols * cw + 8, H = 24 + p.rows * ch + xh;
    var svg = newSvg(big, Wb, H, "layer " + l + ", head " + j + " of " + ref.title);
    svg.style.maxWidth = "none";
    text(svg, ml, 14, ref.title.replace(/, example/, ", head " + j + ", example"));
    var im = image(svg, p, ml, 24, p.cols * cw, p.rows * ch, d.lut, 0, 1);
    q.forEach(function (s, r) { text(svg, ml - 4, 24 + (r + 0.5) * ch + FS * 0.35, shown(s), {"text-anchor": "end"}); });
    k.forEach(function (s, c) {
      var x = ml + (c + 0.5) * cw, y = 24 + p.rows * ch + 4;
      if (rot) text(svg, x + 4, y, shown(s), {transform: "rotate(-90 " + (x + 4) + " " + y + ")", "text-anchor": "end"});
      else text(svg, x, y + FS, shown(s), {"text-anchor": "middle"});
    });
    var show = function (ev) {
      var r = im.getBoundingClientRect(), t = ev.touches ? ev.touches[0] : ev;
      var c = Math.floor((t.clientX - r.left) / r.width * p.cols), rr = Math.floor((t.clientY - r.top) / r.height * p.rows);
      if (c < 0 || rr < 0 || c >= p.cols || rr >= p.rows) return;
      var w = p.at(rr, c);
      readout.textContent = "layer " + l + ", head " + j + ": query " + quote(q[rr]) + " (" + rr + "), key " +
        quote(k[c]) + " (" + c + "): " + (w === null ? "masked" : fmt(w));
    };
    im.addEventListener("mousemove", show);
    im.addEventListener("touchstart", show, {passive: true});
  }
  draw(); onResize(root, draw);
}

// ------------------------------------------------------------------ data
// The page twin of d2lmini.selection.view_data, for attention computed in the page
// (the live models): one entry per kind {kind, layers: [layer][head] flat (T_q * T_k)
// weights, q, k: the query and key labels, allowed: function (i, j) -> false where a
// weight does not matter (masked), or null} -> what the views draw: {kinds: {kind: {L,
// B: 1, h}}, views: {"kind|layer|0": {title, q, k, heads}}, panels, masks, labels}.
// Panels keep the exact weights (scale 1); masked cells are stored as 0.
function viewData(kinds) {
  var out = {kinds: {}, views: {}, panels: [], masks: [], labels: []}, seen = {masks: {}, labels: {}};
  var put = function (store, key, value) {
    if (!(key in seen[store])) { seen[store][key] = out[store].length; out[store].push(value); }
    return seen[store][key];
  };
  kinds.forEach(function (s) {
    var L = s.layers.length, h = s.layers[0].length, Tq = s.q.length, Tk = s.k.length, m = null, bits = "";
    if (s.allowed) {
      for (var i = 0; i < Tq; i++) for (var j = 0; j < Tk; j++) bits += s.allowed(i, j) ? "1" : "0";
      m = put("masks", bits, bits);
    }
    var q = put("labels", JSON.stringify(s.q), s.q.map(String)), k = put("labels", JSON.stringify(s.k), s.k.map(String));
    out.kinds[s.kind] = {L: L, B: 1, h: h};
    for (var l = 0; l < L; l++) {
      out.views[[s.kind, l, 0].join("|")] = {title: s.kind + " attention, layer " + l + ", example 0", q: q, k: k,
        heads: s.layers[l].map(function (w) {
          var v = Array.prototype.slice.call(w, 0, Tq * Tk).map(function (x, n) { return m !== null && bits[n] === "0" ? 0 : x; });
          out.panels.push({values: v, scale: 1, rows: Tq, cols: Tk, mask: m});
          return out.panels.length - 1;
        })};
    }
  });
  return out;
}
var TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
function headColors(h) { var c = []; for (var i = 0; i < h; i++) c.push(TAB10[i % 10]); return c; }

window.d2lviews = {head: headView, model: modelView, data: viewData, colors: headColors};
if (typeof module !== "undefined" && module.exports) module.exports = window.d2lviews;
})();
