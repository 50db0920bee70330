"""The `ascendc-ops` commands, in wings by purpose:

- verify/: accuracy against the float64 goldens (suite), msOpST-style case files (cases, case_fields) and msOpST's
  error_threshold rule;
- bench/: measured latency: the suites ops, moe and the HF model's training step (hf_model, hf_fusions), and
  `profile` (host_profile: the twin measured per Ascend C API, read by explain);
- pipeline/: the 910B pipeline model (a recorded instruction stream -> modelled time), `estimate`, and its
  calibration against cann-bench's measured built-in times (calibration, ideal_stream);
- cann_bench/: hicann/cann-bench's cases, times, score and accuracy rule as a preset of verify and bench;
- families/: per op family, how the wings run, check, feed and time its ops.

Shared by the wings: how an op is fed and called (runner, twin_record), case input data (values), the machine and
run environment (environment), charts (plot, with matplotlib); info is the `info` command. The Ascend accuracy
standards (ascendc_ops.precision) and dtype names (ascendc_ops.dtypes) live outside the harness, for model
patching. Imports go downward only (tests/harness/test_harness_imports.py)."""
