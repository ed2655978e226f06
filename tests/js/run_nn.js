// Runs d2lmini/static/nn.js in Node on the jobs a Python test wrote, and writes what it
// computed, so that the test can compare it with PyTorch (tests/test_live_js.py).
//   node tests/js/run_nn.js jobs.json out.json
// jobs.json: {"assets": {name: path of a weights asset}, "jobs": [{op, model, ...}]}.
// Numbers go out as JSON (shortest round-trip decimals: exact float64).
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const nn = require(path.join(__dirname, "..", "..", "d2lmini", "static", "nn.js"));

const [jobsPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(fs.readFileSync(jobsPath, "utf8"));
const models = {};
for (const [name, file] of Object.entries(spec.assets || {})) {
  globalThis.d2lWeights = {};
  vm.runInThisContext(fs.readFileSync(file, "utf8"), {filename: file});
  const [asset] = Object.values(globalThis.d2lWeights);   // the one the file defines
  models[name] = nn.model(asset);
}
const flat = (a) => Array.from(a);
const heads = (att) => att.map((hs) => hs.map((w) => flat(w)));
const t0 = Date.now();
const results = spec.jobs.map((job) => {
  const m = models[job.model];
  switch (job.op) {
    case "gpt": {             // one forward pass without a cache
      const out = m.forward(job.ids, null);
      return {logits: flat(out.logits), attention: heads(out.attention)};
    }
    case "gpt_cached": {      // the prompt, then one token at a time through the cache
      const cache = m.newCache(job.ids.length);
      const first = m.forward(job.ids.slice(0, job.prompt), cache);
      const steps = [{logits: flat(first.logits), attention: heads(first.attention)}];
      for (let t = job.prompt; t < job.ids.length; t++) {
        const o = m.forward([job.ids[t]], cache);
        steps.push({logits: flat(o.logits), attention: heads(o.attention)});
      }
      return {steps};
    }
    case "generate": {
      const start = process.hrtime.bigint();
      const ids = m.generate(job.ids, job.options);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      return {ids, ms};
    }
    case "bert": {
      const out = m.forward(job.ids, job.segments || null);
      return {hidden: flat(out.hidden), logits: flat(m.mlm(out.hidden, out.T)), attention: heads(out.attention)};
    }
    case "seq2seq": {
      const enc = m.encode(job.src);
      const dec = m.decode(job.tgt, enc);
      return {logits: flat(dec.logits), encoder: heads(enc.attention), decoder: heads(dec.self),
              cross: heads(dec.cross)};
    }
    case "greedy": {
      const start = process.hrtime.bigint();
      const ids = m.greedy(job.src, job.max_len, job.bos, job.eos);
      return {ids, ms: Number(process.hrtime.bigint() - start) / 1e6};
    }
    case "erf":
      return {values: job.x.map(nn.erf), gelu: job.x.map(nn.gelu), gelu_tanh: job.x.map(nn.geluTanh)};
    case "half":
      return {values: job.bits.map(nn.half)};
    case "sinusoid": {
      const rows = [];
      for (let p = 0; p < job.max_len; p++) rows.push(flat(nn.sinusoid(p, job.d_model)));
      return {table: rows};
    }
    case "probabilities":
      return {p: flat(nn.probabilities(Float64Array.from(job.logits), job.temperature, job.top_k))};
    case "random": {
      const r = nn.random(job.seed), a = [];
      for (let i = 0; i < job.n; i++) a.push(r());
      return {values: a};
    }
    case "error": {
      try { job.call === "gpt" ? m.forward(job.ids, null) : m.encode(job.ids); return {error: null}; }
      catch (e) { return {error: e.name + ": " + e.message}; }
    }
    default:
      throw new Error("unknown op " + job.op);
  }
});
fs.writeFileSync(outPath, JSON.stringify({results, ms: Date.now() - t0}));
