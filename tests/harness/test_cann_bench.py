"""cann-bench as a harness preset: the importer on a small checkout written here, the cap rule, HAP on
hand-computed values, cann-bench's special-value data, our snapshot against a checkout, and small real cases
through `verify --preset cann-bench` and `bench --preset cann-bench`."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from ascendc_ops import __main__ as cli
from ascendc_ops.harness.cann_bench import data as D, preset as CB
from ascendc_ops.harness.pipeline import calibration as M, load_platform

ROOT = Path(__file__).resolve().parents[2]
# a cann-bench checkout (work tree or git dir, as --cann-bench-checkout takes it); unset, the snapshot test skips
CHECKOUT = os.environ.get("ASCENDC_CANN_BENCH_CHECKOUT")

PROTO = "operator:\n  name: {op}\n  schema: {task}(...)\n"
CASES = {
    ("level2", "rms_norm", "RmsNorm"): """cases:
- operator: RmsNorm
  case_id: 1
  input_shape:
  - [4, 8]
  - [8]
  dtype: [float16, float16]
  attrs: {epsilon: 1.0e-6}
  value_range: [-.inf, .inf]
  note: "tiny"
- operator: RmsNorm
  case_id: 2
  input_shape:
  - [3, 5]
  - [5]
  dtype: [float32, float32]
  attrs: {epsilon: 1.0e-4}
  value_range: [-1, 1]
""",
    ("level1", "swi_glu", "SwiGlu"): """cases:
- operator: SwiGlu
  case_id: 1
  input_shape:
  - [6, 4]
  dtype: [bfloat16]
  attrs: {dim: 0}
  value_range: [.nan, .nan]
""",
    ("level2", "apply_rotary_pos_emb", "ApplyRotaryPosEmb"): "cases: []\n",
    ("level3", "grouped_matmul", "GroupedMatmul"): """cases:
- operator: GroupedMatmul
  case_id: 1
  input_shape:
  - [8, 4]
  - [2, 4, 6]
  - [2, 6]
  dtype: [float16, float16, float16]
  attrs: {group_list: [3, 8], split_item: 0, transpose_weight: false}
  value_range: [[-1, 1], [-1, 1], [-0.1, 0.1]]
- operator: GroupedMatmul
  case_id: 2
  input_shape:
  - [8, 4]
  - [2, 6, 4]
  dtype: [float32, float32]
  attrs: {group_list: [0, 8], split_item: 2, transpose_weight: true}
  value_range: [[-1, 1], [-1, 1]]
""",
    ("level4", "mha", "MHA"): """cases:
- operator: MHA
  case_id: 1
  input_shape:
  - [1, 3, 2, 16]
  - [1, 5, 2, 16]
  - [1, 5, 2, 16]
  dtype: [float16, float16, float16]
  attrs: {scaleValue: -1.0, is_causal: true}
  value_range: [-1, 1]
  note: "S | baseline_kernels: FusedInferAttentionScore×1"
""",
    ("level4", "gqa", "GQA"): "cases: []\n",
    ("level2", "cross_entropy_loss", "CrossEntropyLoss"): """cases:
- operator: CrossEntropyLoss
  case_id: 1
  input_shape:
  - [5, 7]
  - [5]
  dtype: [float16, int64]
  attrs: {reduction: mean, ignore_index: -100}
  value_range:
  - [-1, 1]
  - [0, 6]
- operator: CrossEntropyLoss
  case_id: 2
  input_shape:
  - [2, 7, 3]
  - [2, 3]
  dtype: [float32, int64]
  attrs: {reduction: none, ignore_index: -100}
  value_range:
  - [-1, 1]
  - [0, 6]
""",
}
# cann-bench's kernel_bench lab (bench_lab/kernel_bench/<level>/<task>/): spec-only tasks, no times file here
LAB_CASES = {
    ("level4", "linear_cross_entropy", "LinearCrossEntropy"): """cases:
- operator: LinearCrossEntropy
  case_id: 1
  input_shape:
  - [6, 16]
  - [40, 16]
  - [6]
  dtype: [bfloat16, bfloat16, int32]
  attrs: {reduction: sum, ignore_index: -100}
  value_range:
  - [-1, 1]
  - [-0.02, 0.02]
  - [0, 39]
""",
}
# the preset's own tasks (data.PRESET_TASKS): the optimizer's in tasks/, TileLang's lab without levels
PRESET_CASES = {
    ("tasks/level2", "apply_adam_w", "ApplyAdamW"): """cases:
- operator: ApplyAdamW
  case_id: 1
  input_shape:
  - [3, 5]
  - [3, 5]
  - [3, 5]
  - [3, 5]
  dtype: [float16, float16, float16, float16]
  attrs: {lr: 0.01, beta1: 0.9, beta2: 0.999, weight_decay: 0.1, epsilon: 1.0e-08, maximize: false}
  value_range:
  - [-1, 1]
  - [-1, 1]
  - [-0.1, 0.1]
  - [0, 0.1]
""",
    ("tasks/level1", "foreach_norm", "ForeachNorm"): """cases:
- operator: ForeachNorm
  case_id: 1
  input_shape:
  - [[4, 8], [7]]
  dtype: [bfloat16]
  attrs: {scalar: 1.0}
  value_range: [-1, 1]
- operator: ForeachNorm
  case_id: 2
  input_shape:
  - [[4, 8]]
  dtype: [float32]
  attrs: {scalar: 3.0}
  value_range: [-1, 1]
""",
    ("bench_lab/tilelang_ascend_bench", "flash_attention", "FlashAttention"): """cases:
- operator: FlashAttention
  case_id: 1
  input_shape:
  - [1, 2, 2, 16]
  - [1, 5, 2, 16]
  - [1, 5, 2, 16]
  dtype: [bfloat16, bfloat16, bfloat16]
  attrs: {scaleValue: -1.0, is_causal: false}
  value_range: [-1, 1]
""",
}
PRESET_CASES[("bench_lab/kernel_bench/level5", "flash_attention_backward", "FlashAttentionBackward")] = """cases:
- operator: FlashAttentionBackward
  case_id: 1
  input_shape:
  - [1, 2, 8, 16]
  - [1, 2, 8, 16]
  - [1, 2, 8, 16]
  - [1, 2, 8, 16]
  dtype: [float16, float16, float16, float16]
  attrs: {scaleValue: 0.25, is_causal: true}
  value_range: [[-1, 1], [-1, 1], [-1, 1], [-1, 1]]
"""
PRESET_CASES[
    ("bench_lab/omni-ops_bench", "flash_attention_score_grad_enhance", "FlashAttentionScoreGradEnhance")
] = """cases:
- operator: FlashAttentionScoreGradEnhance
  case_id: 1
  input_shape:
  - [1, 8, 2, 16]
  - [1, 8, 2, 16]
  - [1, 8, 2, 16]
  - [1, 8, 2, 16]
  dtype: [bfloat16, bfloat16, bfloat16, bfloat16]
  attrs: {head_num: 2, input_layout: BSND, scale: 0.25, sparse_mode: 0, sink_num: 0}
  value_range: [[-1, 1], [-1, 1], [-1, 1], [-1, 1]]
"""
TILELANG_TIMES = {"_metadata": {}, "flash_attention": {"1": {"baseline_perf_us": 30.5, "t_hw_us": 2.0}}}
TIMES = {
    "level2": {"rms_norm": {"1": {"baseline_perf_us": 12.5, "t_hw_us": 1.0}, "2": {"baseline_perf_us": 20.83,
                                                                                   "t_hw_us": 2.0833}},
               "apply_adam_w": {"1": {"baseline_perf_us": 20.0, "t_hw_us": 1.5}}},
    "level1": {"swi_glu": {"1": {"baseline_perf_us": 10.0, "t_hw_us": 0.5}},
               "foreach_norm": {"1": {"baseline_perf_us": 10.0, "t_hw_us": 0.2}}},
    "level3": {"grouped_matmul": {"1": {"baseline_perf_us": 9.62, "t_hw_us": 1.0}}},
    "level4": {"mha": {"1": {"baseline_perf_us": 53.44, "t_hw_us": 17.48}}},
}  # fmt: skip
FLOOR_CASE = """cases:
- operator: Sigmoid
  case_id: 1
  input_shape:
  - [4, 8]
  dtype: [float16]
  attrs: {}
  value_range: [-1, 1]
  note: "S | baseline_kernels: Sigmoid×1"
"""


def write_checkout(root: Path) -> str:
    """The fixture checkout in two commits: the first publishes rms_norm case 2 and foreach_norm case 1 as
    measured above their cap, the second caps them (as cann-bench's dd6486f did); returns the second's sha."""
    for where, cases in (("tasks", CASES), ("bench_lab/kernel_bench", LAB_CASES), ("", PRESET_CASES)):
        for (level, task, op), text in cases.items():
            d = root / where / level / task
            d.mkdir(parents=True)
            (d / "cases.yaml").write_text(text)
            (d / "proto.yaml").write_text(PROTO.format(op=op, task=task))
    for task in D.FLOOR_TASKS:  # the floor tasks: one case each, no time (missing)
        d = root / "tasks" / "level1" / task
        d.mkdir(parents=True)
        (d / "cases.yaml").write_text(FLOOR_CASE)
        (d / "proto.yaml").write_text(PROTO.format(op=task.title(), task=task))
    (root / "tasks" / "metadata").mkdir()
    (root / "bench_lab" / "tilelang_ascend_bench" / "metadata").mkdir()
    (root / "bench_lab" / "tilelang_ascend_bench" / "metadata" / "910b2.json").write_text(json.dumps(TILELANG_TIMES))
    before = json.loads(json.dumps(TIMES))
    before["level2"]["rms_norm"]["2"]["baseline_perf_us"] = 1146.06
    before["level1"]["foreach_norm"]["1"]["baseline_perf_us"] = 26.06
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for times, message in ((before, "measured"), (TIMES, "cap")):
        (root / "tasks" / "metadata" / "910b2.json").write_text(json.dumps({"_metadata": {}, **times}))
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", message], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def test_importer_reads_cases_times_and_marks_caps(tmp_path):
    sha = write_checkout(tmp_path)
    for where in (tmp_path, tmp_path / ".git"):  # a work tree, and a git dir read at HEAD
        doc = D.import_checkout(where)
        assert doc["source"]["commit"] == sha
        rms = doc["tasks"]["rms_norm"]
        assert rms["level"] == "level2" and rms["operator"] == "RmsNorm"
        assert rms["files"]["cases"] == "tasks/level2/rms_norm/cases.yaml"
        c1, c2 = rms["cases"]
        assert c1["input_shape"] == [[4, 8], [8]] and c1["attrs"] == {"epsilon": 1e-6}
        assert c1["value_range"] == [-math.inf, math.inf]
        assert (c1["baseline_perf_us"], c1["t_hw_us"], c1["baseline_kind"]) == (12.5, 1.0, "measured")
        assert c2["baseline_kind"] == "cap"  # 20.83 = max(10 * 2.0833, 10) to 0.01 us
        first = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD~1"], capture_output=True, text=True)
        assert c2["precap"] == {"kind": D.PRECAP_KIND, "us": 1146.06, "read_at": first.stdout.strip(), "capped_by": sha}
        assert "precap" not in c1 and "precap" not in doc["tasks"]["swi_glu"]["cases"][0]  # measured; capped ever
        preset = doc["preset_tasks"]
        assert list(preset) == list(D.PRESET_TASKS) and "apply_adam_w" not in doc["tasks"]
        norm = preset["foreach_norm"]["cases"]
        assert norm[0]["input_shape"] == [[[4, 8], [7]]] and norm[0]["precap"]["us"] == 26.06
        assert (
            norm[1]["baseline_kind"] == "missing" and preset["apply_adam_w"]["cases"][0]["baseline_kind"] == "measured"
        )
        fa = preset["flash_attention"]  # a lab without levels: <set>/<task>/, its times keyed by task
        assert fa["level"] is None and fa["set"] == "bench_lab/tilelang_ascend_bench"
        assert fa["files"]["times"] == "bench_lab/tilelang_ascend_bench/metadata/910b2.json"
        assert (fa["cases"][0]["baseline_perf_us"], fa["cases"][0]["baseline_kind"]) == (30.5, "measured")
        assert doc["tasks"]["swi_glu"]["cases"][0]["baseline_kind"] == "cap"  # 10 us: the floor of the cap
        gmm = doc["tasks"]["grouped_matmul"]["cases"]
        assert gmm[0]["baseline_kind"] == "measured" and gmm[1]["baseline_kind"] == "missing"
        mha = doc["tasks"]["mha"]
        assert mha["level"] == "level4" and mha["cases"][0]["baseline_kind"] == "measured"
        lce = doc["tasks"]["linear_cross_entropy"]  # found in the lab; its set has no times file: none
        assert lce["files"]["cases"] == "bench_lab/kernel_bench/level4/linear_cross_entropy/cases.yaml"
        assert lce["files"]["times"] == "bench_lab/kernel_bench/metadata/910b2.json" and lce["level"] == "level4"
        assert lce["cases"][0]["baseline_kind"] == "missing"
        sig = doc["floor_tasks"]["sigmoid"]
        assert sig["files"]["cases"] == "tasks/level1/sigmoid/cases.yaml" and "sigmoid" not in doc["tasks"]
        assert sig["cases"][0]["input_shape"] == [[4, 8]] and sig["cases"][0]["baseline_kind"] == "missing"
    # the snapshot's JSON keeps the non-finite ranges
    assert D.decode(json.loads(json.dumps(D.encode(doc))))["tasks"]["swi_glu"]["cases"][0]["value_range"][0] != 0
    with pytest.raises(ValueError, match="neither"):
        D.import_checkout(tmp_path / "tasks")


def test_fixture_cases_map_to_our_ops(tmp_path):
    write_checkout(tmp_path)
    facts = D.import_checkout(tmp_path)
    ours = CB.mapping_doc(facts)
    assert ours["grouped_matmul"]["not_run"] == {}  # the bias case runs: the kernel takes the bias
    assert ours["apply_rotary_pos_emb"]["ours"] == "apply_rotary_pos_emb"
    cases, skipped = CB.verify_cases(facts)
    assert [c.name for c in cases] == ["cann_bench_rms_norm_1", "cann_bench_rms_norm_2", "cann_bench_swi_glu_1",
                                       "cann_bench_grouped_matmul_1", "cann_bench_grouped_matmul_2",
                                       "cann_bench_mha_1", "cann_bench_cross_entropy_loss_1",
                                       "cann_bench_linear_cross_entropy_1", "cann_bench_apply_adam_w_1",
                                       "cann_bench_foreach_norm_1", "cann_bench_flash_attention_1",
                                       "cann_bench_flash_attention_backward_1",
                                       "cann_bench_flash_attention_score_grad_enhance_1"]  # fmt: skip
    assert len(skipped) == 2 and skipped[0].startswith("cann_bench_cross_entropy_loss_2: channel-first")
    assert skipped[1].startswith("cann_bench_foreach_norm_2: norm order scalar=3")
    assert ours["foreach_norm"]["not_run"] == {"2": skipped[1].split(": ", 1)[1]}
    rms, _, swi, gmm_bias, gmm, mha, ce, lce, adam, norm, fa, bwd, enhance = cases
    assert [t.name for t in rms.outputs] == ["y", "rstd"] and rms.attrs == {"epsilon": 1e-6}
    assert swi.attrs == {"dim": 0} and swi.outputs[0].shape == (3, 4)
    bias = gmm_bias.inputs[3]
    assert (bias.name, bias.dtype, bias.shape, bias.value_range) == ("bias", "float16", (2, 6), (-0.1, 0.1))
    assert gmm.attrs == {"group_list_type": 0, "transpose_weight": True} and gmm.outputs[0].shape == (8, 6)
    assert gmm.inputs[2].value == [0, 8]
    assert mha.op == "fusion_attention" and mha.attrs["sparse_mode"] == 3 and mha.attrs["scale"] == 0.25
    assert ce.op == "cross_entropy_loss" and [t.name for t in ce.outputs][:2] == ["loss", "log_prob"]
    assert lce.op == "linear_cross_entropy_loss" and lce.inputs[2].dtype == "int64"
    # ApplyAdamW: our order var, m, v, grad; 16-bit m and v as the fp32 values they equal; y first, m and v judged
    assert [(t.name, t.dtype) for t in adam.inputs] == [("var", "float16"), ("m", "float32"), ("v", "float32"),
                                                        ("grad", "float16")]  # fmt: skip
    m = np.asarray(adam.inputs[1].value)
    assert np.array_equal(m, torch.from_numpy(m).half().double().numpy()) and np.abs(m).max() <= 0.1
    assert adam.attrs["eps"] == 1e-8 and adam.attrs["maximize"] is False and adam.attrs["step"] == 1.0
    assert [t.name for t in adam.outputs] == ["y", "m", "v"] and adam.meta["cann_outputs"] == 1
    # ForeachNorm: the list as x0, x1 (each its own data), one 0-dim norm each, all cann-bench's outputs
    assert [(t.name, t.shape) for t in norm.inputs] == [("x0", (4, 8)), ("x1", (7,))] and norm.attrs == {"scalar": 1.0}
    assert [(t.name, t.shape) for t in norm.outputs] == [("y0", ()), ("y1", ())] and norm.meta["cann_outputs"] == 2
    assert fa.op == "fusion_attention" and "sparse_mode" not in fa.attrs and fa.meta["task"] == "flash_attention"
    assert bwd.op == "fusion_attention_backward" and bwd.attrs["sparse_mode"] == 3 and len(bwd.outputs) == 3
    assert enhance.op == "fusion_attention_grad" and enhance.inputs[4].value == "forward_softmax_max"


def test_bf16_bias_is_passed_as_the_float32_it_equals():
    """A2's Matmul takes no bfloat16 bias: cann-bench's bfloat16 bias (drawn in bfloat16) becomes float32 data
    holding the same values."""
    case = {"case_id": 7, "input_shape": [[8, 4], [2, 4, 6], [2, 6]], "dtype": ["bfloat16"] * 3,
            "attrs": {"group_list": [3, 8]}, "value_range": [[-2, 2], [-2, 2], [-0.2, 0.2]]}  # fmt: skip
    ins, _, _ = CB._specs("grouped_matmul", case, "c7")
    bias = ins[3]
    assert (bias.name, bias.dtype, bias.shape) == ("bias", "float32", (2, 6))
    v = np.asarray(bias.value)
    assert np.array_equal(v, torch.from_numpy(v).bfloat16().double().numpy())  # bfloat16 values
    assert np.abs(v).max() <= 0.2 and len(np.unique(v)) > 6


@pytest.mark.parametrize("mode, layout", [("half", 0), ("interleaved", 1)])
def test_rope_half_tables_are_widened(mode, layout):
    """cann-bench's [S, D/2] cos/sin become our [1, S, 1, D] (BSND) / [1, 1, S, D] (BNSD) tables, widened as its
    golden does: half [c, c], interleaved each value twice."""
    q = [2, 4, 3, 8] if layout else [2, 3, 4, 8]  # S = 3
    case = {"case_id": 1, "input_shape": [q, q, [3, 4], [3, 4]], "dtype": ["float32"] * 4,
            "attrs": {"layout": layout, "rotaryMode": mode}, "value_range": [[-1, 1]] * 4}  # fmt: skip
    c = CB.to_case("apply_rotary_pos_emb", case, "fixture")
    cos = np.asarray(c.inputs[2].value)
    assert c.attrs == {"layout": ("BNSD" if layout else "BSND"), "rotary_mode": mode.removesuffix("d")}
    assert cos.shape == ((1, 1, 3, 8) if layout else (1, 3, 1, 8))
    half = cos.reshape(3, 8)
    assert np.array_equal(half[:, :4], half[:, 4:]) if mode == "half" else np.array_equal(half[:, 0::2], half[:, 1::2])


@pytest.mark.parametrize(
    "baseline,t_hw,kind",
    [(145.76, 69.92, "measured"), (9.62, 1.0, "measured"), (10.0, 1.0, "cap"), (10.0, 0.4, "cap"),
     (20.83, 2.0833, "cap"), (2621.6, 262.16, "cap"), (2621.5, 262.16, "measured")],
)  # fmt: skip
def test_cap_rule(baseline, t_hw, kind):
    """published = min(measured, max(10 t_hw, 10 us)): a value at the cap (to 0.01 us) is no measurement."""
    assert D.baseline_kind(baseline, t_hw) == kind


def test_hap_by_hand():
    assert D.hap(100.0, 100.0, 10.0) == pytest.approx(0.5)  # as fast as the baseline
    assert D.hap(100.0, 10.0, 10.0) == pytest.approx(1.0)  # at the hardware bound
    assert D.hap(100.0, 55.0, 10.0) == pytest.approx(90 / 135)
    assert D.hap(100.0, 190.0, 10.0) == pytest.approx(90 / 270)  # twice the baseline's distance: 1/3
    assert D.hap(100.0, 5.0, 10.0) == pytest.approx(90 / 85)  # faster than t_hw: above 1, not capped
    assert D.hap(0.0, 20.0, 2.0) == pytest.approx(0.5)  # no baseline: the cap max(20, 10) stands in
    assert D.hap(10.0, 5.0, 10.0) is None  # denominator -5
    assert D.hap(100.0, 0.0, 10.0) is None and D.hap(100.0, 50.0, 0.0) is None
    assert D.hap(100.0, float("nan"), 10.0) is None


def test_special_values_as_cann_bench_draws_them():
    v = np.asarray(CB.SpecialValues(-math.inf, math.inf, (5, 8), 7), dtype=np.float64).reshape(-1)
    assert (v[:2] == -np.inf).all() and (v[-2:] == np.inf).all()  # 40 // 20 = 2 each end
    assert np.isfinite(v[2:-2]).all() and (np.abs(v[2:-2]) <= 1).all()
    n = np.asarray(CB.SpecialValues(math.nan, math.nan, (4000,), 7), dtype=np.float64)
    assert 0.45 < np.isnan(n).mean() < 0.55 and (np.abs(n[~np.isnan(n)]) <= 1).all()
    same = CB.SpecialValues(-math.inf, math.inf, (5, 8), 7)  # made again when asked: the same data
    assert np.array_equal(np.asarray(same), v.reshape(5, 8))


def test_snapshot_is_the_checkout_and_the_mapping():
    """Our data file is what the importer makes from a cann-bench checkout (when given), mapping included."""
    snap = json.loads(D.DATA_FILE.read_text())
    assert snap["ours"] == CB.mapping_doc(D.load())
    if not CHECKOUT or not Path(CHECKOUT).is_dir():
        pytest.skip("no cann-bench checkout: set ASCENDC_CANN_BENCH_CHECKOUT to one")
    assert _tool("cann_bench_import").snapshot(CHECKOUT) == snap


def test_verify_and_bench_presets_end_to_end(tmp_path, capsys):
    """Two small real cases with special values (RmsNorm fp16 NaN, SwiGlu fp32 NaN split along dim 2) pass
    verify; bench prints the estimate, the baseline, HAP and the sources, also for RoPE's fused q+k case."""
    rc = cli.main(["verify", "--preset", "cann-bench", "--cann-case", "rms_norm:16", "swi_glu:13", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verify: 2 cases, 3 outputs, 3 passed" in out and "hicann/cann-bench @ " in out
    assert "model check:" in out and "error (calibrated)" in out and "model: Ascend910B2 calibrated" in out
    # verify reports the same run as bench: our estimate, the baseline and HAP per case, commit and machine
    table = out.split("| HAP | model error on built-in |")[1]
    assert "| rms_norm | 16 |" in table and "| swi_glu | 13 |" in table and "| PASS |" in table
    assert (
        "accuracy (twin vs float64 golden, cann-bench's rule): 2 / 2 passed; under this project's default rule 2" in out
    )
    assert "; commit " in out and "run on " in out and "below 1.0x on a measured baseline: 0 case(s)" in out
    rc = cli.main(["verify", "--preset", "cann-bench", "--cann-case", "rms_norm:16", "--no-progress", "--uncalibrated"])
    assert rc == 0 and "uncalibrated (prior values)" in capsys.readouterr().out
    js = tmp_path / "rows.json"
    rc = cli.main(["bench", "--preset", "cann-bench", "--cann-case", "rms_norm:16", "apply_rotary_pos_emb:14",
                   "--json", str(js), "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = json.loads(js.read_text())["rows"]
    rms = next(r for r in rows if r["task"] == "rms_norm")
    assert rms["accuracy"] is True and rms["est_us"] > 0 and rms["baseline_kind"] == "cap"  # 10 us = max(10, 10)
    assert rms["hap"] == pytest.approx(D.hap(rms["baseline_us"], rms["est_us"], rms["t_hw_us"]))
    rope = next(r for r in rows if r["task"] == "apply_rotary_pos_emb")  # fp32 NaN in every input
    assert rope["not_run"] is None and rope["accuracy"] is True and rope["est_us"] > 0
    # the HBM floor: the least work's bytes reaching HBM; RoPE's in-place outputs fit the L2: its reads only
    case = next(c for c in D.load()["tasks"]["apply_rotary_pos_emb"]["cases"] if c["case_id"] == 14)
    work = M.builtin_work("apply_rotary_pos_emb", case)
    plat = load_platform("910B", calibrated=True)
    assert rope["hbm_floor_us"] == pytest.approx(work.read / plat.hbm_bytes_per_s * 1e6)
    assert (
        "accuracy (twin vs float64 golden, cann-bench's rule): 2 / 2 passed; under this project's default rule 2" in out
    )
    assert "measured baselines: ours >= 1.0x on 0 / 0" in out and "run on " in out
    assert "| HAP | model error on built-in |" in out and "model check:" in out
    doc = json.loads(js.read_text())
    assert "calibrated" in doc["model"] and rms["model_err"] is None  # case 16's baseline is the cap: no check
    assert {r["set"] for r in doc["model_check"]} == {
        "calibration",
        "held out",
        "held out (> L2)",
        "checked",
        "checked (> L2)",
    }


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_bench_tables_joins_runs_in_parts(tmp_path, capsys):
    """tools/bench_tables.py joins bench runs made in parts and a verify run into the report one bench run of
    the same cases prints: the same rows, accuracy from verify's verdicts, each run's commit and machine."""
    a, b, v = (tmp_path / n for n in ("a.json", "b.json", "v.json"))
    bench = ["bench", "--preset", "cann-bench", "--no-progress"]
    assert cli.main([*bench, "--no-accuracy", "--cann-case", "rms_norm:16", "--json", str(a)]) == 0
    assert cli.main([*bench, "--no-accuracy", "--cann-case", "swi_glu:13", "--json", str(b)]) == 0
    assert cli.main(["verify", "--preset", "cann-bench", "--no-progress", "--cann-case", "rms_norm:16", "swi_glu:13",
                     "--json", str(v)]) == 0  # fmt: skip
    capsys.readouterr()
    assert cli.main([*bench, "--cann-case", "rms_norm:16", "swi_glu:13"]) == 0
    whole = capsys.readouterr().out
    joined = _tool("bench_tables").cann_bench_report([D.decode(json.loads(p.read_text())) for p in (a, b, v)])
    rows = [line for line in joined.splitlines() if line.startswith(("| rms_norm |", "| swi_glu |"))]
    assert len(rows) == 2 and all(r in whole for r in rows), joined
    assert "| PASS |" in rows[0] and "cann-bench's rule): 2 / 2 passed" in joined
    assert "rms_norm: commit " in joined and "swi_glu: commit " in joined and ", run on " in joined
    no_verdicts = _tool("bench_tables").cann_bench_report([D.decode(json.loads(a.read_text()))])
    assert "| not run |" in no_verdicts and "2 / 2" not in no_verdicts  # accuracy only from a verify run
    earlier = _tool("bench_tables").accuracy_from_table(joined.replace("| PASS |", "| FAIL |", 1))
    assert earlier == {("rms_norm", 16): (False, False), ("swi_glu", 13): (True, True)}
    carried = _tool("bench_tables").cann_bench_report([D.decode(json.loads(a.read_text()))], earlier, "the table")
    assert (
        "| FAIL |" in carried
        and "0 / 1 passed" in carried
        and "accuracy of 1 case(s) carried from the table" in carried
    )


def test_accuracy_from_an_earlier_table():
    """bench_tables --accuracy-from: PASS / FAIL per row of the cann-bench table, the default rule's failures from
    the summary; other tables and cells are ignored, a file without such a table is refused."""
    tool = _tool("bench_tables")
    text = """| op | shape |
|---|---|
| rms_norm | 3 |

| task | case | shapes | accuracy | speedup |
|---|---|---|---|---|
| rms_norm | 1 | 4x8 | PASS | 1.10x |
| grouped_matmul | 3 | 2x4 | PASS | 1.24x |
| swi_glu | 2 | 8 | not run | 0.90x |

- accuracy: 2 / 2 passed; under this project's default rule 1 (fails grouped_matmul 3)
"""
    assert tool.accuracy_from_table(text) == {("rms_norm", 1): (True, True), ("grouped_matmul", 3): (True, False)}
    with pytest.raises(ValueError, match="no cann-bench table"):
        tool.accuracy_from_table("| op | shape |\n|---|---|\n| rms_norm | 3 |\n")


def test_preset_usage_errors(capsys):
    for args in (
        ["verify", "--cann-case", "rms_norm"],
        ["verify", "--preset", "cann-bench", "--cann-case", "layer_norm"],
        ["bench", "--preset", "cann-bench", "--no-compile"],
        ["bench", "--preset", "cann-bench", "llama-7b"],
        ["verify", "--uncalibrated"],
    ):
        try:
            rc = cli.main(args)
        except SystemExit as e:  # argparse refuses an option the suite does not take from inside parse_args
            rc = e.code
        assert rc == 2
    err = capsys.readouterr().err
    assert "ascendc-ops bench cann-bench: error: unrecognized arguments: --no-compile" in err
    assert "ascendc-ops verify ops: error: unrecognized arguments: --uncalibrated" in err


def test_case_filters_and_quick():
    facts = D.load()
    only = CB.parse_only(["rms_norm:5,16", "swi_glu"])
    assert only == {"rms_norm": {5, 16}, "swi_glu": set()}
    picked = CB.select(facts, only)
    assert [(t, c["case_id"]) for t, c in picked][:2] == [("rms_norm", 5), ("rms_norm", 16)] and len(picked) == 22
    quick = CB.select(facts, only, quick=True)  # rms_norm 5 holds 33.5 Mi elements: not quick
    assert ("rms_norm", 5) not in [(t, c["case_id"]) for t, c in quick]
    assert all(CB.largest(c) <= CB.QUICK_ELEMENTS for _, c in quick) and ("rms_norm", 16) in [
        (t, c["case_id"]) for t, c in quick
    ]
    with pytest.raises(ValueError, match="integers"):
        CB.parse_only(["rms_norm:x"])
    assert CB.parse_only(["gqa:4,6,8-10", "mha:7-7"]) == {"gqa": {4, 6, 8, 9, 10}, "mha": {7}}
    for bad in ("mha:9-7", "mha:7-", "mha:-3"):
        with pytest.raises(ValueError, match="ranges FIRST-LAST"):
            CB.parse_only([bad])
