"""One benchmark provider in a process of its own (`bench attention`, `bench cross-entropy`), so the peak memory it
reports is its own: `module.worker(**payload)` runs there and its dict comes back as JSON on the last line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from ..environment import progress


def run_provider(module: str, suite: str, payload: dict) -> dict:
    code = f"import json, sys; from {module} import worker; w = json.loads(sys.argv[1]); print(json.dumps(worker(**w)))"
    res = subprocess.run([sys.executable, "-c", code, json.dumps(payload)], capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"bench {suite}: the {payload['provider']} worker failed:\n{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


@contextmanager
def provider_runs(module: str, suite: str, providers, payload: dict) -> Iterator[tuple[dict, dict]]:
    """Each provider in turn (a progress line each), its worker given `payload` with `provider` and `out`, the file
    its tensors go to in a temporary folder: yields (provider -> the worker's dict, provider -> that file) while
    the files exist, for comparisons between providers."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {p: os.path.join(tmp, f"{p}.pt") for p in providers}
        rows = {}
        for i, p in enumerate(providers):
            progress(i, len(providers), p)
            rows[p] = run_provider(module, suite, dict(payload, provider=p, out=paths[p]))
        progress(len(providers), len(providers), "done")
        yield rows, paths
