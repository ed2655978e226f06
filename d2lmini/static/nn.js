/* d2lmini in the page: the book's trained models computed in plain JavaScript.
   GPT (d2lmini/gpt.py), BERT (bert.py) and the encoder-decoder Transformer
   (transformer.py), op for op as the PyTorch modules, in float64: LayerNorm, exact and
   tanh GELU, masked softmax (a row with no allowed key is all zeros), padding and
   causal masks, a key/value cache, greedy decoding and seeded sampling.  Weights come
   from a weights asset (d2lmini/export.py).  No dependency: a browser gets
   window.d2lnn, Node gets module.exports (the tests compare it with PyTorch). */
(function (g) {
"use strict";
if (g.d2lnn) { if (typeof module !== "undefined" && module.exports) module.exports = g.d2lnn; return; }

// ------------------------------------------------------------------ weights
function bytes(b64) {
  var s = atob(b64), n = s.length, u = new Uint8Array(n);
  for (var i = 0; i < n; i++) u[i] = s.charCodeAt(i);
  return u;
}
function half(h) {
  var sign = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, f = h & 1023;
  if (e === 0) return sign * f * Math.pow(2, -24);
  if (e === 31) return f ? NaN : sign * Infinity;
  return sign * (1024 + f) * Math.pow(2, e - 25);
}
// asset = {meta, data}: every tensor as a Float64Array, exactly the stored values
function decode(asset) {
  var u = bytes(asset.data), dv = new DataView(u.buffer), W = {};
  asset.meta.tensors.forEach(function (t) {
    var n = t.shape.reduce(function (a, b) { return a * b; }, 1), out = new Float64Array(n), o = t.offset, i;
    if (t.dtype === "i8") {
      var rows = t.shape[0], cols = n / rows;
      for (var r = 0; r < rows; r++) {
        var s = Math.pow(2, dv.getInt8(o + n + r));
        for (var c = 0; c < cols; c++) out[r * cols + c] = dv.getInt8(o + r * cols + c) * s;
      }
    } else if (t.dtype === "f16") for (i = 0; i < n; i++) out[i] = half(dv.getUint16(o + 2 * i, true));
    else if (t.dtype === "f32") for (i = 0; i < n; i++) out[i] = dv.getFloat32(o + 4 * i, true);
    else if (t.dtype === "f64") for (i = 0; i < n; i++) out[i] = dv.getFloat64(o + 8 * i, true);
    else throw new Error("unknown weight dtype " + t.dtype);
    W[t.name] = {data: out, shape: t.shape};
  });
  return W;
}

// ------------------------------------------------------------------ functions
// erf, within a few units in the last place of the C library's: below 2.5 the series
// 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)) (positive terms, no
// cancellation); above, 1 - erfc(x) with erfc's continued fraction
// exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
function erf(x) {
  var a = Math.abs(x), r;
  if (a >= 6) return x > 0 ? 1 : -1;
  if (a === 0) return x;
  if (a < 2.5) {
    var x2 = a * a, term = a, sum = a;
    for (var n = 0; n < 200; n++) {
      term *= 2 * x2 / (2 * n + 3);
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    r = 2 / Math.sqrt(Math.PI) * Math.exp(-x2) * sum;
  } else {
    var t = a;
    for (var k = 120; k >= 1; k--) t = a + (k / 2) / t;
    r = 1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / t;
  }
  return x > 0 ? r : -r;
}
var ACT = {
  relu: function (x) { return x > 0 ? x : 0; },
  gelu: function (x) { return x * 0.5 * (1 + erf(x * Math.SQRT1_2)); },
  gelu_tanh: function (x) { return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x))); }
};
// x (T, in) -> x W^T + b (T, out); four running sums (faster; float64 either way)
function linear(x, T, W, b) {
  var dout = W.shape[0], din = W.shape[1], w = W.data, y = new Float64Array(T * dout);
  for (var t = 0; t < T; t++) {
    var xo = t * din;
    for (var o = 0; o < dout; o++) {
      var s0 = 0, s1 = 0, s2 = 0, s3 = 0, wo = o * din, i = 0;
      for (; i + 3 < din; i += 4) {
        s0 += x[xo + i] * w[wo + i]; s1 += x[xo + i + 1] * w[wo + i + 1];
        s2 += x[xo + i + 2] * w[wo + i + 2]; s3 += x[xo + i + 3] * w[wo + i + 3];
      }
      var s = (s0 + s1) + (s2 + s3);
      for (; i < din; i++) s += x[xo + i] * w[wo + i];
      y[t * dout + o] = b ? s + b.data[o] : s;
    }
  }
  return y;
}
// (x - mean) / sqrt(var + eps) * w + b over the last dim, biased variance
function layerNorm(x, T, d, w, b, eps) {
  var y = new Float64Array(T * d);
  for (var t = 0; t < T; t++) {
    var o = t * d, m = 0, v = 0, i;
    for (i = 0; i < d; i++) m += x[o + i];
    m /= d;
    for (i = 0; i < d; i++) v += (x[o + i] - m) * (x[o + i] - m);
    var sd = Math.sqrt(v / d + eps);
    for (i = 0; i < d; i++) y[o + i] = (x[o + i] - m) / sd * w.data[i] + b.data[i];
  }
  return y;
}
function add(x, y) { for (var i = 0; i < x.length; i++) x[i] += y[i]; return x; }
function map(x, f) { for (var i = 0; i < x.length; i++) x[i] = f(x[i]); return x; }
// scaled dot-product attention of h heads: q (Tq, d), k, v (Tk, d);
// allowed(i, j): may query i see key j.  -> {out (Tq, d), w: h x Float64Array(Tq*Tk)}
function attend(q, k, v, Tq, Tk, h, d, allowed) {
  var dk = d / h, scale = Math.sqrt(dk), out = new Float64Array(Tq * d), ws = [];
  for (var hh = 0; hh < h; hh++) {
    var w = new Float64Array(Tq * Tk), off = hh * dk;
    for (var i = 0; i < Tq; i++) {
      var mx = -Infinity, any = false, j, c, row = i * Tk;
      for (j = 0; j < Tk; j++) {
        if (!allowed(i, j)) continue;
        var s = 0;
        for (c = 0; c < dk; c++) s += q[i * d + off + c] * k[j * d + off + c];
        s /= scale;
        w[row + j] = s; any = true;
        if (s > mx) mx = s;
      }
      if (!any) continue;  // no allowed key: weights 0, output 0 (d2l.masked_softmax)
      var sum = 0;
      for (j = 0; j < Tk; j++) {
        if (allowed(i, j)) { w[row + j] = Math.exp(w[row + j] - mx); sum += w[row + j]; } else w[row + j] = 0;
      }
      for (j = 0; j < Tk; j++) w[row + j] /= sum;
      for (j = 0; j < Tk; j++) {
        var a = w[row + j];
        if (a === 0) continue;
        for (c = 0; c < dk; c++) out[i * d + off + c] += a * v[j * d + off + c];
      }
    }
    ws.push(w);
  }
  return {out: out, w: ws};
}
// the book's sinusoidal table, as d2lmini.export.page_positional_encoding: float64
// sin/cos rounded once to float32
function sinusoid(pos, d) {
  var row = new Float64Array(d);
  for (var i = 0; i < d; i++) {
    var f = Math.exp(-Math.log(10000) * (i - i % 2) / d);
    row[i] = Math.fround(i % 2 ? Math.cos(pos * f) : Math.sin(pos * f));
  }
  return row;
}
function Weights(W) {
  return function (name, optional) {
    var t = W[name];
    if (!t && !optional) throw new Error("the weights have no tensor " + name);
    return t || null;
  };
}
function rows(table, ids, scale, d) {  // embedding lookup (T, d)
  var x = new Float64Array(ids.length * d);
  for (var t = 0; t < ids.length; t++) for (var i = 0; i < d; i++) x[t * d + i] = table.data[ids[t] * d + i] * scale;
  return x;
}
function checkIds(ids, V, what) {
  if (!Array.isArray(ids) && !(ids && ids.length >= 0 && typeof ids !== "string")) throw new TypeError(what + " must be an array of integer ids");
  if (!ids.length) throw new Error(what + " must hold at least one token");
  for (var i = 0; i < ids.length; i++) {
    var t = ids[i];
    if (typeof t !== "number" || t !== Math.floor(t) || t < 0 || t >= V)
      throw new RangeError(what + ": id " + t + " is outside the vocabulary (expected ids 0.." + (V - 1) + ")");
  }
}
function nested(flat, R, C) { var out = []; for (var r = 0; r < R; r++) out.push(Array.from(flat.subarray(r * C, (r + 1) * C))); return out; }
function heads(ws, R, C) { return ws.map(function (w) { return nested(w, R, C); }); }

// a multi-head attention module: prefix "blocks.0.self_attn."
function mha(P, prefix, query, Tq, key, Tk, h, d, allowed, cache) {
  var q = linear(query, Tq, P(prefix + "W_q.weight"), P(prefix + "W_q.bias", true));
  var k = linear(key, Tk, P(prefix + "W_k.weight"), P(prefix + "W_k.bias", true));
  var v = linear(key, Tk, P(prefix + "W_v.weight"), P(prefix + "W_v.bias", true));
  if (cache) {  // keys and values of every position so far
    cache.K.set(k, cache.t0 * d); cache.V.set(v, cache.t0 * d);
    Tk = cache.t0 + Tk; k = cache.K.subarray(0, Tk * d); v = cache.V.subarray(0, Tk * d);
  }
  var a = attend(q, k, v, Tq, Tk, h, d, allowed);
  return {y: linear(a.out, Tq, P(prefix + "W_o.weight"), P(prefix + "W_o.bias", true)), w: a.w, Tk: Tk};
}
function ffn(P, prefix, x, T, act) {
  return linear(map(linear(x, T, P(prefix + "linear1.weight"), P(prefix + "linear1.bias", true)), act), T,
                P(prefix + "linear2.weight"), P(prefix + "linear2.bias", true));
}
function ln(P, prefix, x, T, d, eps) { return layerNorm(x, T, d, P(prefix + "weight"), P(prefix + "bias"), eps); }

// ------------------------------------------------------------------ GPT
function GPT(asset) {
  var c = asset.meta.config, P = Weights(decode(asset));
  this.config = c; this.P = P; this.V = c.vocab_size; this.d = c.d_model;
  this.scale = c.scale_embedding ? Math.sqrt(c.d_model) : 1;
  this.act = ACT[c.activation];
  this.head = c.tie_weights ? P("embedding.weight") : P("lm_head.weight");
  this.pe = [];
}
GPT.prototype.position = function (p) {
  var d = this.d;
  if (this.config.pos_encoding === "learned") return this.P("pos_encoding.weight").data.subarray(p * d, (p + 1) * d);
  return this.pe[p] || (this.pe[p] = sinusoid(p, d));
};
GPT.prototype.newCache = function (maxLen) {
  var L = this.config.num_layers, d = this.d, c = {length: 0, maxLen: maxLen, real: [], count: 0, K: [], V: []};
  for (var l = 0; l < L; l++) { c.K.push(new Float64Array(maxLen * d)); c.V.push(new Float64Array(maxLen * d)); }
  return c;
};
// ids (T new tokens) -> {logits (T, V) flat, attention [layer][head] (T, t0 + T) flat,
// Tk}; with a cache, ids continue the cached sequence (d2lmini.GPT.forward)
GPT.prototype.forward = function (ids, cache) {
  var c = this.config, d = this.d, T = ids.length, t0 = cache ? cache.length : 0, pad = c.pad_id;
  checkIds(ids, this.V, "tokens");
  if (t0 + T > c.max_len) throw new RangeError("sequence of " + (t0 + T) + " tokens is longer than the model's max_len=" + c.max_len);
  if (cache && t0 + T > cache.maxLen) throw new RangeError("the cache holds at most " + cache.maxLen + " tokens");
  var real = ids.map(function (t) { return pad === null || pad === undefined || t !== pad; });
  var keys = cache ? cache.real : real, count = cache ? cache.count : 0, pos = [];
  real.forEach(function (r, i) {
    count += r ? 1 : 0;
    pos.push(Math.max(0, Math.min(c.max_len - 1, count - 1)));
    if (cache) keys[t0 + i] = r;
  });
  if (cache) cache.count = count;
  var allowed = function (i, j) { return j <= t0 + i && keys[j]; };
  var x = rows(this.P("embedding.weight"), ids, this.scale, d);
  for (var t = 0; t < T; t++) { var p = this.position(pos[t]); for (var i = 0; i < d; i++) x[t * d + i] += p[i]; }
  var att = [], eps = c.norm_eps, Tk = T;
  for (var l = 0; l < c.num_layers; l++) {
    var b = "blocks." + l + ".";
    var kv = cache ? {K: cache.K[l], V: cache.V[l], t0: t0} : null, h = ln(this.P, b + "norm1.", x, T, d, eps);
    var a = mha(this.P, b + "self_attn.", h, T, h, T, c.num_heads, d, allowed, kv);
    add(x, a.y); att.push(a.w); Tk = a.Tk;
    add(x, ffn(this.P, b + "ffn.", ln(this.P, b + "norm2.", x, T, d, eps), T, this.act));
  }
  if (cache) cache.length += T;
  return {logits: linear(ln(this.P, "norm.", x, T, d, eps), T, this.head, null), attention: att, T: T, Tk: Tk};
};

// ------------------------------------------------------------------ sampling
// a seeded generator of uniform numbers in [0, 1) (mulberry32): the same seed, the
// same draws, in every browser
function random(seed) {
  var a = (seed >>> 0) || 0;
  return function () {
    a = (a + 0x6D2B79F5) >>> 0;
    var t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function argmax(v) { var b = 0; for (var i = 1; i < v.length; i++) if (v[i] > v[b]) b = i; return b; }
// the distribution d2lmini.gpt.sample_next draws from: softmax((l - max) / temperature),
// only the top_k largest logits kept (ties with the k-th kept, as torch's comparison)
function probabilities(logits, temperature, topK) {
  var n = logits.length, mx = -Infinity, i, z = new Float64Array(n);
  for (i = 0; i < n; i++) if (logits[i] > mx) mx = logits[i];
  for (i = 0; i < n; i++) z[i] = (logits[i] - mx) / temperature;
  if (topK && topK < n) {
    var sorted = Array.from(z).sort(function (a, b) { return b - a; }), kth = sorted[topK - 1];
    for (i = 0; i < n; i++) if (z[i] < kth) z[i] = -Infinity;
  }
  var m2 = -Infinity, s = 0;
  for (i = 0; i < n; i++) if (z[i] > m2) m2 = z[i];
  for (i = 0; i < n; i++) { z[i] = Math.exp(z[i] - m2); s += z[i]; }
  for (i = 0; i < n; i++) z[i] /= s;
  return z;
}
function sampleNext(logits, temperature, topK, rand) {
  if (!temperature) return argmax(logits);
  var p = probabilities(logits, temperature, topK), u = rand(), c = 0, last = 0;
  for (var i = 0; i < p.length; i++) { if (p[i] > 0) { c += p[i]; last = i; if (u < c) return i; } }
  return last;
}
// d2lmini.generate for one prompt, one token per call: -> {next(): the step's
// {id, step, attention: [layer][head] (Tk) of the newest token, keys: the ids it read}
// or null when done, ids: the prompt and what was written}
GPT.prototype.writer = function (prompt, opt) {
  opt = opt || {};
  var c = this.config, W = c.max_len, n = opt.maxNewTokens === undefined ? 100 : opt.maxNewTokens;
  var temperature = opt.temperature || 0, topK = opt.topK || null, eos = opt.eosId === undefined ? null : opt.eosId;
  var sliding = opt.slidingWindow === undefined ? true : opt.slidingWindow;
  var rand = random(opt.seed === undefined ? 0 : opt.seed), ids = prompt.slice(), self = this;
  checkIds(ids, this.V, "prompt");
  if (!(n >= 0 && n === Math.floor(n))) throw new RangeError("maxNewTokens must be an int >= 0, got " + n);
  if (!(temperature >= 0 && isFinite(temperature))) throw new RangeError("temperature must be a finite number >= 0, got " + temperature);
  if (topK !== null && !(topK >= 1 && topK <= this.V && topK === Math.floor(topK))) throw new RangeError("topK must be an int in 1.." + this.V);
  if (!sliding && ids.length + n > W) throw new RangeError("prompt + maxNewTokens exceeds the model's max_len=" + W);
  var cache = n ? this.newCache(Math.min(ids.length + n, W)) : null, out = null, step = 0, done = n === 0;
  var last = function () { var V = self.V, t = out.T - 1; return out.logits.slice(t * V, (t + 1) * V); };
  var newest = function () { return out.attention.map(function (hs) { return hs.map(function (w) { return Array.from(w.subarray((out.T - 1) * out.Tk, out.T * out.Tk)); }); }); };
  return {ids: ids, next: function () {
    if (done) return null;
    if (out === null) out = self.forward(ids.slice(-W), cache);
    else out = cache.length < cache.maxLen ? self.forward(ids.slice(-1), cache) : self.forward(ids.slice(-W), null);
    var logits = last();
    if (logits.some(function (v) { return v !== v; })) throw new Error("the model's logits are NaN at generation step " + step);
    if (c.pad_id !== null && c.pad_id !== undefined) logits[c.pad_id] = -Infinity;
    var id = sampleNext(logits, temperature, topK, rand);
    ids.push(id);
    // the newest query read the last Tk tokens before the new one
    var info = {id: id, step: step, attention: newest(), keys: ids.slice(-1 - out.Tk, -1)};
    step++;
    if (step === n || (eos !== null && id === eos)) done = true;
    return info;
  }};
};
GPT.prototype.generate = function (prompt, opt) {
  var w = this.writer(prompt, opt);
  while (w.next()) { /* one token per call */ }
  return w.ids;
};

// ------------------------------------------------------------------ BERT
function BERT(asset) {
  var c = asset.meta.config;
  this.config = c; this.P = Weights(decode(asset)); this.V = c.vocab_size; this.d = c.d_model;
  this.act = ACT[c.activation];
}
// ids (T) [, segments] -> {hidden (T, d), attention [layer][head] (T, T)}
BERT.prototype.forward = function (ids, segments) {
  var c = this.config, d = this.d, T = ids.length, P = this.P, eps = c.norm_eps, pad = c.pad_id;
  checkIds(ids, this.V, "tokens");
  if (T > c.max_len) throw new RangeError("sequence of " + T + " tokens is longer than the model's max_len=" + c.max_len);
  var seg = segments || ids.map(function () { return 0; });
  checkIds(seg, c.num_segments, "segments");
  var real = ids.map(function (t) { return pad === null || pad === undefined || t !== pad; }), count = 0;
  var pos = real.map(function (r, t) { count += r ? 1 : 0; return r ? count - 1 : t; });
  var tok = P("token_embedding.weight").data, sg = P("segment_embedding.weight").data, ps = P("position_embedding.weight").data;
  var x = new Float64Array(T * d);
  for (var t = 0; t < T; t++) for (var i = 0; i < d; i++)
    x[t * d + i] = tok[ids[t] * d + i] + sg[seg[t] * d + i] + ps[pos[t] * d + i];
  x = ln(P, "embed_norm.", x, T, d, eps);
  var allowed = function (i, j) { return real[j]; }, att = [];
  for (var l = 0; l < c.num_layers; l++) {
    var b = "blocks." + l + ".";
    var a = mha(P, b + "self_attn.", x, T, x, T, c.num_heads, d, allowed, null);
    x = ln(P, b + "norm1.", add(a.y, x), T, d, eps);
    x = ln(P, b + "norm2.", add(ffn(P, b + "ffn.", x, T, this.act), x), T, d, eps);
    att.push(a.w);
  }
  return {hidden: x, attention: att, T: T};
};
// hidden (T, d) -> masked-LM logits (T, V): dense, activation, LayerNorm, tied matrix
BERT.prototype.mlm = function (hidden, T) {
  var P = this.P, d = this.d, h = ln(P, "mlm_norm.", map(linear(hidden, T, P("mlm_dense.weight"), P("mlm_dense.bias")), this.act), T, d, this.config.norm_eps);
  return linear(h, T, P("token_embedding.weight"), P("mlm_bias"));
};

// ------------------------------------------------------------------ Transformer
function Transformer(asset) {
  var c = asset.meta.config;
  if (c.pos_encoding === "concat") throw new Error("pos_encoding='concat' is not supported in the page");
  this.config = c; this.P = Weights(decode(asset)); this.d = c.d_model; this.pe = [];
  this.scale = c.scale_embedding ? Math.sqrt(c.d_model) : 1;
}
Transformer.prototype.embed = function (side, ids) {
  var c = this.config, d = this.d, x = rows(this.P(side + ".embedding.weight"), ids, this.scale, d);
  if (c.pos_encoding === "none") return x;
  for (var t = 0; t < ids.length; t++) {
    var p = c.pos_encoding === "learned" ? this.P(side + ".pos_encoding.weight").data.subarray(t * d, (t + 1) * d)
                                         : (this.pe[t] || (this.pe[t] = sinusoid(t, d)));
    for (var i = 0; i < d; i++) x[t * d + i] += p[i];
  }
  return x;
};
function rightPadded(ids, pad, name) {
  for (var i = 1; i < ids.length; i++)
    if (ids[i] !== pad && ids[i - 1] === pad) throw new Error(name + " must be right-padded: a real token after a pad at " + i);
}
// src (S) -> {memory (S, d), real, attention [layer][head] (S, S)}
Transformer.prototype.encode = function (src) {
  var c = this.config, d = this.d, S = src.length, P = this.P, eps = 1e-5, pre = c.norm_first;
  checkIds(src, c.src_vocab_size, "src");
  if (S > c.max_len) throw new RangeError("source of " + S + " tokens is longer than the model's max_len=" + c.max_len);
  rightPadded(src, c.pad_id, "src");
  var real = src.map(function (t) { return t !== c.pad_id; }), allowed = function (i, j) { return real[j]; };
  var x = this.embed("encoder", src), att = [];
  for (var l = 0; l < c.num_layers; l++) {
    var b = "encoder.blocks." + l + ".", a, hasF = c.d_ff > 0;
    if (pre) {
      var h = ln(P, b + "norm1.", x, S, d, eps);
      a = mha(P, b + "self_attn.", h, S, h, S, c.num_heads, d, allowed, null); add(x, a.y);
      if (hasF) add(x, ffn(P, b + "ffn.", ln(P, b + "norm2.", x, S, d, eps), S, ACT.relu));
    } else {
      a = mha(P, b + "self_attn.", x, S, x, S, c.num_heads, d, allowed, null);
      x = ln(P, b + "norm1.", add(a.y, x), S, d, eps);
      if (hasF) x = ln(P, b + "norm2.", add(ffn(P, b + "ffn.", x, S, ACT.relu), x), S, d, eps);
    }
    att.push(a.w);
  }
  if (pre) x = ln(P, "encoder.norm.", x, S, d, eps);
  return {memory: x, real: real, attention: att, S: S};
};
// tgt (T), enc = encode(src) -> {logits (T, V) flat, self, cross: [layer][head]}
Transformer.prototype.decode = function (tgt, enc) {
  var c = this.config, d = this.d, T = tgt.length, S = enc.S, P = this.P, eps = 1e-5, pre = c.norm_first;
  checkIds(tgt, c.tgt_vocab_size, "tgt");
  if (T > c.max_len) throw new RangeError("target of " + T + " tokens is longer than the model's max_len=" + c.max_len);
  rightPadded(tgt, c.pad_id, "tgt");
  var real = tgt.map(function (t) { return t !== c.pad_id; });
  var self_ = function (i, j) { return j <= i && real[j]; }, cross = function (i, j) { return enc.real[j]; };
  var x = this.embed("decoder", tgt), sa = [], ca = [];
  for (var l = 0; l < c.num_layers; l++) {
    var b = "decoder.blocks." + l + ".", a, m, hasF = c.d_ff > 0;
    if (pre) {
      var h = ln(P, b + "norm1.", x, T, d, eps);
      a = mha(P, b + "self_attn.", h, T, h, T, c.num_heads, d, self_, null); add(x, a.y);
      m = mha(P, b + "cross_attn.", ln(P, b + "norm2.", x, T, d, eps), T, enc.memory, S, c.num_heads, d, cross, null); add(x, m.y);
      if (hasF) add(x, ffn(P, b + "ffn.", ln(P, b + "norm3.", x, T, d, eps), T, ACT.relu));
    } else {
      a = mha(P, b + "self_attn.", x, T, x, T, c.num_heads, d, self_, null);
      x = ln(P, b + "norm1.", add(a.y, x), T, d, eps);
      m = mha(P, b + "cross_attn.", x, T, enc.memory, S, c.num_heads, d, cross, null);
      x = ln(P, b + "norm2.", add(m.y, x), T, d, eps);
      if (hasF) x = ln(P, b + "norm3.", add(ffn(P, b + "ffn.", x, T, ACT.relu), x), T, d, eps);
    }
    sa.push(a.w); ca.push(m.w);
  }
  if (pre) x = ln(P, "decoder.norm.", x, T, d, eps);
  return {logits: linear(x, T, P("generator.weight"), P("generator.bias")), self: sa, cross: ca, T: T};
};
// d2lmini.greedy_decode for one source: -> ids without <bos> (a pad never chosen;
// stops after <eos>); onStep({id, step, cross: [layer][head] (S)}) after each token
Transformer.prototype.greedy = function (src, maxLen, bosId, eosId, onStep) {
  var c = this.config, V = c.tgt_vocab_size, enc = this.encode(src), ys = [bosId];
  for (var step = 0; step < maxLen; step++) {
    var out = this.decode(ys, enc), t = out.T - 1, logits = out.logits.slice(t * V, (t + 1) * V);
    if (logits.some(function (v) { return v !== v; })) throw new Error("the model's logits are NaN");
    logits[c.pad_id] = -Infinity;
    var next = argmax(logits);
    ys.push(next);
    if (onStep) onStep({id: next, step: step, cross: out.cross.map(function (hs) { return hs.map(function (w) { return Array.from(w.subarray(t * enc.S, (t + 1) * enc.S)); }); })});
    if (eosId !== null && eosId !== undefined && next === eosId) break;
  }
  return ys.slice(1);
};

var api = {decode: decode, half: half, erf: erf, gelu: ACT.gelu, geluTanh: ACT.gelu_tanh, sinusoid: sinusoid,
  random: random, probabilities: probabilities, sampleNext: sampleNext, argmax: argmax,
  nested: nested, heads: heads, GPT: GPT, BERT: BERT, Transformer: Transformer,
  model: function (asset) {
    var k = asset.meta["class"];
    if (k === "GPT") return new GPT(asset);
    if (k === "BERT") return new BERT(asset);
    if (k === "Transformer") return new Transformer(asset);
    throw new Error("unknown model class " + k);
  }};
g.d2lnn = api;
if (typeof module !== "undefined" && module.exports) module.exports = api;
})(typeof window !== "undefined" ? window : globalThis);
