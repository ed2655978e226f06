/* d2lmini live models: the book's trained models answering in the reader's browser
   (d2lmini/live.py).  A box per model: chapter 8's date Transformer, chapter 12's
   character GPT, chapter 14's small BERT.  The arithmetic is nn.js's, the attention
   views views.js's; this file reads the reader's input, loads the weights on first
   use (a classic script next to this one: works from file:// and over HTTP, nothing
   leaves the book) and registers window.d2lModels[name] for code and tests:
     date:        encode, encodeTarget, decode, logits, attention, translate
     shakespeare: encode, decode, logits, attention, generate
     bert:        encode, decode, logits, attention, fill
   Every method that needs the weights returns a Promise.  Defined once per page. */
(function () {
"use strict";
if (window.d2llive) return;
var script = document.currentScript;
var BASE = script && script.src ? script.src.replace(/[^\/]*$/, "") : null;
window.d2lModels = window.d2lModels || {};

// ------------------------------------------------------------------ weights, lazily
var pending = {};
function weights(name) {
  if (pending[name]) return pending[name];
  pending[name] = new Promise(function (resolve, reject) {
    var have = function () { return window.d2lWeights && window.d2lWeights[name]; };
    if (have()) return resolve(have());
    if (!BASE) return reject(new Error("the weights of '" + name + "' are not in this page: run the cell that shows the model"));
    var s = document.createElement("script");
    s.src = BASE + "weights-" + name + ".js";
    s.onload = function () { have() ? resolve(have()) : reject(new Error("weights-" + name + ".js defines no weights")); };
    s.onerror = function () { reject(new Error("could not load weights-" + name + ".js")); };
    document.head.appendChild(s);
  });
  pending[name].catch(function () { delete pending[name]; });
  return pending[name];
}
var built = {};
function model(name) {
  return built[name] || (built[name] = weights(name).then(function (asset) { return window.d2lnn.model(asset); }));
}
function chars(text) { return Array.from(String(text)); }
function nestedHeads(att, R, C) { return att.map(function (hs) { return window.d2lnn.heads(hs, R, C); }); }

// ------------------------------------------------------------------ the three models
function dateAPI(d) {
  var v = d.vocab, src = {}, tgt = {};
  v.src.forEach(function (t, i) { src[t] = i; });
  v.tgt.forEach(function (t, i) { tgt[t] = i; });
  var api = {
    name: "date", vocab: v,
    // characters -> ids; a character the model never saw is <unk>, as d2l.Vocab
    encode: function (text) { return chars(text).map(function (c) { return c in src ? src[c] : v.unk; }); },
    encodeTarget: function (iso) { return [v.bos].concat(chars(iso).map(function (c) { return c in tgt ? tgt[c] : v.unk; })); },
    // target ids -> text, without <bos>/<pad>, up to <eos> (Vocab.decode(strip=True))
    decode: function (ids) {
      var out = "";
      for (var i = 0; i < ids.length; i++) {
        if (ids[i] === v.eos) break;
        if (ids[i] !== v.pad && ids[i] !== v.bos) out += v.tgt[ids[i]];
      }
      return out;
    },
    logits: function (srcIds, tgtIds) {
      return model("date").then(function (m) { var o = m.decode(tgtIds, m.encode(srcIds)); return window.d2lnn.nested(o.logits, o.T, v.tgt.length); });
    },
    attention: function (srcIds, tgtIds) {
      return model("date").then(function (m) {
        var e = m.encode(srcIds), o = m.decode(tgtIds, e), S = srcIds.length, T = tgtIds.length;
        return {encoder: nestedHeads(e.attention, S, S), decoder: nestedHeads(o.self, T, T), cross: nestedHeads(o.cross, T, S)};
      });
    },
    // greedy decoding, as d2l.greedy_decode(model, src, 11, bos, eos)
    ids: function (text, onStep) {
      return model("date").then(function (m) { return m.greedy(api.encode(text), d.max_len, v.bos, v.eos, onStep); });
    },
    translate: function (text) { return api.ids(text).then(api.decode); },
    ready: function () { return model("date").then(function () { return true; }); }
  };
  return api;
}
function gptAPI(d) {
  var v = d.vocab, idx = {};
  v.chars.forEach(function (c, i) { idx[c] = i + 1; });
  var api = {
    name: "shakespeare", vocab: v,
    encode: function (text) {
      var cs = chars(text), bad = cs.filter(function (c) { return !(c in idx); });
      if (bad.length) throw new Error("characters " + JSON.stringify(Array.from(new Set(bad)).sort()) + " are not in the vocabulary");
      return cs.map(function (c) { return idx[c]; });
    },
    decode: function (ids) { return ids.filter(function (i) { return i !== 0; }).map(function (i) { return v.chars[i - 1]; }).join(""); },
    logits: function (ids) { return model("shakespeare").then(function (m) { var o = m.forward(ids, null); return window.d2lnn.nested(o.logits, o.T, m.V); }); },
    attention: function (ids) { return model("shakespeare").then(function (m) { var o = m.forward(ids, null); return nestedHeads(o.attention, o.T, o.T); }); },
    writer: function (prompt, opt) { return model("shakespeare").then(function (m) { return m.writer(api.encode(prompt), opt); }); },
    // the continuation of prompt (d2l.generate with sliding_window=True; greedy at
    // temperature 0, else sampled with a seeded generator of the page's own)
    generate: function (prompt, opt) {
      opt = Object.assign({maxNewTokens: 100, temperature: 0, topK: null, seed: 0}, opt || {});
      return api.writer(prompt, opt).then(function (w) {
        var n0 = w.ids.length;
        while (w.next()) { /* one token per call */ }
        return api.decode(w.ids.slice(n0));
      });
    },
    ready: function () { return model("shakespeare").then(function () { return true; }); }
  };
  return api;
}
function bertAPI(d) {
  var v = d.vocab, idx = {};
  v.itos.forEach(function (t, i) { if (i >= 4) idx[t] = i; });
  var api = {
    name: "bert", vocab: v,
    // [CLS] + the characters (as chapter 14 feeds it), each "[MASK]" one mask token;
    // a text may also spell out [CLS] (then none is added) and [SEP]
    encode: function (text) {
      var ids = [], bad = [], special = {"[MASK]": v.mask, "[CLS]": v.cls, "[SEP]": v.sep};
      String(text).split(/(\[MASK\]|\[CLS\]|\[SEP\])/).forEach(function (piece) {
        if (piece in special) return ids.push(special[piece]);
        chars(piece).forEach(function (c) { if (c in idx) ids.push(idx[c]); else bad.push(c); });
      });
      if (bad.length) throw new Error("characters " + JSON.stringify(Array.from(new Set(bad)).sort()) + " are not in the vocabulary");
      return ids[0] === v.cls ? ids : [v.cls].concat(ids);
    },
    // as d2lmini.bert.CharVocab.decode: characters, "_" for [MASK], other specials dropped
    decode: function (ids) { return ids.map(function (i) { return i >= 4 ? v.itos[i] : i === v.mask ? "_" : ""; }).join(""); },
    logits: function (ids) { return model("bert").then(function (m) { var o = m.forward(ids); return window.d2lnn.nested(m.mlm(o.hidden, o.T), o.T, m.V); }); },
    attention: function (ids) { return model("bert").then(function (m) { var o = m.forward(ids); return nestedHeads(o.attention, o.T, o.T); }); },
    // the five most likely fillers of the first [MASK]: softmax of its masked-LM logits
    fill: function (text) {
      var ids = api.encode(text), at = ids.indexOf(v.mask);
      if (at < 0) return Promise.reject(new Error("the text has no [MASK]"));
      return model("bert").then(function (m) {
        var o = m.forward(ids), V = m.V, l = m.mlm(o.hidden, o.T).slice(at * V, (at + 1) * V);
        var mx = -Infinity, s = 0, p = [], i;
        for (i = 0; i < V; i++) mx = Math.max(mx, l[i]);
        for (i = 0; i < V; i++) { p.push(Math.exp(l[i] - mx)); s += p[i]; }
        return p.map(function (x, i) { return {id: i, token: v.itos[i], p: x / s}; })
          .sort(function (a, b) { return b.p - a.p || a.id - b.id; }).slice(0, 5)
          .map(function (x) { return {token: x.token, p: x.p}; });
      });
    },
    ready: function () { return model("bert").then(function () { return true; }); }
  };
  return api;
}

// ------------------------------------------------------------------ page helpers
function h(tag, attrs, parent, txt) {
  var e = document.createElement(tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (txt !== undefined) e.textContent = txt;
  if (parent) parent.appendChild(e);
  return e;
}
function shown(s) { s = String(s); return s === " " ? "\u2423" : s === "\n" ? "\u21b5" : s; }
function fail(where, e) { where.textContent = String(e && e.message || e); where.classList.add("d2l-error"); }
function busy(box, on) { box.setAttribute("aria-busy", on ? "true" : "false"); }
// a head view (views.js) of attention computed here, drawn into `slot`
function headView(slot, kinds, state) {
  slot.className = "d2l-view d2l-live-view";
  slot.innerHTML = "";
  var data = window.d2lviews.data(kinds), h0 = data.kinds[kinds[0].kind].h;
  data.colors = window.d2lviews.colors(h0);
  data.state = Object.assign({kind: kinds[0].kind, layer: 0, example: 0, heads: Array.from({length: h0}, function (_, i) { return i; })}, state || {});
  return window.d2lviews.head(slot, data);
}
function later(f, ms) { return new Promise(function (r) { setTimeout(function () { r(f()); }, ms); }); }
function examples(row, list, on) {
  list.forEach(function (t) { h("button", {type: "button", "class": "d2l-chip"}, row, t).addEventListener("click", function () { on(t); }); });
}

// ------------------------------------------------------------------ ch8: dates
function dateBox(root, d) {
  var api = window.d2lModels.date || (window.d2lModels.date = dateAPI(d)), run = 0, toIndex = {};
  d.vocab.src.forEach(function (t, i) { toIndex[t] = i; });
  var form = h("form", {"class": "d2l-live-row"}, root);
  var input = h("input", {type: "text", value: d.state.text, "aria-label": "a date", maxlength: d.max_src, spellcheck: "false", autocomplete: "off"}, form);
  h("button", {type: "submit", "class": "d2l-go"}, form, "translate");
  examples(h("div", {"class": "d2l-chips", "aria-label": "examples"}, root), d.examples, function (t) { input.value = t; go(); });
  var answer = h("div", {"class": "d2l-answer", "aria-live": "polite"}, root);
  var note = h("div", {"class": "d2l-note"}, root, d.hint);
  var slot = h("div", {"class": "d2l-live-slot"}, root);
  function go() {
    var text = input.value, my = ++run;
    note.textContent = ""; note.classList.remove("d2l-error");
    root.removeAttribute("data-answer");
    var unknown = chars(text).filter(function (c) { return !(c in toIndex); });
    if (!text.length) return;
    if (chars(text).length > d.max_src) return fail(note, "at most " + d.max_src + " characters");
    busy(root, true);
    answer.textContent = "";
    api.ids(text).then(function (ids) {
      var src = api.encode(text), out = ids.map(function (i) { return d.vocab.tgt[i]; });
      var tgtIn = [d.vocab.bos].concat(ids.slice(0, -1));
      return api.attention(src, tgtIn).then(function (att) {
        if (unknown.length) note.textContent = "characters the model never saw (read as <unk>): " + Array.from(new Set(unknown)).join(" ");
        var q = out.map(String), k = chars(text), flat = function (x) { return x.map(function (hs) { return hs.map(function (w) { return [].concat.apply([], w); }); }); };
        var kinds = [{kind: "cross", layers: flat(att.cross), q: q, k: k, allowed: null},
                     {kind: "decoder self", layers: flat(att.decoder), q: q, k: ["<bos>"].concat(q.slice(0, -1)), allowed: function (i, j) { return j <= i; }},
                     {kind: "encoder self", layers: flat(att.encoder), q: k, k: k, allowed: null}];
        // written token by token: each new character with the lines of its query
        var step = function (t) {
          if (my !== run) return;
          answer.textContent = ids.slice(0, t + 1).filter(function (i) { return i !== d.vocab.eos; }).map(function (i) { return d.vocab.tgt[i]; }).join("");
          var part = kinds.map(function (s) {
            if (s.kind === "encoder self") return s;
            return Object.assign({}, s, {q: s.q.slice(0, t + 1), k: s.kind === "cross" ? s.k : s.k.slice(0, t + 1),
              layers: s.layers.map(function (hs) { return hs.map(function (w) { return s.kind === "cross" ? w.slice(0, (t + 1) * k.length) : rows(w, q.length, t + 1); }); })});
          });
          headView(slot, part).focus("q", t);
          if (t + 1 < ids.length) return later(function () { return step(t + 1); }, d.delay);
          root.setAttribute("data-answer", api.decode(ids));
          busy(root, false);
        };
        return step(0);
      });
    }).catch(function (e) { busy(root, false); fail(note, e); });
  }
  form.addEventListener("submit", function (e) { e.preventDefault(); go(); });
}
function rows(w, n, t) {  // the first t rows and columns of an n x n flat matrix
  var out = [];
  for (var i = 0; i < t; i++) for (var j = 0; j < t; j++) out.push(w[i * n + j]);
  return out;
}

// ------------------------------------------------------------------ ch12: GPT writes
function gptBox(root, d) {
  var api = window.d2lModels.shakespeare || (window.d2lModels.shakespeare = gptAPI(d)), run = 0, steps = [], chosen = -1;
  var prompt = h("textarea", {rows: 2, "aria-label": "prompt", spellcheck: "false"}, root);
  prompt.value = d.state.prompt;
  var row = h("div", {"class": "d2l-live-row d2l-wrap"}, root);
  var temp = slider(row, "temperature", 0, 1.5, 0.05, d.state.temperature);
  var lab = h("label", {}, row); h("span", {}, lab, "top-k ");
  var topk = h("select", {"aria-label": "top-k"}, lab);
  [["all", ""], ["20", "20"], ["10", "10"], ["5", "5"], ["2", "2"]].forEach(function (o) { h("option", {value: o[1]}, topk, o[0]); });
  topk.value = d.state.top_k ? String(d.state.top_k) : "";
  lab = h("label", {}, row); h("span", {}, lab, "seed ");
  var seed = h("input", {type: "number", min: 0, step: 1, value: d.state.seed, "aria-label": "seed", "class": "d2l-seed"}, lab);
  var length = slider(row, "characters", 20, 400, 20, d.state.length);
  var write = h("button", {type: "button", "class": "d2l-go"}, row, "write");
  var out = h("pre", {"class": "d2l-gen", "aria-live": "polite"}, root);
  var note = h("div", {"class": "d2l-note"}, root, d.hint);
  var attn = h("div", {"class": "d2l-newest"}, root);
  var sel = h("div", {"class": "d2l-live-row d2l-wrap"}, attn);
  lab = h("label", {}, sel); h("span", {}, lab, "layer ");
  var layer = h("select", {"aria-label": "layer"}, lab);
  for (var l = 0; l < d.config.num_layers; l++) h("option", {value: l}, layer, String(l));
  layer.value = String(d.config.num_layers - 1);
  lab = h("label", {}, sel); h("span", {}, lab, "head ");
  var head = h("select", {"aria-label": "head"}, lab);
  h("option", {value: "mean"}, head, "mean");
  for (var j = 0; j < d.config.num_heads; j++) h("option", {value: j}, head, String(j));
  var ctx = h("div", {"class": "d2l-context"}, attn);
  var readout = h("div", {"class": "d2l-readout"}, attn);
  attn.style.display = "none";
  function show(n) {  // the attention of the query that wrote character n
    var s = steps[n];
    if (!s) return;
    chosen = n;
    attn.style.display = "";
    var L = +layer.value, hs = s.attention[L], w = head.value === "mean"
      ? hs[0].map(function (_, k) { return hs.reduce(function (a, x) { return a + x[k]; }, 0) / hs.length; }) : hs[+head.value];
    var mx = Math.max.apply(null, w) || 1;
    ctx.innerHTML = "";
    s.keys.forEach(function (id, k) {
      var c = id ? d.vocab.chars[id - 1] : "", span = h("span", {"class": "d2l-key" + (k === s.keys.length - 1 ? " d2l-query" : ""), "data-w": w[k].toFixed(4)}, ctx, c === "\n" ? "\u21b5\n" : c);
      span.style.backgroundColor = "rgba(214,39,40," + (w[k] / mx).toFixed(3) + ")";
      var tell = function () { readout.textContent = "key " + JSON.stringify(c) + " (position " + k + "): " + w[k].toFixed(4); };
      span.addEventListener("mouseenter", tell); span.addEventListener("click", tell);
    });
    var wrote = d.vocab.chars[s.id - 1];
    readout.textContent = "the newest character " + JSON.stringify(d.vocab.chars[s.keys[s.keys.length - 1] - 1]) +
      " read these " + s.keys.length + " to write " + JSON.stringify(wrote) + " (layer " + L + ", " +
      (head.value === "mean" ? "mean over heads" : "head " + head.value) + "; hover a character for its weight)";
    Array.prototype.forEach.call(out.querySelectorAll(".d2l-new"), function (e, k) { e.classList.toggle("d2l-on", k === n); });
    root.setAttribute("data-step", String(n));
  }
  layer.addEventListener("change", function () { show(chosen); });
  head.addEventListener("change", function () { show(chosen); });
  function go() {
    var my = ++run;
    note.textContent = ""; note.classList.remove("d2l-error"); steps = [];
    root.removeAttribute("data-text");
    var opt = {maxNewTokens: +length.input.value, temperature: +temp.input.value,
               topK: topk.value ? +topk.value : null, seed: Math.max(0, Math.floor(+seed.value || 0))};
    var text = prompt.value;
    try { api.encode(text); if (!text.length) throw new Error("write a prompt first"); } catch (e) { return fail(note, e); }
    busy(root, true); write.textContent = "stop";
    out.innerHTML = ""; h("span", {"class": "d2l-prompt"}, out, text);
    api.writer(text, opt).then(function (w) {
      var spent = 0;
      var tick = function () {
        if (my !== run) return;
        var t0 = performance.now(), s;
        // as many tokens as fit in a frame: the text grows as fast as it is written
        while ((s = w.next())) {
          steps.push(s);
          var i = steps.length - 1, span = h("span", {"class": "d2l-new", "data-step": i}, out, d.vocab.chars[s.id - 1]);
          span.addEventListener("click", function () { show(+this.getAttribute("data-step")); });
          if (performance.now() - t0 > d.frame_ms) break;
        }
        spent += performance.now() - t0;
        show(steps.length - 1);
        if (s) return requestAnimationFrame(tick);
        busy(root, false); write.textContent = "write";
        note.textContent = steps.length + " characters computed in " + (spent / 1000).toFixed(2) +
          " s (" + (spent / Math.max(1, steps.length)).toFixed(1) + " ms each), in this browser";
        root.setAttribute("data-text", api.decode(w.ids.slice(api.encode(text).length)));
      };
      tick();
    }).catch(function (e) { busy(root, false); write.textContent = "write"; fail(note, e); });
  }
  write.addEventListener("click", function () {
    if (root.getAttribute("aria-busy") === "true") { run++; busy(root, false); write.textContent = "write"; return; }
    go();
  });
}
function slider(parent, name, min, max, step, value) {
  var lab = h("label", {}, parent);
  h("span", {}, lab, name + " ");
  var inp = h("input", {type: "range", min: min, max: max, step: step, "aria-label": name}, lab);
  inp.value = value;
  var o = h("output", {}, lab, String(value));
  inp.addEventListener("input", function () { o.textContent = inp.value; });
  return {input: inp};
}

// ------------------------------------------------------------------ ch14: BERT fills
function bertBox(root, d) {
  var api = window.d2lModels.bert || (window.d2lModels.bert = bertAPI(d)), run = 0;
  var form = h("form", {"class": "d2l-live-row"}, root);
  var input = h("input", {type: "text", value: d.state.text, "aria-label": "a sentence with [MASK]", spellcheck: "false", autocomplete: "off"}, form);
  h("button", {type: "submit", "class": "d2l-go"}, form, "fill");
  var chips = h("div", {"class": "d2l-chips"}, root);
  h("button", {type: "button", "class": "d2l-chip"}, chips, "insert [MASK]").addEventListener("click", function () {
    var a = input.selectionStart || 0, b = input.selectionEnd || a, s = input.value;
    input.value = s.slice(0, a) + "[MASK]" + s.slice(b + (b === a && s[a] && s[a] !== " " ? 1 : 0));
    input.focus();
  });
  examples(chips, d.examples, function (t) { input.value = t; go(); });
  var answer = h("ol", {"class": "d2l-fillers", "aria-live": "polite"}, root);
  var note = h("div", {"class": "d2l-note"}, root, d.hint);
  var slot = h("div", {"class": "d2l-live-slot"}, root);
  function go() {
    var text = input.value, my = ++run, ids;
    note.textContent = ""; note.classList.remove("d2l-error");
    root.removeAttribute("data-fillers");
    try {
      ids = api.encode(text);
      if (ids.indexOf(d.vocab.mask) < 0) throw new Error("put [MASK] where a character is missing");
      if (ids.length > d.config.max_len) throw new Error("at most " + (d.config.max_len - 1) + " characters ([MASK] counts as one)");
    } catch (e) {  // no answer of an earlier sentence beside the message
      answer.innerHTML = ""; slot.innerHTML = ""; slot.className = "d2l-live-slot";
      return fail(note, e);
    }
    busy(root, true);
    Promise.all([api.fill(text), api.attention(ids)]).then(function (r) {
      if (my !== run) return;
      answer.innerHTML = "";
      r[0].forEach(function (f) {
        var li = h("li", {}, answer), bar = h("span", {"class": "d2l-bar"}, li);
        bar.style.width = (100 * f.p).toFixed(1) + "%";
        h("code", {}, li, shown(f.token));
        h("span", {"class": "d2l-p"}, li, f.p.toFixed(3));
      });
      var labels = ids.map(function (i) { return i === d.vocab.mask ? "[MASK]" : shown(d.vocab.itos[i]); });
      var view = headView(slot, [{kind: "self", layers: r[1].map(function (hs) { return hs.map(function (w) { return [].concat.apply([], w); }); }),
                                  q: labels, k: labels, allowed: null}]);
      var at = ids.indexOf(d.vocab.mask);
      view.focus("q", at);
      // another layer: still what [MASK] attended to (the view itself would show all lines)
      Array.prototype.forEach.call(slot.querySelectorAll("select"), function (s) {
        s.addEventListener("change", function () { view.focus("q", at); });
      });
      root.setAttribute("data-fillers", JSON.stringify(r[0]));
      busy(root, false);
    }).catch(function (e) { busy(root, false); fail(note, e); });
  }
  form.addEventListener("submit", function (e) { e.preventDefault(); go(); });
}

// registered when the page loads (the weights load on the first call)
function register(name, make, box) {
  return function (root, d) {
    if (!window.d2lModels[name]) window.d2lModels[name] = make(d);
    box(root, d);
  };
}
window.d2llive = {date: register("date", dateAPI, dateBox), shakespeare: register("shakespeare", gptAPI, gptBox),
                  bert: register("bert", bertAPI, bertBox), api: {date: dateAPI, shakespeare: gptAPI, bert: bertAPI}};
})();
