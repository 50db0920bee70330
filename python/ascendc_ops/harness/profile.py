"""`ascendc-ops profile`: an op run on the CPU twin with the tiling of a modelled chip (910B: 48
blocks), every instruction recorded, and the pipeline model's estimate of its time on that chip:
the bound, per-pipe utilisation, % of the HBM roofline, a Chrome trace and a PNG timeline.
These are model estimates (harness/platforms/*.json lists each parameter's source), not measurements."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager

import torch

import ascendc_ops

from . import bench
from .families.norm import EPS
from .pipeline import OpModel, Platform, load_platform, model_launches
from .pipeline.trace import write_png, write_trace

PASSES = ("fwd", "bwd")
TWIN_UB_BYTES = 196352  # every twin block gets an A2-sized UB: a larger modelled UB tiles as A2's


@contextmanager
def tiling_platform(plat: Platform):
    """The op's tiling targets `plat` (its core count and UB) while inside."""
    ops = torch.ops.ascendc_ops
    ops.set_tiling_platform(plat.name, plat.vector_cores, plat.cube_cores, min(plat.ub_bytes, TWIN_UB_BYTES))
    try:
        yield
    finally:
        ops.reset_tiling_platform()


@contextmanager
def collected(switch, take):
    """What a twin consumer exports for every launch inside: `switch(on)` turns it on and off, `take()`
    returns its JSON strings (anything left over from before is dropped first)."""
    take()
    switch(True)
    items: list = []
    try:
        yield items
    finally:
        switch(False)
        items.extend(json.loads(s) for s in take())


def recording():
    """Every launch inside, as recorded by the twin ({"kernel", "block_dim", "blocks"} each)."""
    return collected(torch.ops.ascendc_ops.twin_record, torch.ops.ascendc_ops.twin_record_take)


def record(fn, plat: Platform) -> list:
    with tiling_platform(plat), recording() as records:
        fn()
    return records


def _full_forward(name: str):
    """The op with every output (the bench's callables return only the compared one)."""
    if name == "rms_norm":
        return lambda x, g: ascendc_ops.rms_norm(x, g, EPS)
    if name == "add_rms_norm":
        return lambda x1, x2, g: ascendc_ops.add_rms_norm(x1, x2, g, EPS)
    return bench.OPS[name].ours


def _shapes(value) -> list:
    items = value if isinstance(value, (tuple, list)) else (value,)
    return [list(t.shape) for t in items if isinstance(t, torch.Tensor)]


def run_and_record(name: str, inputs: tuple, pass_: str, plat: Platform) -> tuple[list, list]:
    """(records, output shapes) of one call of op `name` on `inputs`: fwd, or bwd (dx for a fixed dy)."""
    op = bench.OPS[name]
    if pass_ == "fwd":
        box = {}
        records = record(lambda: box.setdefault("out", _full_forward(name)(*inputs)), plat)
        return records, _shapes(box["out"])
    x, rest = inputs[0], inputs[1:]
    xg = x.clone().requires_grad_()
    with tiling_platform(plat):
        y = bench.first(op.ours(xg, *rest))
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).to(y.dtype)
    box = {}
    records = record(lambda: box.setdefault("dx", torch.autograd.grad(y, xg, dy)[0]), plat)
    return records, _shapes(box["dx"])


def estimate(name: str, inputs: tuple, pass_: str, plat: Platform, keep_events: bool = False):
    """(OpModel, bytes the op must move, output shapes); full = fwd then bwd."""
    passes = ("fwd", "bwd") if pass_ == "full" else (pass_,)
    records, outs = [], []
    for p in passes:
        r, o = run_and_record(name, inputs, p, plat)
        records += r
        outs = o
    must = bench.OPS[name].bytes_moved(inputs, None, pass_)
    return model_launches(records, plat, keep_events), must, outs


def unmodelled(model: OpModel, must_bytes: int) -> bool:
    """True when the record holds none of the op's GM traffic: the cube unit's Matmul work is not
    in the twin's record yet, so a cube kernel's estimate would be a scalar-only fiction."""
    return model.gm_bytes == 0 and must_bytes > 0


def roofline_pct(model: OpModel, must_bytes: int, plat: Platform) -> float:
    return 100.0 * must_bytes / plat.hbm_bytes_per_s * 1e6 / model.est_us if model.est_us else 0.0


def summary(name, shape, dtype, pass_, plat, model: OpModel, must, inputs, outs, trace, png) -> dict:
    return {
        "op": name, "platform": plat.name, "dtype": dtype, "pass": pass_, "shape": list(shape),
        "inputs": _shapes(inputs), "outputs": outs, "gm_bytes": model.gm_bytes, "must_bytes": must,
        "hbm_bytes_per_s": plat.hbm_bytes_per_s, "est_us": round(model.est_us, 3),
        "hbm_us": round(must / plat.hbm_bytes_per_s * 1e6, 3), "bound": model.bound,
        "modelled": not unmodelled(model, must),
        "roofline_pct": round(roofline_pct(model, must, plat), 1),
        "blocks": max((m.block_dim for m in model.launches), default=0),
        "cores": max((m.cores for m in model.launches), default=plat.vector_cores),
        "pipes": {p: round(u, 3) for p, u in model.pipes.items()},
        "launches": [{"kernel": m.kernel, "blocks": m.block_dim, "cores_used": m.cores_used, "waves": m.waves,
                      "gm_bytes": m.gm_bytes, "est_us": round(m.est_us, 3), "launch_us": round(m.launch_us, 3),
                      "bound": m.bound, "mte_share": round(m.mte_share, 3),
                      "pipes": {p: round(u, 3) for p, u in m.pipes.items()}, "notes": m.notes}
                     for m in model.launches],
        "notes": model.notes + (["not modelled: the record holds none of this op's GM traffic "
                                 "(the cube unit's Matmul work is not recorded); est_us is not an estimate"]
                                if unmodelled(model, must) else []),
        "trace": trace, "timeline_png": png,
        "method": "pipeline model estimate from the twin's recorded instructions (not a measurement)",
    }


def profile(name: str, shape=None, dtype: str = "bfloat16", platform: str = "910B", pass_: str = "fwd",
            out_dir: str = "profile") -> dict:
    op = bench.OPS[name]
    plat = load_platform(platform)
    shape = tuple(shape or op.default_shapes[0])
    try:
        op.check_shape(shape)
    except ValueError as e:
        raise ValueError(f"{name}: shape {','.join(map(str, shape))}: {e} ({op.shape_help})") from None
    inputs = op.make_inputs(shape, bench.DTYPES[dtype], torch.Generator().manual_seed(0))
    model, must, outs = estimate(name, inputs, pass_, plat, keep_events=True)
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"{name}_{'x'.join(map(str, shape))}_{dtype}_{pass_}_{plat.name}")
    trace, png = stem + ".trace.json", stem + ".png"
    info = summary(name, shape, dtype, pass_, plat, model, must, inputs, outs, trace, png)
    write_trace(model, plat.hz, {k: v for k, v in info.items() if k not in ("launches",)}, trace)
    write_png(model, plat.hz, f"{name} {pass_} {dtype} {'x'.join(map(str, shape))} on {plat.name} (model): "
                              f"{info['est_us']:.1f} us, {info['roofline_pct']:.0f}% of HBM roofline, {model.bound}", png)
    return info


def text(info: dict) -> str:
    mb = 1e6
    lines = [f"{info['op']} {info['pass']} {info['dtype']} inputs {info['inputs']} -> outputs {info['outputs']} "
             f"on {info['platform']} (pipeline model estimate, not a measurement)"]
    for m in info["launches"]:
        pipes = " ".join(f"{p} {100 * u:.0f}%" for p, u in m["pipes"].items())
        lines.append(f"  {m['kernel']}: {m['blocks']} blocks on {m['cores_used']} cores ({m['waves']} wave(s)), "
                     f"GM {m['gm_bytes'] / mb:.2f} MB, est {m['est_us']:.2f} us (launch {m['launch_us']:.2f}), "
                     f"bound {m['bound']}, MTE bandwidth share {m['mte_share']:.2f}; pipes {pipes}")
        lines += [f"    note: {n}" for n in m["notes"]]
    lines.append(f"  total: est {info['est_us']:.2f} us, bound {info['bound']}, {info['roofline_pct']:.1f}% of the HBM "
                 f"roofline (must move {info['must_bytes'] / mb:.2f} MB: {info['hbm_us']:.2f} us at "
                 f"{info['hbm_bytes_per_s'] / 1e12:.2f} TB/s)")
    if not info["modelled"]:
        lines.append("  " + info["notes"][-1])
    lines.append(f"  trace: {info['trace']} (Perfetto / chrome://tracing); timeline: {info['timeline_png']}")
    return "\n".join(lines)


def model_columns(name: str, inputs: tuple, pass_: str, platform: str = "910B") -> dict:
    """The bench's model columns for one row: estimated us and % of the HBM roofline on `platform`."""
    plat = load_platform(platform)
    model, must, _ = estimate(name, inputs, pass_, plat)
    if unmodelled(model, must):
        return {"est_us_910b": None, "roofline_pct_910b": None}
    return {"est_us_910b": model.est_us, "roofline_pct_910b": roofline_pct(model, must, plat)}
