"""`ascendc-ops estimate`: an op run on the CPU twin with the tiling of a modelled chip (910B: 48 blocks),
every instruction recorded, and the pipeline model's estimate of its time on that chip: the bound, per-pipe
utilisation, % of the roofline (the least work's memory time under the model's L2 rule; for a cube op the larger
of that and the cube's peak FLOP/s), a Chrome
trace and (with matplotlib) a PNG timeline. These are model estimates (harness/platforms/*.json lists each
parameter's source), not measurements; the measured host profile is bench/host_profile.py."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from .. import plot, runner
from ..families.base import Moved
from ..twin_record import packed_recording, recording
from . import OpModel, Platform, is_calibrated, model_launches, model_platform
from .l2 import floor_seconds, l2_traffic
from .trace import write_trace

PASSES = ("fwd", "bwd")


@contextmanager
def tiling_platform(plat: Platform):
    """The op's tiling targets `plat` (its core count and UB) while inside. Every twin block has an A2-sized
    UB, so a chip with a larger one is tiled as if it had A2's."""
    ops = torch.ops.ascendc_ops
    ub = min(plat.ub_bytes, ops.twin_ub_bytes())
    ops.set_tiling_platform(plat.name, plat.vector_cores, plat.cube_cores, ub)
    try:
        yield
    finally:
        ops.reset_tiling_platform()


def record(fn, plat: Platform) -> list:
    """Every launch of fn() with `plat`'s tiling, as the twin's whole JSON record (dicts)."""
    with tiling_platform(plat), recording() as records:
        fn()
    return records


def record_packed(fn, plat: Platform) -> list:
    """The same launches as the packed record the model reads at any shape (packed.PackedLaunch each): the
    model's numbers are those of record()'s, without holding every instruction."""
    with tiling_platform(plat), packed_recording() as records:
        fn()
    return records


def run_and_record(name: str, inputs: tuple, pass_: str, plat: Platform) -> tuple[list, list]:
    """(records, output shapes) of one call of op `name` on `inputs`, as the bench times it: fwd (every
    output), or bwd (dx for a fixed dy; the forward runs before the record, with the same tiling)."""
    box = {}
    with tiling_platform(plat):
        call = runner.calls(name, inputs, pass_)()
    records = record_packed(lambda: box.setdefault("out", call()), plat)
    return records, runner.output_shapes(box["out"])


@dataclass(frozen=True)
class Roofline:
    """The least time a call can take on the chip by the model's own rules: the bytes it must move, split as
    the model splits any launch's (pipeline/l2.py: reads come cold from HBM, the write-back L2 keeps the writes
    up to its capacity), at HBM bandwidth, every one of them at the L2's, and, for a cube op, its FLOPs at
    every cube core's peak for its dtype; the largest is the roofline."""

    must_bytes: int
    hbm_bytes: int  # of must_bytes, those that reach HBM within the call
    flops: int
    hbm_us: float
    l2_us: float
    cube_us: float

    @property
    def us(self) -> float:
        return max(self.hbm_us, self.l2_us, self.cube_us)

    @property
    def kind(self) -> str:
        return max((self.cube_us, "cube FLOP/s"), (self.l2_us, "L2"), (self.hbm_us, "HBM"))[1]

    def pct(self, est_us: float) -> float:
        return 100.0 * self.us / est_us if est_us else 0.0


def roofline(name: str, inputs: tuple, pass_: str, plat: Platform) -> Roofline:
    op = runner.OPS[name]
    flops = op.flops(inputs, pass_) if op.flops else 0
    return least_work(op.bytes_moved(inputs, None, pass_), flops, str(inputs[0].dtype), plat)


def least_work(must: Moved, flops: int, dtype: str, plat: Platform) -> Roofline:
    traffic = l2_traffic(must.read, must.read, must.written, plat)  # each byte once: no re-reads
    memory = floor_seconds(traffic, plat)
    cube_us = flops / plat.cube_peak_flops(dtype) * 1e6 if flops else 0.0
    return Roofline(must.total, traffic.hbm_bytes, flops, memory["HBM"] * 1e6, memory["L2"] * 1e6, cube_us)


def model_call(name: str, inputs: tuple, pass_: str, plat: Platform, keep_events: bool = False):
    """(OpModel, the call's Roofline, output shapes); full = fwd then bwd."""
    passes = ("fwd", "bwd") if pass_ == "full" else (pass_,)
    records, outs = [], []
    for p in passes:
        r, o = run_and_record(name, inputs, p, plat)
        records += r
        outs = o
    return model_launches(records, plat, keep_events), roofline(name, inputs, pass_, plat), outs


def unmodelled(model: OpModel, must_bytes: int) -> bool:
    """True when the record holds none of the op's GM traffic (a kernel whose work the twin does not
    record): its estimate would be a scalar-only fiction."""
    return model.gm_bytes == 0 and must_bytes > 0


def summary(name, shape, dtype, pass_, plat, model: OpModel, roof: Roofline, inputs, outs, trace, png) -> dict:
    must = roof.must_bytes
    return {
        "op": name,
        "platform": plat.name,
        "calibrated": is_calibrated(plat),
        "dtype": dtype,
        "pass": pass_,
        "shape": list(shape),
        "inputs": runner.output_shapes(inputs),
        "outputs": outs,
        "gm_bytes": model.gm_bytes,
        "must_bytes": must,
        "hbm_bytes_per_s": plat.hbm_bytes_per_s,
        "est_us": round(model.est_us, 3),
        "hbm_us": round(roof.hbm_us, 3),
        "floor_hbm_bytes": roof.hbm_bytes,
        "l2_us": round(roof.l2_us, 3),
        "flops": roof.flops,
        "cube_us": round(roof.cube_us, 3),
        "roofline": roof.kind,
        "roofline_us": round(roof.us, 3),
        "bound": model.bound,
        "modelled": not unmodelled(model, must),
        "roofline_pct": round(roof.pct(model.est_us), 1),
        "blocks": max((m.block_dim for m in model.launches), default=0),
        "cores": max((m.cores for m in model.launches), default=plat.vector_cores),
        "pipes": {p: round(u, 3) for p, u in model.pipes.items()},
        "launches": [
            {
                "kernel": m.kernel,
                "blocks": m.block_dim,
                "cores_used": m.cores_used,
                "waves": m.waves,
                "gm_bytes": m.gm_bytes,
                "est_us": round(m.est_us, 3),
                "launch_us": round(m.launch_us, 3),
                "bound": m.bound,
                "mte_share": round(m.mte_share, 3),
                "hbm_us": round(m.hbm_us, 3),  # the launch's bytes reaching HBM at its rate (after the L2)
                "pipes": {p: round(u, 3) for p, u in m.pipes.items()},
                "notes": m.notes,
            }
            for m in model.launches
        ],
        "kinds": {m.kernel: m.kinds for m in model.launches if m.kinds},  # a mix launch's AIC and AIV apart
        "notes": model.notes
        + (
            ["not modelled: the record holds none of this op's GM traffic; est_us is not an estimate"]
            if unmodelled(model, must)
            else []
        ),
        "trace": trace,
        "timeline_png": png,
        "method": "pipeline model estimate from the twin's recorded instructions (not a measurement)",
    }


def estimate(
    name: str,
    shape=None,
    dtype: str = "bfloat16",
    platform: str = "910B",
    pass_: str = "fwd",
    out_dir: str = "estimate",
    calibrated: bool = True,
) -> dict:
    """The estimate of one call on `platform` (calibrated: with the values fitted to measured times, where
    the chip has them), its Chrome trace and (matplotlib installed) PNG timeline in out_dir; the summary as
    a dict."""
    plat = model_platform(platform, calibrated)
    shape, inputs = runner.make_inputs(name, shape, dtype)
    model, roof, outs = model_call(name, inputs, pass_, plat, keep_events=True)
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"{name}_{'x'.join(map(str, shape))}_{dtype}_{pass_}_{plat.name}")
    trace = stem + ".trace.json"
    png = stem + ".png" if plot.available() else None  # the timeline is extra: no matplotlib, no PNG
    info = summary(name, shape, dtype, pass_, plat, model, roof, inputs, outs, trace, png)
    write_trace(model, plat.hz, {k: v for k, v in info.items() if k not in ("launches",)}, trace)
    if png:
        plot.timeline(
            model,
            plat.hz,
            f"{name} {pass_} {dtype} {'x'.join(map(str, shape))} on {plat.name} (model): "
            f"{info['est_us']:.1f} us, {info['roofline_pct']:.0f}% of {roof.kind} roofline, "
            f"{model.bound}",
            png,
        )
    return info


def text(info: dict) -> str:
    mb = 1e6
    lines = [
        f"{info['op']} {info['pass']} {info['dtype']} inputs {info['inputs']} -> outputs {info['outputs']} "
        f"on {info['platform']}, {'calibrated' if info['calibrated'] else 'uncalibrated (prior values)'} "
        "(pipeline model estimate, not a measurement)"
    ]
    for m in info["launches"]:
        pipes = " ".join(f"{p} {100 * u:.0f}%" for p, u in m["pipes"].items())
        lines.append(
            f"  {m['kernel']}: {m['blocks']} blocks on {m['cores_used']} cores ({m['waves']} wave(s)), "
            f"GM {m['gm_bytes'] / mb:.2f} MB ({m['hbm_us']:.2f} us of it at HBM), est {m['est_us']:.2f} us "
            f"(launch {m['launch_us']:.2f}), "
            f"bound {m['bound']}, MTE bandwidth share {m['mte_share']:.2f}; pipes {pipes}"
        )
        lines += [f"    note: {n}" for n in m["notes"]]
    cube = f"; {info['flops'] / 1e9:.2f} GFLOP: {info['cube_us']:.2f} us at the cube's peak" if info["flops"] else ""
    lines.append(
        f"  total: est {info['est_us']:.2f} us, bound {info['bound']}, {info['roofline_pct']:.1f}% of the "
        f"{info['roofline']} roofline (must move {info['must_bytes'] / mb:.2f} MB, {info['floor_hbm_bytes'] / mb:.2f} "
        f"MB of it through HBM: {info['hbm_us']:.2f} us at {info['hbm_bytes_per_s'] / 1e12:.2f} TB/s; all of it "
        f"through the L2: {info['l2_us']:.2f} us{cube})"
    )
    lines += kinds_text(info)
    if not info["modelled"]:
        lines.append("  " + info["notes"][-1])
    timeline = info["timeline_png"] or f"none ({plot.INSTALL} draws one)"
    lines.append(f"  trace: {info['trace']} (Perfetto / chrome://tracing); timeline: {timeline}")
    return "\n".join(lines)


def model_columns(name: str, inputs: tuple, pass_: str, platform: str = "910B", calibrated: bool = True) -> dict:
    """The bench's model columns for one row: estimated us and % of the roofline on `platform` (Roofline)."""
    plat = model_platform(platform, calibrated)
    model, roof, _ = model_call(name, inputs, pass_, plat)
    if unmodelled(model, roof.must_bytes):
        return {"est_us_910b": None, "roofline_pct_910b": None}
    return {"est_us_910b": model.est_us, "roofline_pct_910b": roof.pct(model.est_us)}


# ---- the template kernels of csrc/kernels/examples/ (`estimate --example NAME`, `profile --example NAME`) ----
@dataclass(frozen=True)
class Example:
    kernel: str
    kernel_type: str
    cores: str  # the cores one launch starts, e.g. "1 AIC + 2 AIV"
    shapes: tuple  # (a, b, bias)
    flops: int

    def inputs(self) -> tuple:
        g = torch.Generator().manual_seed(0)
        a, b, bias = self.shapes
        return torch.randn(a, generator=g).half(), torch.randn(b, generator=g).half(), torch.randn(bias, generator=g)

    def call(self, inputs: tuple):
        return getattr(torch.ops.ascendc_ops, self.kernel)(*inputs, 0.5)


EXAMPLES = {
    "mix_matmul_epilogue": Example(
        "mix_matmul_epilogue_example",
        "KERNEL_TYPE_MIX_AIC_1_2",
        "1 AIC + 2 AIV",
        ((48, 64), (64, 32), (32,)),
        2 * 48 * 64 * 32,
    ),
}


def estimate_example(name: str, platform: str = "910B", out_dir: str = "estimate", calibrated: bool = True) -> dict:
    """estimate() of a template kernel (EXAMPLES): one launch recorded and modelled, its trace and summary."""
    ex = EXAMPLES[name]
    plat = model_platform(platform, calibrated)
    inputs = ex.inputs()
    box = {}
    records = record_packed(lambda: box.setdefault("out", ex.call(inputs)), plat)
    model = model_launches(records, plat, keep_events=True)
    roof = least_work(Moved(sum(t.nbytes for t in inputs), box["out"].nbytes), ex.flops, "float16", plat)
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"example_{name}_{plat.name}")
    trace, png = stem + ".trace.json", (stem + ".png" if plot.available() else None)
    shape = [d for s in ex.shapes for d in s]
    info = summary(
        f"example {name}", shape, "float16", "fwd", plat, model, roof, inputs, [list(box["out"].shape)], trace, png
    )
    info["kernel_type"], info["launch_cores"] = ex.kernel_type, ex.cores
    write_trace(model, plat.hz, {k: v for k, v in info.items() if k not in ("launches",)}, trace)
    if png:
        plot.timeline(model, plat.hz, f"example {name} on {plat.name} (model): {info['est_us']:.1f} us", png)
    return info


def kinds_text(info: dict) -> list[str]:
    """One line per core kind of a mix launch: cores used, when its last core ended, its cross-core waits."""
    lines = []
    for kernel, kinds in info.get("kinds", {}).items():
        for kind, k in kinds.items():
            pipes = " ".join(f"{p} {100 * u:.1f}%" for p, u in k["pipes"].items())
            lines.append(
                f"  {kernel} {kind}: {k['cores_used']} of {k['cores']} cores, last ends at {k['end_us']:.2f} us, "
                f"cross-core waits {k['cross_wait_us']:.2f} us per core; pipes {pipes}"
            )
    return lines
