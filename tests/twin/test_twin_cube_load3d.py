"""LoadData 3Dv2 on the twin (csrc/twin/twin_cube_load3d.h): each form the matmul library issues on
A2 (L0A, L0A transposed, L0B; b8/b16/b32) moves the window's elements where a direct index
computation puts them, and where the img2col pseudocode cited by LoadData_3D.md
(load_data_l12l0/scripts/load3d.py) puts them; parameters outside the documented A2 rules, or
outside what the twin models, stop with the rule named."""

import re

import pytest
import torch

from conftest import kernel_library

load3d = kernel_library("twin_cube_load3d")

INT = {1: torch.int8, 2: torch.int16, 4: torch.int32}


def feature_map(groups, pixels, c0, dtype):
    """A distinct value per element (int16 wraps past 32767: fine, only positions matter)."""
    return (torch.arange(groups * pixels * c0, dtype=torch.int64) % 30011 - 15000).to(dtype)


def direct(l1, c0, pixels, k_start, m_start, k_ext, m_ext, trans, to_b):
    """dst[index(m, k)] = X[m_start + m][k_start + k], X[w][c] = l1[((c // c0) * pixels + w) * c0 + c % c0]."""
    m = torch.arange(m_ext).view(-1, 1).expand(m_ext, k_ext)
    k = torch.arange(k_ext).view(1, -1).expand(m_ext, k_ext)
    c, w = k_start + k, m_start + m
    x = l1[((c // c0) * pixels + w) * c0 + c % c0]
    if to_b:
        idx = ((m // c0) * (k_ext // 16) + k // 16) * 16 * c0 + (k % 16) * c0 + m % c0
    elif trans:
        idx = ((k // 16) * (m_ext // c0) + m // c0) * 16 * c0 + (k % 16) * c0 + m % c0
    else:
        idx = ((m // 16) * (k_ext // c0) + k // c0) * 16 * c0 + (m % 16) * c0 + k % c0
    out = torch.zeros(m_ext * k_ext, dtype=l1.dtype)
    out[idx.flatten()] = x.flatten()
    return out


def pseudocode(l1, c0, pixels, k_start, m_start, k_ext, m_ext, trans, to_b):
    """load3d.py's move_to_l0a / move_to_l0b for a 1 x 1 filter: the same reshapes and transposes."""
    fm = l1.view(-1, pixels, c0)[k_start // c0 : (k_start + k_ext) // c0, m_start : m_start + m_ext]
    fz = fm.reshape(k_ext // c0, m_ext // 16, 16, c0)
    if not to_b and not trans:
        return fz.permute(1, 0, 2, 3).flatten()
    if c0 == 16:
        return (fz.permute(1, 0, 3, 2) if to_b else fz.permute(0, 1, 3, 2)).flatten()
    t = fz.permute(1, 2, 0, 3).reshape(m_ext // 16, 16, k_ext).reshape(m_ext // 16, 2, 8, k_ext).permute(0, 1, 3, 2)
    if to_b:
        return t.flatten()
    return t.reshape(m_ext // 16, 2, k_ext // 16, 16, 8).permute(2, 0, 1, 3, 4).flatten()


# (bytes, l1H, l1W, channelSize, kExt, mExt, kStart, mStart, enTranspose, to_b): the library's forms
# (load_to_l0a_loadInstr.h, load_to_l0b_loadInstr.h) and windows inside a larger map
CASES = [
    (2, 1, 48, 64, 32, 32, 16, 16, False, False),  # A (M x K) -> Zz, a window
    (2, 1, 64, 48, 48, 64, 0, 0, False, False),  # the whole tile
    (2, 2, 16, 32, 32, 16, 0, 16, False, False),  # l1H 2: pixels run over H * W
    (2, 1, 64, 48, 32, 32, 16, 16, True, False),  # A stored K x M -> Zz with enTranspose
    (2, 1, 32, 64, 64, 32, 0, 0, False, True),  # B (K x N) -> Zn
    (2, 1, 48, 48, 32, 32, 16, 16, False, True),
    (4, 1, 48, 24, 16, 32, 8, 16, False, False),  # b32: K in groups of 8
    (4, 1, 32, 48, 32, 32, 16, 0, True, False),  # b32 transposed: 16 x 16 squares, two 16 x 8 fractals
    (4, 1, 48, 32, 32, 48, 0, 0, False, True),  # b32 B
    (1, 1, 32, 96, 64, 32, 32, 0, False, False),  # b8 A
]


@pytest.mark.parametrize(
    "case", CASES, ids=[f"b{8 * c[0]}-{'B' if c[9] else 'A'}{'T' if c[8] else ''}-{i}" for i, c in enumerate(CASES)]
)
def test_load3d_moves_each_element_where_the_rules_put_it(case):
    size, h, w, channels, k_ext, m_ext, k_start, m_start, trans, to_b = case
    c0 = 32 // size
    pixels = h * w
    l1 = feature_map(channels // c0, pixels, c0, INT[size])
    got = load3d.run(l1, [h, w, channels, k_ext, m_ext, k_start, m_start, int(trans), 1, 0], to_b)
    want = direct(l1, c0, pixels, k_start, m_start, k_ext, m_ext, trans, to_b)
    assert torch.equal(got, want)
    assert torch.equal(got, pseudocode(l1, c0, pixels, k_start, m_start, k_ext, m_ext, trans, to_b))


def test_load3d_extension_zero_is_a_nop():
    l1 = feature_map(2, 32, 16, torch.int16)
    assert torch.equal(load3d.run(l1, [1, 32, 32, 32, 0, 0, 0, 0, 1, 0], False), torch.zeros(0, dtype=torch.int16))


# Each a control beside a case above that passes: one parameter off the rules.
REFUSED = {
    "k_start_not_c0": ((2, 1, 48, 64, 32, 32, 8, 16, 0, False, 1, 0), r"kStartPt 8 must be a multiple of 16 for b16"),
    "window_leaves_map": (
        (2, 1, 48, 64, 32, 48, 16, 16, 0, False, 1, 0),
        r"window rows \[16, 64\) x channels \[16, 48\) leaves the 48 x 64 feature map",
    ),
    "channels_not_groups": ((2, 1, 48, 24, 16, 16, 0, 0, 0, False, 1, 0), r"channelSize 24 is not whole 16-element"),
    "convolution": ((2, 1, 48, 64, 32, 32, 16, 16, 0, False, 2, 0), r"as a convolution .* is not modelled"),
    "padding": ((2, 1, 48, 64, 32, 32, 16, 16, 0, False, 1, 1), r"padList \(padding\) is not modelled"),
    "b8_into_l0b": ((1, 1, 32, 64, 32, 32, 0, 0, 0, True, 1, 0), r"into L0B takes b16/b32 data, not b8"),
    "b8_transposed": ((1, 1, 32, 64, 32, 32, 0, 0, 1, False, 1, 0), r"enTranspose into L0A takes b16/b32 data"),
    "partial_fractal": ((2, 1, 48, 64, 32, 24, 16, 16, 0, False, 1, 0), r"mExtension 24 / kExtension 32 must be"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_load3d_refuses_parameters_off_the_rules(name):
    (size, h, w, channels, k_ext, m_ext, k_start, m_start, trans, to_b, filter_w, pad), detail = REFUSED[name]
    l1 = feature_map(max(1, channels // (32 // size)), h * w, 32 // size, INT[size])
    with pytest.raises(RuntimeError) as err:
        load3d.run(l1, [h, w, channels, k_ext, m_ext, k_start, m_start, trans, filter_w, pad], to_b)
    message = str(err.value)
    assert "[cube params]" in message and re.search("LoadData 3Dv2 " + detail, message), message
