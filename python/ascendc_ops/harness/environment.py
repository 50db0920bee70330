"""The machine and the run: CPU model, allocator, commit, competing load, and a progress bar (used by bench,
verify and info)."""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

import ascendc_ops


def cpu_busy():
    """(busy jiffies of the whole machine, steal jiffies, this process's CPU seconds)."""
    try:
        f = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    own = sum(
        getattr(resource.getrusage(w), a)
        for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for a in ("ru_utime", "ru_stime")
    )
    return f[0] + f[1] + f[2] + f[5] + f[6], f[7] if len(f) > 7 else 0, own


def contention(before, after, elapsed) -> str:
    if not (before and after):
        return "unknown (no /proc/stat)"
    hz, cpus = os.sysconf("SC_CLK_TCK"), os.cpu_count()
    other = ((after[0] - before[0]) / hz - (after[2] - before[2])) / (elapsed * cpus)
    steal = (after[1] - before[1]) / hz / (elapsed * cpus)
    return f"other processes used {max(other, 0) * 100:.0f}% and steal {steal * 100:.0f}% of the machine's CPU time"


def tune_glibc_malloc() -> str:
    """Avoid the page-fault trap: glibc mmaps every block over its threshold (<= 32 MB) and unmaps
    it on free, so each fresh large output is faulted in again. Keep all blocks on the heap and
    never trim it, so freed buffers are reused like a caching allocator would."""
    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_max = -1, -4
    if libc.mallopt(m_mmap_max, 0) and libc.mallopt(m_trim_threshold, 2**31 - 1):
        return "tuned: mallopt(M_MMAP_MAX=0, M_TRIM_THRESHOLD=2GiB), freed buffers reused without faults"
    return "tuning failed (mallopt returned 0): fresh large outputs may be page-faulted"


def allocator(tune: bool) -> str:
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    for lib in ("jemalloc", "tcmalloc", "mimalloc"):
        if lib in maps:
            return f"{lib} (preloaded; left as is)"
    name = "glibc malloc " + "-".join(platform.libc_ver())
    return f"{name}, {tune_glibc_malloc() if tune else 'defaults (large outputs are mmapped and faulted in)'}"


def git_commit() -> str:
    root = Path(__file__).resolve().parents[3]  # the repository (harness/ -> ascendc_ops/ -> python/)
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("-dirty" if dirty else "")) if sha else "unknown"


def cpu_model() -> str:
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def environment(cfg) -> dict:
    """The environment columns of a bench run; sets torch's thread count to cfg.threads (0: all cores)."""
    model = cpu_model()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    torch.set_num_threads(cfg.threads or cores)
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": f"{model} ({torch.backends.cpu.get_cpu_capability()})",
        "isa": ascendc_ops.isa(),  # the ISA path of the library loaded (python/ascendc_ops/_isa.py)
        "load": "",  # filled in when the run ends: what other processes took meanwhile
        "cores": cores,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "package": ascendc_ops.__version__,
        "allocator": allocator(cfg.tune_malloc),
        "commit": git_commit(),
    }


def progress(done: int, total: int, label: str, stream=None) -> None:
    """A one-line progress bar on stderr (redrawn in place on a terminal, one line per step otherwise)."""
    stream = stream or sys.stderr
    width = 24
    fill = width * done // max(total, 1)
    bar = f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {label}"
    if stream.isatty():
        stream.write("\r\033[K" + bar + ("\n" if done >= total else ""))
    else:
        stream.write(bar + "\n")
    stream.flush()
