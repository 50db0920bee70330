"""The measured wing: `bench`'s suites (ops: each fused op against PyTorch; moe: the experts block; hf_model and
hf_fusions: an HF model's training step with and without the kernels) and `profile` (host_profile: the twin's
time per Ascend C API, which explain reads for each bench row that misses a target)."""

BENCH_DEFAULT = ("float32", "bfloat16")  # the dtypes bench times unless told (float16 rows add little on a CPU)
