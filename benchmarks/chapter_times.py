"""Execute every chapter top to bottom and print its wall-clock seconds.

    python benchmarks/chapter_times.py                 # time all chapters
    python benchmarks/chapter_times.py chapters/04*.ipynb --write   # re-run and save outputs

``--write`` stores the outputs of this one clean run back into the notebook: the
way committed outputs are (re)made after a chapter or d2lmini changes.
"""
from __future__ import annotations

import argparse
import glob
import os
import time

import nbformat
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(path: str, write: bool, timeout: int) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": os.path.dirname(path)}}).execute()
    seconds = time.perf_counter() - start
    if write:
        nbformat.write(nb, path)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("notebooks", nargs="*", help="default: chapters/*.ipynb")
    ap.add_argument("--write", action="store_true", help="save the executed outputs in place")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = ap.parse_args()
    paths = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "chapters", "*.ipynb")))
    import torch
    from d2lmini.checkpoints import machine
    print(f"machine: {machine()}, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), cuda={torch.cuda.is_available()}")
    print("| chapter | seconds |\n|---|---:|")
    total = 0.0
    for p in paths:
        s = run(p, args.write, args.timeout)
        total += s
        print(f"| {os.path.basename(p)} | {s:.1f} |", flush=True)
    print(f"| **total** | {total:.1f} |")


if __name__ == "__main__":
    main()
