#!/usr/bin/env python3
"""Write our snapshot of cann-bench's facts (python/ascendc_ops/harness/data/cann_bench_910b2.json) from a
checkout of hicann/cann-bench: the cases of the tasks our ops implement or plan (data.TASKS, data.PRESET_TASKS)
and of the simple streaming tasks the model's machine figures are fitted on (data.FLOOR_TASKS), the built-in
kernels' 910B2 times with each baseline marked measured or cap (a capped one with the measurement the cap
replaced, from the times file's git history), the source commit and file of each, and how each task maps
to our op (harness/cann_bench/preset.py).

    tools/cann_bench_import.py --checkout DIR      # a work tree
    tools/cann_bench_import.py --git-dir DIR.git   # a bare git dir, read at HEAD
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from ascendc_ops.harness.cann_bench import data as D, preset as cann_bench  # noqa: E402


def snapshot(path: str) -> dict:
    doc = D.import_checkout(path)
    doc["ours"] = cann_bench.mapping_doc(doc)
    return D.encode(doc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--checkout", help="a cann-bench work tree")
    where.add_argument("--git-dir", help="a cann-bench git dir (bare or .git), read at HEAD")
    ap.add_argument("--out", default=str(D.DATA_FILE), help=f"default: {D.DATA_FILE}")
    args = ap.parse_args(argv)
    try:
        doc = snapshot(args.checkout or args.git_dir)
    except ValueError as e:
        print(f"cann_bench_import: {e}", file=sys.stderr)
        return 2
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    count = {g: sum(len(t["cases"]) for t in doc[g].values()) for g in ("tasks", "preset_tasks", "floor_tasks")}
    pre = sum("precap" in c for g in count for t in doc[g].values() for c in t["cases"])
    print(f"wrote {args.out}: {count['tasks']} cases of {len(doc['tasks'])} tasks, {count['preset_tasks']} of "
          f"{len(doc['preset_tasks'])} preset tasks, {count['floor_tasks']} of {len(doc['floor_tasks'])} floor tasks "
          f"({pre} capped baselines with their measurement before the cap) at {doc['source']['commit']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
