"""`ascendc-ops info`: what this build is and the platform parameters its tiling uses."""

from __future__ import annotations

import platform
import sys


def _platform() -> dict:
    """The platform the library's own tiling targets (tiling::CpuTwin, asked from C++)."""
    import torch

    name, cores, ub, budget = torch.ops.ascendc_ops.platform()
    return {
        "name": name,
        "vector_cores": cores,
        "vector_cores_note": "the twin runs one block per torch intra-op thread (torch.get_num_threads())",
        "ub_bytes": ub,
        "ub_reserve_bytes": ub - budget,
        "ub_budget_bytes": budget,
        "source": "torch.ops.ascendc_ops.platform()",
    }


def _registered(name: str) -> bool:
    import torch

    try:
        getattr(torch.ops.custom, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def collect() -> dict:
    import numpy
    import torch

    import ascendc_ops

    from ..op_proto import load_all
    from .environment import cpu_model, git_commit
    from .families import BENCH_OPS, VERIFY_OPS

    threads = torch.get_num_threads()
    protos = load_all()
    return {
        "package": ascendc_ops.__version__,
        "commit": git_commit(),
        "library": str(ascendc_ops.library_path),
        "isa": ascendc_ops.isa(),
        "backends": ascendc_ops.backends(),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__},
        "cpu": {"model": cpu_model(), "capability": torch.backends.cpu.get_cpu_capability(), "torch_threads": threads},
        "platform": _platform(),
        "ops": {
            name: {
                "op_type": p.op,
                "schema": p.schema(),
                "registered": _registered(name),
                "verify": name in VERIFY_OPS,
                "bench": name in BENCH_OPS,
            }
            for name, p in protos.items()
        },
    }


def render(d: dict) -> str:
    from .._backends import NPU

    p = d["platform"]
    lines = [
        f"ascendc-ops {d['package']} (commit {d['commit']})",
        f"library:   {d['library']}",
        # the ISA path: chosen at run time from this CPU's features (ASCENDC_OPS_ISA forces a narrower one)
        f"isa:       {d['isa']}"
        + (
            ""
            if d["isa"] in ("native", "generic")
            else " (ISA paths of the build run on any x86-64-v3 CPU; the widest this CPU has is loaded)"
        ),
        f"backends:  {', '.join(d['backends'])}",
        # PrivateUse1 is a direct kernel launch on torch_npu's stream, not the op package's aclnn API
        "npu:       "
        + (
            "PrivateUse1, direct launch on torch_npu's current stream"
            if NPU in d["backends"]
            else "not in this build (needs CANN and torch_npu; README: On the NPU)"
        ),
        "versions:  " + ", ".join(f"{k} {v}" for k, v in d["versions"].items()),
        f"cpu:       {d['cpu']['model']} ({d['cpu']['capability']}), torch threads {d['cpu']['torch_threads']}",
        f"platform:  {p['name']}: vector cores {p['vector_cores']} ({p['vector_cores_note']})",
        f"           UB {p['ub_bytes']} bytes per core, budget {p['ub_budget_bytes']} bytes "
        f"({p['ub_budget_bytes'] // 1024} KiB), reserve {p['ub_reserve_bytes']} bytes  [{p['source']}]",
        "ops (op type, then the torch schema; --op and case files take either name):",
    ]
    for o in d["ops"].values():
        tools = ", ".join(t for t in ("verify", "bench") if o[t]) or "no harness entry"
        state = "" if o["registered"] else "not in this build; "
        lines.append(f"  {o['op_type']:<16} {o['schema']}    [{state}{tools}]")
    return "\n".join(lines)


def main(json_path: str | None = None, out=None) -> int:
    out = out or sys.stdout  # the stdout of the call (a test's capture), not of import
    d = collect()
    print(render(d), file=out)
    if json_path:
        import json

        with open(json_path, "w") as f:
            json.dump(d, f, indent=1)
    return 0
