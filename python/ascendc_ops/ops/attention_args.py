"""The fused attention family's arguments and what they mean, in one place: the attributes with the prototype's
defaults (op_proto/attention/fusion_attention.json), the layouts and their heads split and merge, the TND
cumulative lengths, and the compressed causal mask of sparse modes 2-4. The reference, the wrappers, the harness,
patching, the torch_npu face and the tests all read these; the semantics' sources are in docs/attention.md.

No torch import: the layout functions take NumPy arrays or torch tensors alike (a torch tensor is permuted with
``permute``, an array with ``transpose``), so the torch-free float64 reference uses them too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..op_proto import load_all

OP = "fusion_attention"
LAYOUTS = ("BSH", "SBH", "BSND", "BNSD", "TND")
_DEFAULTS = {a.name: a.default for a in load_all()[OP].attrs}
TOCKENS_MAX = int(_DEFAULTS["pre_tockens"])  # pre/next_tockens' default: the band is the whole matrix
COMPRESSED_MASK_SIZE = 2048  # the compressed causal mask's side (torch_npu's sparse modes 2-4)


class AttentionAttrs(NamedTuple):
    """fusion_attention's arguments after its tensors (query, key, value; the grad's also dy and the forward's
    results), in the schema's order with the prototype's defaults: ``AttentionAttrs(4, "BNSD", mask,
    sparse_mode=3)`` fills the rest. The grad takes the same list with sink last (``grad_args``)."""

    head_num: int
    input_layout: str
    atten_mask: Any = None
    scale: float = float(_DEFAULTS["scale"])
    pre_tockens: int = TOCKENS_MAX
    next_tockens: int = int(_DEFAULTS["next_tockens"])
    actual_seq_qlen: Any = None
    actual_seq_kvlen: Any = None
    sparse_mode: int = int(_DEFAULTS["sparse_mode"])
    softcap: float = float(_DEFAULTS["softcap"])  # > 0: scores softcap * tanh(s / softcap) before the mask; 0 none
    keep_prob: float = float(_DEFAULTS["keep_prob"])  # < 1: dropout with drop_mask (docs/attention.md "Dropout")
    sink: Any = None  # fp32 [N1]: one logit per query head joining every row's softmax with no value (gpt-oss)
    drop_mask: Any = None  # uint8, one bit a score element [B, N1, S1, S2] (pack_dropout_mask), 1 = kept

    def grad_args(self) -> tuple:
        """The list fusion_attention_grad takes: sink moved last, after drop_mask (torch_npu appended both, the grad
        in that order; the op's 4th output is sink's gradient)."""
        return tuple(getattr(self, name) for name in self._fields if name != "sink") + (self.sink,)

    def band(self) -> tuple[int, int, int]:
        """(sparse_mode, pre_tockens, next_tockens) as ints: what the masks read besides the mask itself."""
        return int(self.sparse_mode), int(self.pre_tockens), int(self.next_tockens)


def compressed_mask() -> np.ndarray:
    """The compressed causal mask sparse modes 2-4 take: bool triu(ones(2048, 2048), 1), True = masked."""
    return np.triu(np.ones((COMPRESSED_MASK_SIZE, COMPRESSED_MASK_SIZE), bool), 1)


def seq_lengths(cumulative, name: str = "actual_seq_qlen") -> np.ndarray:
    """Per-sequence lengths from torch_npu's cumulative ends (no leading 0: lengths 2, 2, 2 -> [2, 4, 6]).
    Trailing zeros mark batches that take no part, as torch_npu documents ([2, 5, 9, 0, 0])."""
    if cumulative is None:
        raise ValueError(f"{OP}: input_layout TND needs {name}, got None")
    if hasattr(cumulative, "detach"):
        cumulative = cumulative.detach().cpu().numpy()
    c = np.asarray(cumulative, dtype=np.int64).reshape(-1)
    if c.size == 0:
        raise ValueError(f"{OP}: {name} must hold at least one cumulative length, got []")
    nz = np.flatnonzero(c)
    used = c[: nz[-1] + 1] if nz.size else c[:0]
    if np.any(c[used.size :] != 0) or np.any(np.diff(np.concatenate(([0], used))) < 0):
        raise ValueError(f"{OP}: {name} must be non-decreasing cumulative ends (trailing 0s allowed), got {c.tolist()}")
    return np.concatenate((np.diff(np.concatenate(([0], used))), np.zeros(c.size - used.size, np.int64)))


# ---- layouts ----
def _permute(x, *axes):
    return x.permute(*axes) if hasattr(x, "permute") else x.transpose(axes)


def layout_shape(layout: str, b: int, n: int, s: int, d: int) -> list[int]:
    """A fixed layout's shape of B batches, N heads, S tokens, D per head."""
    return {"BNSD": [b, n, s, d], "BSND": [b, s, n, d], "BSH": [b, s, n * d], "SBH": [s, b, n * d]}[layout]


def batch_and_seq(layout: str, shape) -> tuple[int, int]:
    """(B, S) of a fixed layout's shape."""
    b, s = {"BNSD": (0, 2), "BSND": (0, 1), "BSH": (0, 1), "SBH": (1, 0)}[layout]
    return shape[b], shape[s]


# where B, N, S, D sit in each fixed layout, once BSH / SBH's H is split into N, D: its axes -> BNSD
_TO_BNSD = {"BNSD": (0, 1, 2, 3), "BSND": (0, 2, 1, 3), "BSH": (0, 2, 1, 3), "SBH": (1, 2, 0, 3)}


def split_heads(x, layout: str, heads: int | None = None):
    """[B, N, S, D] view of a fixed-layout tensor (BSH and SBH are split into ``heads`` heads)."""
    if layout in ("BSH", "SBH"):
        x = x.reshape(x.shape[0], x.shape[1], heads, x.shape[2] // heads)
    return _permute(x, *_TO_BNSD[layout])


def merge_heads(x, layout: str):
    """split_heads' inverse: [B, N, S, D] -> the fixed layout."""
    if layout == "BNSD":
        return x
    x = _permute(x, 0, 2, 1, 3)  # BSND
    if layout in ("BSH", "SBH"):
        x = x.reshape(x.shape[0], x.shape[1], -1)
    return _permute(x, 1, 0, 2) if layout == "SBH" else x


def split_sequences(x, lens) -> list:
    """TND [T, N, d] -> one [N, s, d] per sequence of the given lengths (not cumulative: seq_lengths)."""
    ends = np.cumsum(lens)
    return [_permute(x[e - n : e], 1, 0, 2) for e, n in zip(ends, lens, strict=True)]


def merge_sequences(per_sequence: list, cat=np.concatenate):
    """split_sequences' inverse: one [T, N, d] (cat: np.concatenate, or torch.cat for tensors)."""
    return cat([_permute(o, 1, 0, 2) for o in per_sequence])


# ---- the explicit dropout mask (docs/attention.md, "Dropout") ----
DROPOUT_MASK_ALIGN_BITS = 128  # op-plugin's dropout_gen_mask draws ceil(numels / 128) * 128 bits


def dropout_mask_bytes(numels: int) -> int:
    """Bytes a dropout mask of `numels` score elements must hold at least: one bit an element."""
    return (int(numels) + 7) // 8


def pack_dropout_mask(keep) -> np.ndarray:
    """A boolean keep matrix [B, N, S1, S2] (True = kept) as torch_npu's uint8 dropout mask: element e (flat,
    row-major) is bit e % 8 (least significant first) of byte e // 8, padded with zero bits to whole 128-bit
    draws as op-plugin's dropout_gen_mask allocates them."""
    flat = np.asarray(keep.detach().cpu().numpy() if hasattr(keep, "detach") else keep, bool).reshape(-1)
    padded = -(-flat.size // DROPOUT_MASK_ALIGN_BITS) * DROPOUT_MASK_ALIGN_BITS
    return np.packbits(np.pad(flat, (0, padded - flat.size)), bitorder="little")


def unpack_dropout_mask(mask, shape) -> np.ndarray:
    """pack_dropout_mask's inverse: the bool keep matrix of `shape` from a uint8 mask (any shape, read flat);
    the bits past the shape's element count are not read."""
    m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
    if m.dtype != np.uint8:
        raise TypeError(f"{OP}: drop_mask must be uint8 (one bit a score element), got {m.dtype}")
    numels = int(np.prod(shape))
    if m.size < dropout_mask_bytes(numels):
        raise ValueError(
            f"{OP}: drop_mask must hold {numels} bits ({dropout_mask_bytes(numels)} bytes) for the scores "
            f"{list(shape)}, got {m.size} bytes"
        )
    return np.unpackbits(m.reshape(-1), bitorder="little", count=numels).astype(bool).reshape(shape)
