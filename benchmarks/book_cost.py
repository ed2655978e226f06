"""What building the book costs: a full `jupyter-book build`, cold and with the
execution cache warm.

    python benchmarks/book_cost.py

The book's own _config.yml forces execution (every build re-runs every chapter, as CI
must).  Here the same config is copied with `execute_notebooks: cache` into a temporary
folder so the second build finds the executed notebooks in jupyter-cache.  Per-chapter
execution seconds: `python benchmarks/chapter_times.py`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(src: str) -> float:
    start = time.perf_counter()
    subprocess.run(["jupyter-book", "build", src, "-q"], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        book = os.path.join(tmp, "book")
        shutil.copytree(ROOT, book, ignore=shutil.ignore_patterns("_build", ".git", "*.egg-info"))
        cfg_path = os.path.join(book, "_config.yml")
        cfg = yaml.safe_load(open(cfg_path))
        cfg["execute"]["execute_notebooks"] = "cache"
        yaml.safe_dump(cfg, open(cfg_path, "w"))
        cold = build(book)
        warm = build(book)
    from d2lmini.checkpoints import machine
    print(f"machine: {machine()}")
    print("| jupyter-book build | seconds |\n|---|---:|")
    print(f"| cold (executes every chapter) | {cold:.0f} |\n| warm execution cache | {warm:.0f} |")


if __name__ == "__main__":
    main()
