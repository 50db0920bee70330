"""`ascendc-ops bench optimizer --estimate`: the pipeline model's 910B time of one AdamW step over LLaMA-3-8B's
parameters (fp32 states) -- ours, one foreach_adam_w launch (fp32 parameters, and bf16 parameters with fp32 masters),
against the same update as torch_npu's NpuFusedAdamW does it: nine elementwise passes over its combined buffers
(torch_npu/optim/npu_fused_adamw.py in Ascend/pytorch: param.mul_, exp_avg.mul_ and .add_, exp_avg_sq.mul_ and
.addcmul_, sqrt, / sqrt(bias_correction2), .add_(eps), param.addcdiv_), in fp32 (its states take the parameter's
dtype, so fp32 parameters are the like-for-like case).

The model's estimates, not measurements. 8.03 billion elements do not run on the twin: ours is recorded at two
sizes past the L2's capacity (one and two 4096 x 4096 tensors), where the model's time is linear in the elements
(every extra byte reaches HBM: l2.py's write-back share is affine past the capacity), and extrapolated to the model's
count; torch_npu's passes are each taken at its least work under the model's L2 rule (estimate.least_work: reads
cold from HBM, writes held by the L2 up to its capacity), a perfect elementwise kernel per pass, plus one launch.
"""

from __future__ import annotations

import time

# LLaMA-3-8B (Meta-Llama-3-8B's config): hidden 4096, intermediate 14336, 32 layers, vocabulary 128256, 8 key/value
# heads of 128 (k and v [1024, 4096]), untied embedding and LM head.
HIDDEN, INTER, LAYERS, VOCAB, KV = 4096, 14336, 32, 128256, 1024
SAMPLES = (((HIDDEN, HIDDEN),), ((HIDDEN, HIDDEN), (HIDDEN, HIDDEN)))  # 16.8M and 33.6M elements

# NpuFusedAdamW's passes, fp32: (name, bytes read, bytes written) per element (amsgrad off).
NPU_FUSED_PASSES = (
    ("param.mul_(1 - lr wd)", 4, 4),
    ("exp_avg.mul_(beta1)", 4, 4),
    ("exp_avg.add_(grad, 1 - beta1)", 8, 4),
    ("exp_avg_sq.mul_(beta2)", 4, 4),
    ("exp_avg_sq.addcmul_(grad, grad)", 8, 4),  # the grad counted once, though both operands name it
    ("denom = exp_avg_sq.sqrt()", 4, 4),
    ("denom / sqrt(bias_correction2)", 4, 4),
    ("denom.add_(eps)", 4, 4),
    ("param.addcdiv_(exp_avg, denom)", 12, 4),
)


def llama3_8b_shapes() -> list[tuple]:
    layer = [(HIDDEN, HIDDEN), (KV, HIDDEN), (KV, HIDDEN), (HIDDEN, HIDDEN), (INTER, HIDDEN), (INTER, HIDDEN),
             (HIDDEN, INTER), (HIDDEN,), (HIDDEN,)]  # fmt: skip
    return [(VOCAB, HIDDEN)] + layer * LAYERS + [(HIDDEN,), (VOCAB, HIDDEN)]


def _numel(shapes) -> int:
    out = 0
    for s in shapes:
        n = 1
        for d in s:
            n *= d
        out += n
    return out


def _step_tensors(shapes, dtype, master: bool):
    import torch

    gen = torch.Generator().manual_seed(0)
    var = [(0.02 * torch.randn(s, generator=gen)).to(dtype) for s in shapes]
    grad = [(1e-3 * torch.randn(s, generator=gen)).to(dtype) for s in shapes]
    m = [torch.zeros(s) for s in shapes]
    v = [torch.zeros(s) for s in shapes]
    masters = [p.float() for p in var] if master else []
    return var, m, v, grad, masters


def ours_sample_us(shapes, dtype, master: bool, plat) -> float:
    """The model's time of one foreach_adam_w launch over `shapes` on `plat` (recorded on the twin)."""
    import torch

    from ..pipeline import model_launches
    from ..pipeline.estimate import record_packed

    var, m, v, grad, masters = _step_tensors(shapes, dtype, master)
    call = lambda: torch.ops.custom.foreach_adam_w(var, m, v, grad, [], masters, lr=1e-4, step=2.0)  # noqa: E731
    return model_launches(record_packed(call, plat), plat).est_us


def bytes_per_elem(param_bytes: int, master: bool) -> tuple[int, int]:
    """(read, written) bytes an element of our one-pass update moves: grad, m, v and the parameter (or its master)
    read; the parameter, m, v (and the master) written."""
    if master:
        return param_bytes + 12, param_bytes + 12
    return 2 * param_bytes + 8, param_bytes + 8


def run(platform: str = "910B") -> int:
    import torch

    from ..families.base import Moved
    from ..pipeline import model_platform
    from ..pipeline.estimate import least_work
    from .hf_model import environment_line

    plat = model_platform(platform, True)
    shapes = llama3_8b_shapes()
    numel = _numel(shapes)
    print(f"## One AdamW step of LLaMA-3-8B's parameters on {plat.name} (pipeline model estimate, not a measurement)")
    print(environment_line())
    print(f"{len(shapes)} tensors, {numel / 1e9:.3f}B parameters, fp32 states; HBM {plat.hbm_bytes_per_s / 1e12:.3f}"
          f" TB/s, L2 {plat.l2_bytes / 2**20:.0f} MiB (the model's values)")  # fmt: skip
    print()
    print("| update | launches | bytes / element | est. ms | least work ms | how |")
    print("|---|---|---|---|---|---|")
    started = time.perf_counter()
    rows = []
    for label, dtype, master in (("ours, fp32 parameters", torch.float32, False),
                                 ("ours, bf16 parameters + fp32 masters", torch.bfloat16, True)):  # fmt: skip
        sizes = [_numel(s) for s in SAMPLES]
        est = [ours_sample_us(s, dtype, master, plat) for s in SAMPLES]
        slope = (est[1] - est[0]) / (sizes[1] - sizes[0])
        total_us = est[0] + slope * (numel - sizes[0])
        read, written = bytes_per_elem(torch.empty((), dtype=dtype).element_size(), master)
        floor = least_work(Moved(read * numel, written * numel), 0, str(dtype), plat)
        how = (f"twin-recorded at {sizes[0] / 1e6:.1f}M and {sizes[1] / 1e6:.1f}M elements ({est[0]:.0f} and "
               f"{est[1]:.0f} us), linear to the model's count")  # fmt: skip
        rows.append((label, 1, read + written, total_us, floor.us, how))
    npu_us, npu_floor_us, npu_bytes = 0.0, 0.0, 0
    for _, read, written in NPU_FUSED_PASSES:
        floor = least_work(Moved(read * numel, written * numel), 0, "torch.float32", plat)
        npu_us += floor.us + plat.launch_us(plat.vector_cores)
        npu_floor_us += floor.us
        npu_bytes += read + written
    rows.append(("torch_npu NpuFusedAdamW, fp32", len(NPU_FUSED_PASSES), npu_bytes, npu_us, npu_floor_us,
                 "each pass at its least work (a perfect elementwise kernel) + one launch"))  # fmt: skip
    for label, launches, per_elem, est_us, floor_us, how in rows:
        print(f"| {label} | {launches} | {per_elem} | {est_us / 1e3:.1f} | {floor_us / 1e3:.1f} | {how} |")
    print()
    ours = rows[0][3]
    print(
        f"torch_npu's passes / ours (fp32 parameters): {npu_us / ours:.2f}x; the model ran in "
        f"{time.perf_counter() - started:.0f} s on this machine"
    )
    print()
    return 0
