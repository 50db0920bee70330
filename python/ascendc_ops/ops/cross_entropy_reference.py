"""The cross_entropy family's float64 NumPy references (goldens), one module per op:
cross_entropy_loss_reference (cross_entropy_loss and its gradient)."""

from __future__ import annotations

from .cross_entropy_loss_reference import cross_entropy_loss, cross_entropy_loss_backward, log_softmax

__all__ = ["cross_entropy_loss", "cross_entropy_loss_backward", "log_softmax"]
