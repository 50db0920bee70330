"""Runs a test worker in two spawned processes (gloo), failing the test on a timeout."""

from __future__ import annotations

import os
import socket
import time
from contextlib import contextmanager
from datetime import timedelta

import pytest
import torch.multiprocessing as mp

from conftest import TEST_DIRS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mark_done(out_dir: str, rank: int) -> None:
    """A worker calls this once its work is done and past its final barrier (before tearing gloo down)."""
    open(os.path.join(out_dir, f".rank{rank}.done"), "w").close()


@contextmanager
def gloo_group(rank: int, world: int, port: int, out_dir: str):
    """A worker's body runs inside: one torch thread, a gloo group on `port`; when the body has finished,
    a barrier (neither rank tears its gloo pairs down while the other still uses them), mark_done, and
    the group destroyed whatever happened."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timedelta(seconds=60)
    )
    try:
        yield
        dist.barrier()
        mark_done(out_dir, rank)
    finally:
        dist.destroy_process_group()


def run_two(worker, out_dir: str, timeout_s: float, what: str) -> None:
    """worker(rank, world_size, port, out_dir) in 2 processes; the spawned ones import tests/ modules
    (of any area, as conftest.py puts them on sys.path here).
    Done when both workers have called mark_done (after their final barrier): a worker then stuck in
    gloo's destroy_process_group (measured: about 1 run in 6 on a 2-core machine, one rank hangs there after
    the other rank's destroy returned) is terminated, not waited for. A worker that fails raises as before."""
    dirs = [str(d) for d in TEST_DIRS]
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*dirs, os.environ.get("PYTHONPATH")]))
    ctx = mp.start_processes(worker, args=(2, free_port(), out_dir), nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout_s
    marks = [os.path.join(out_dir, f".rank{r}.done") for r in range(2)]
    try:
        while not ctx.join(timeout=1):
            if all(os.path.exists(m) for m in marks):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"{what} workers did not finish within {timeout_s} s")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
                p.join(5)
