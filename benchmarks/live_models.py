"""What the book's live models cost in the page: the weights asset of each model
(bytes), the time to decode it, and the time per answer, measured with the page's own
JavaScript (d2lmini/static/nn.js) in Node.

    python benchmarks/live_models.py

Prints a table and the machine.  A phone is several times slower than a desktop CPU;
the page's numbers equal PyTorch's (tests/test_live_js.py), only their speed is
measured here.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = r"""
const nn = require(process.argv[2]), fs = require("fs"), vm = require("vm");
const out = {};
for (const name of ["date", "shakespeare", "bert"]) {
  vm.runInThisContext(fs.readFileSync(process.argv[3] + "/weights-" + name + ".js", "utf8"));
  let t = process.hrtime.bigint();
  const m = nn.model(globalThis.d2lWeights[name]);
  const ms = () => Number(process.hrtime.bigint() - t) / 1e6;
  const r = {decode_ms: ms()};
  const v = globalThis.d2lWeights[name].meta.vocab;
  if (name === "date") {
    const src = Array.from("Wednesday, June 18, 2025").map(c => v.src.indexOf(c));
    m.greedy(src, 11, v.bos, v.eos);
    t = process.hrtime.bigint(); for (let i = 0; i < 20; i++) m.greedy(src, 11, v.bos, v.eos);
    r.answer_ms = ms() / 20;
  } else if (name === "shakespeare") {
    const p = Array.from("ROMEO:\n").map(c => v.chars.indexOf(c) + 1);
    m.generate(p, {maxNewTokens: 20});
    t = process.hrtime.bigint(); m.generate(p, {maxNewTokens: 120});
    r.ms_per_token_cached = ms() / 120;
    const long = []; for (let i = 0; i < 128; i++) long.push(p[i % p.length]);
    t = process.hrtime.bigint(); m.generate(long, {maxNewTokens: 10});
    r.ms_per_token_sliding = ms() / 10;
  } else {
    const ids = [v.cls].concat(Array.from("every head has its own ").map(c => v.itos.indexOf(c)), [v.mask]);
    m.mlm(m.forward(ids).hidden, ids.length);
    t = process.hrtime.bigint();
    for (let i = 0; i < 20; i++) { const o = m.forward(ids); m.mlm(o.hidden, o.T); }
    r.answer_ms = ms() / 20;
  }
  out[name] = r;
}
process.stdout.write(JSON.stringify(out));
"""


def main() -> None:
    import d2lmini as d2l
    from d2lmini.checkpoints import machine
    from d2lmini.export import weights_asset
    node = shutil.which("node")
    if node is None:
        raise SystemExit("needs node on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        sizes = {}
        for name in ("date", "shakespeare", "bert"):
            model, vocab = d2l.load_pretrained(name)
            text = weights_asset(model, vocab, name)
            pathlib.Path(tmp, f"weights-{name}.js").write_text(text)
            sizes[name] = (len(text.encode()), sum(p.numel() for p in model.parameters()))
        script = pathlib.Path(tmp, "bench.js")
        script.write_text(SCRIPT)
        r = subprocess.run([node, str(script), str(ROOT / "d2lmini" / "static" / "nn.js"),
                            tmp], capture_output=True, text=True, check=True)
    res = json.loads(r.stdout)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f}, node "
          f"{subprocess.run([node, '--version'], capture_output=True, text=True).stdout.strip()}")
    print("| model | parameters | weights asset | decode | per answer |\n|---|---:|---:|---:|---:|")
    for name, (size, n) in sizes.items():
        x = res[name]
        if name == "shakespeare":
            per = (f"{x['ms_per_token_cached']:.1f} ms/character (cache), "
                   f"{x['ms_per_token_sliding']:.0f} ms/character (sliding window)")
        else:
            per = f"{x['answer_ms']:.1f} ms"
        print(f"| {name} | {n:,} | {size / 1e6:.2f} MB | {x['decode_ms']:.0f} ms | {per} |")


if __name__ == "__main__":
    main()
