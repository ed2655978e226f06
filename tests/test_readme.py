"""The README's "own data" script runs as a learner would paste it."""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_own_data_script_from_the_readme_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Use d2lmini on your own data", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    script = tmp_path / "own.py"
    script.write_text(code + "\nprint('reloaded:', type(gpt2).__name__, len(vocab2))\n")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert re.fullmatch(r"\['\d+'\]", lines[0]), lines[0]      # one decoded reversal
    assert lines[-1].startswith("reloaded: GPT"), lines[-1]
    assert (tmp_path / "gpt.pt").exists()
