"""One benchmark provider in a process of its own (`bench attention`, `bench cross-entropy`), so the peak memory it
reports is its own: `module.worker(**payload)` runs there and its dict comes back as JSON on the last line."""

from __future__ import annotations

import json
import subprocess
import sys


def run_provider(module: str, suite: str, payload: dict) -> dict:
    code = f"import json, sys; from {module} import worker; w = json.loads(sys.argv[1]); print(json.dumps(worker(**w)))"
    res = subprocess.run([sys.executable, "-c", code, json.dumps(payload)], capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"bench {suite}: the {payload['provider']} worker failed:\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])
