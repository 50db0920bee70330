"""tests/accuracy.py's own rule: a verdict on fp32 must not turn on the summation order this CPU's BLAS picks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accuracy import assert_accurate


def test_literal_fp32_bound_is_refused_where_pytorch_misses_it():
    """PyTorch's fp32 result 5e-4 off everywhere (MERE over 2^-13): an exact result of ours still fails without
    the formula's bound, since in another order ours could be where PyTorch is; with the bound it passes."""
    golden = np.linspace(1.0, 2.0, 512)
    second = torch.tensor(golden * (1 + 5e-4), dtype=torch.float32)
    ours = torch.tensor(golden, dtype=torch.float32)
    with pytest.raises(AssertionError, match="fails PyTorch's own result"):
        assert_accurate(ours, golden, second, torch.float32, "exact")
    assert_accurate(ours, golden, second, torch.float32, "exact", bound=np.full_like(golden, 1e-6))


def test_literal_fp32_bound_still_judges_where_pytorch_meets_it():
    golden = np.linspace(1.0, 2.0, 512)
    second = torch.tensor(golden, dtype=torch.float32)
    assert_accurate(torch.tensor(golden * (1 + 2.0**-20), dtype=torch.float32), golden, second, torch.float32, "ok")
    with pytest.raises(AssertionError, match="MERE"):
        assert_accurate(torch.tensor(golden * (1 + 5e-4), dtype=torch.float32), golden, second, torch.float32, "bad")
