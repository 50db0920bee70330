"""The probe every structural match must pass before it is patched: run the model's part and our replacement on a
small random input and patch only if they agree within the op's accuracy standard.

The part's own parameters are replaced (``torch.func.functional_call``, the module is not modified) by random
ones: a freshly built model's norm weights are all ones or zeros and its projections tiny, which would hide a
``(1 + w)`` norm, a clamped gate or an up-first split. The judgement is the fp32 double benchmark of
docs/accuracy.md (``ascendc_ops.precision.check_ratio``): golden = the part itself evaluated in float64, the
comparison = the part in fp32, ours in fp32. A different formula misses the sanity bound (16 T of the golden's
scale) by orders of magnitude, while ours and the part differ by roundings only. The probe runs on the CPU
(the cpu-twin ops) whatever device the model is on: it checks the formula, which the backends share, and needs
no float64 support from the device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn

from ..precision import check_ratio

SEED = 20260
# Probe widths: a part's hidden and intermediate sizes are shrunk to these for its random parameters (the formula
# does not depend on them; a 70B model's MLP at full size would take 5.6 GB of float64 parameters to probe).
HIDDEN, INTERMEDIATE = 48, 32
GAIN = 3.0  # random projections give pre-activations of about this std: past GPT-OSS's clamp at 7 in the tails


class _Bound(nn.Module):
    """``fn(part, *args)`` as a module, so functional_call can swap the part's parameters for probe ones."""

    def __init__(self, part: nn.Module, fn: Callable):
        super().__init__()
        self.part = part
        self.fn = fn

    def forward(self, *args):
        return self.fn(self.part, *args)


def generator() -> torch.Generator:
    return torch.Generator().manual_seed(SEED)


def device_of(part: nn.Module) -> torch.device:
    p = next(part.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


def widths(hidden: int, intermediate: int, keep: tuple[int, ...] = ()) -> dict[int, int]:
    """{size: probe size} for a part's hidden, intermediate and 2 x intermediate (fused gate_up) sizes; {} (full
    size) when two of them, or one and a size in ``keep`` (an expert count), coincide: a dimension's role would
    be ambiguous."""
    sizes = (hidden, intermediate, 2 * intermediate)
    if len(set(sizes + keep)) < len(sizes) + len(set(keep)):
        return {}
    h, i = min(hidden, HIDDEN), min(intermediate, INTERMEDIATE)
    return {hidden: h, intermediate: i, 2 * intermediate: 2 * i}


def random_params(part: nn.Module, gen: torch.Generator, resize: dict[int, int] | None = None) -> dict:
    """float64 random stand-ins for every parameter of ``part`` (CPU): N(0, 1) vectors, matrices scaled by
    GAIN / sqrt(last dim) so outputs stay O(GAIN); each dimension of a size in ``resize`` takes the mapped size."""
    out = {}
    for name, p in part.named_parameters():
        shape = tuple((resize or {}).get(d, d) for d in p.shape)
        t = torch.randn(shape, generator=gen, dtype=torch.float64)
        out[name] = t if p.dim() < 2 else t * (GAIN / math.sqrt(shape[-1]))
    return out


def _cast(a, device, dtype):
    if not isinstance(a, torch.Tensor):
        return a
    return a.to(device=device, dtype=dtype) if a.is_floating_point() else a.to(device)


def _run(fn: Callable, part: nn.Module, params: dict, args: Sequence, dtype: torch.dtype, device) -> list:
    cast = {f"part.{k}": v.to(device=device, dtype=dtype) for k, v in params.items()}
    args = [_cast(a, device, dtype) for a in args]
    with torch.no_grad():
        out = torch.func.functional_call(_Bound(part, fn), cast, tuple(args))
    outs = out if isinstance(out, tuple | list) else (out,)
    return [o.detach().to("cpu", torch.float64).numpy() for o in outs]


def disagreement(part: nn.Module, theirs: Callable, ours: Callable, args: Sequence, params: dict) -> str | None:
    """None when ``ours(part, *args)`` passes the fp32 double benchmark against ``theirs(part, *args)`` (both
    with ``params`` as the part's parameters); else why not (an error in either, or the failed criteria)."""
    if device_of(part).type == "meta":
        return "its parameters are on the meta device (nothing to probe)"
    device = torch.device("cpu")
    try:
        second = _run(theirs, part, params, args, torch.float32, device)
    except Exception as e:  # noqa: BLE001 - any failure of the part on the probe means: leave it alone
        return f"it fails on the probe input ({type(e).__name__}: {e})"
    try:
        golden = _run(theirs, part, params, args, torch.float64, device)
    except Exception:  # noqa: BLE001 - some parts cannot run in float64: fp32 is then the golden
        golden = second
    try:
        mine = _run(ours, part, params, args, torch.float32, device)
    except Exception as e:  # noqa: BLE001
        return f"our op fails on it ({type(e).__name__}: {e})"
    if len(mine) != len(second) or any(a.shape != b.shape for a, b in zip(mine, second, strict=False)):
        return "our op's outputs differ in number or shape"
    for a, b, g in zip(mine, second, golden, strict=True):
        check = check_ratio(a, b, g, "float32")
        if not check.passed:  # a different formula misses the sanity bound: that failure alone says it
            sanity = [f for f in check.failures if f.startswith("ours misses the sanity bound")]
            return "differs on the probe: " + "; ".join(sanity or check.failures)
    return None


def narrow_disagreement(
    part: nn.Module, theirs: Callable, ours: Callable, args: Sequence, params: dict, dtype: torch.dtype
) -> str | None:
    """None when ``ours`` in ``dtype`` (fp16/bf16) meets that dtype's standard (docs/accuracy.md: MERE/MARE, the
    small-value ErrorCount within 2x the part's own result in ``dtype``) against the golden: the part in float64 on
    the same inputs and parameters rounded to ``dtype``. The fp32 probe checks the formula; this one a rounding
    order that costs accuracy in the narrow dtype (the part computing in fp32 where ours rounds to ``dtype``)."""
    from ..precision import check_mere_mare  # (check_ratio's module: already imported)

    device = torch.device("cpu")
    rounded = {k: v.to(dtype).double() for k, v in params.items()}
    rounded_args = [_cast(_cast(a, device, dtype), device, torch.float64) for a in args]
    try:
        golden = _run(theirs, part, rounded, rounded_args, torch.float64, device)
        second = _run(theirs, part, params, args, dtype, device)
        mine = _run(ours, part, params, args, dtype, device)
    except Exception as e:  # noqa: BLE001 - the fp32 probe ran both: a failure here is the narrow dtype's
        return f"in {dtype}: {type(e).__name__}: {e}"
    for a, b, g in zip(mine, second, golden, strict=True):
        check = check_mere_mare(a, g, str(dtype), second=b)
        if not check.passed:
            return f"in {str(dtype).removeprefix('torch.')}: " + "; ".join(check.failures)
    return None
