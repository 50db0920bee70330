"""Runs a test worker in two spawned processes (gloo), failing the test on a timeout."""

from __future__ import annotations

import os
import socket
import time

import pytest
import torch.multiprocessing as mp

from conftest import TEST_DIRS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two(worker, out_dir: str, timeout_s: float, what: str) -> None:
    """worker(rank, world_size, port, out_dir) in 2 processes; the spawned ones import tests/ modules
    (of any area, as conftest.py puts them on sys.path here)."""
    dirs = [str(d) for d in TEST_DIRS]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*dirs, os.environ.get("PYTHONPATH")]))
    ctx = mp.start_processes(worker, args=(2, free_port(), out_dir), nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout_s
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > deadline:
                pytest.fail(f"{what} workers did not finish within {timeout_s} s")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
                p.join(5)
