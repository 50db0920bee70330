"""The packed instruction record (csrc/twin/twin_record_pack.h, pipeline/packed.py), the one `estimate`,
`profile` and the bench's 910B columns model from: recorded beside the whole JSON record in the same call,
it gives the same model to the last bit (a vector launch, a cube launch, a mix launch and a multi-launch op);
48 identical blocks are one kind stored once with its slots; the GM ranges arrive as their union; the trace
written a chunk of events at a time is the bytes of the whole-list encoding."""

import json

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from ascendc_ops.harness import runner
from ascendc_ops.harness.pipeline import load_platform, model_launches, trace
from ascendc_ops.harness.pipeline.estimate import EXAMPLES, tiling_platform
from ascendc_ops.harness.pipeline.packed import PackedLaunch
from ascendc_ops.harness.twin_record import packed_recording, recording

P910 = load_platform("910B")


def both(fn):
    """The launches of one call as the JSON record and as the packed one."""
    with tiling_platform(P910), recording() as whole, packed_recording() as packed:
        fn()
    assert [r["kernel"] for r in whole] == [p.kernel for p in packed]
    return whole, packed


def op_call(name, shape, pass_):
    _, inputs = runner.make_inputs(name, shape, "bfloat16")
    with tiling_platform(P910):
        return runner.calls(name, inputs, pass_)()


def same_model(whole, packed):
    a, b = model_launches(whole, P910, keep_events=True), model_launches(packed, P910, keep_events=True)
    assert a.est_us == b.est_us and a.bound == b.bound and a.pipes == b.pipes and a.notes == b.notes
    for x, y in zip(a.launches, b.launches, strict=True):
        fx, fy = dict(vars(x)), dict(vars(y))
        tx, ty = fx.pop("timelines"), fy.pop("timelines")
        assert fx == fy
        assert [vars(t) for t in tx] == [vars(t) for t in ty]  # every event, stall and busy cycle
    return a


@pytest.mark.parametrize(
    "name, shape, pass_",
    [
        ("rms_norm", (96, 512), "fwd"),  # vector, 48 blocks
        ("rms_norm", (96, 512), "bwd"),  # two launches
        ("grouped_matmul", (256, 128, 128, 4), "fwd"),  # cube
        ("fusion_attention", (1, 128, 4, 2, 64), "bwd"),  # mix: AIC + AIV with cross-core flags
    ],
)
def test_packed_record_models_as_the_whole_record(name, shape, pass_):
    whole, packed = both(op_call(name, shape, pass_))
    assert all(isinstance(p, PackedLaunch) for p in packed)
    for w, p in zip(whole, packed, strict=True):
        assert p.instructions() == sum(len(b) for b in w["blocks"])
        assert p.cores == (w.get("cores") or [])
    same_model(whole, packed)


def test_mix_example_models_as_the_whole_record():
    ex = EXAMPLES["mix_matmul_epilogue"]
    inputs = ex.inputs()
    whole, packed = both(lambda: ex.call(inputs))
    assert same_model(whole, packed).launches[0].flows


def test_identical_blocks_are_one_kind_and_ranges_their_union():
    elems = 48 * 32768
    x = torch.arange(elems, dtype=torch.int32).to(torch.bfloat16)
    box = {}
    whole, packed = both(lambda: box.setdefault("y", torch.ops.ascendc_ops.stream_copy(x, 2, 0)))
    (w,), (p,) = whole, packed
    assert len(w["blocks"]) == 48  # the same instructions on other addresses
    assert len(p.kinds) == 1 and p.kind_of == [0] * 48  # one kind, run by every slot
    assert len(p.instrs) < len(p.kinds[0]) < p.instructions()  # distinct instructions once, the stream once
    y = box["y"]
    assert p.reads.tolist() == [[x.data_ptr(), x.data_ptr() + 2 * elems]]
    assert p.writes.tolist() == [[y.data_ptr(), y.data_ptr() + 2 * elems]]
    assert p.unranged_write == 0
    with pytest.raises(KeyError, match="no per-block instruction list"):
        p["blocks"]
    same_model(whole, packed)


def test_trace_chunks_are_the_whole_encoding(tmp_path, monkeypatch):
    _, packed = both(op_call("rms_norm", (96, 512), "bwd"))
    model = model_launches(packed, P910, keep_events=True)
    summary = {"op": "rms_norm", "est_us": model.est_us}
    whole = json.dumps(trace.chrome_trace(model, P910.hz, summary), separators=(",", ":"))
    for chunk in (1, 7, 10**9):  # every boundary, an uneven one, one chunk
        monkeypatch.setattr(trace, "CHUNK", chunk)
        trace.write_trace(model, P910.hz, summary, str(tmp_path / "t.json"))
        assert (tmp_path / "t.json").read_text() == whole
