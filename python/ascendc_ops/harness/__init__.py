"""The `ascendc-ops` commands and what they share: verify (accuracy against the float64 goldens), bench
(latency against PyTorch), info, model_bench; case files (cases, case_fields, values), the Ascend accuracy
standards (precision), the machine and run environment (environment), charts (plot), and per op family the
harness knowledge (families/)."""
