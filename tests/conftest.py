"""Shared pytest setup: the package on sys.path, and seeded RNGs so every test sees fixed inputs."""
from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))


@pytest.fixture(autouse=True)
def seed_rngs(request):
    """Seed torch and NumPy from the test id: reproducible, and different across parametrized cases."""
    seed = zlib.crc32(request.node.nodeid.encode())
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    yield seed

