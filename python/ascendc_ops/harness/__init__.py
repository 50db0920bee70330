"""The `ascendc-ops` commands and what they share: verify (accuracy against the float64 goldens), bench (latency
against PyTorch; suites: bench (ops), bench_moe, bench_model), estimate (the pipeline model's 910B estimate),
host_profile (the twin measured per Ascend C API), info; how an op is fed and called (runner, twin_record); case
files (cases, case_fields, values), the Ascend accuracy standards (precision), dtype names (dtypes), the machine
and run environment (environment), charts (plot, with matplotlib), and per op family the harness knowledge
(families/). Imports go downward only (tests/harness/test_harness_imports.py)."""
