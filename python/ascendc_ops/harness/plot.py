"""A dependency-free bar chart for `bench --plot`: RGB pixels, a 5x7 bitmap font, and a PNG written
with zlib (signature, IHDR, IDAT, IEND). Two panels per benchmark row: the speedups over the PyTorch
step-by-step code and over torch.compile (with the 1x and 3x marks), and the % of copy bandwidth
(with the 50% mark)."""
from __future__ import annotations

import struct
import zlib

# 5x7 glyphs, one 5-bit row each (MSB = left pixel). Lowercase letters draw as uppercase, except x.
_G = {
    "A": (14, 17, 17, 31, 17, 17, 17), "B": (30, 17, 17, 30, 17, 17, 30), "C": (14, 17, 16, 16, 16, 17, 14),
    "D": (30, 17, 17, 17, 17, 17, 30), "E": (31, 16, 16, 30, 16, 16, 31), "F": (31, 16, 16, 30, 16, 16, 16),
    "G": (14, 17, 16, 23, 17, 17, 15), "H": (17, 17, 17, 31, 17, 17, 17), "I": (14, 4, 4, 4, 4, 4, 14),
    "J": (7, 2, 2, 2, 2, 18, 12), "K": (17, 18, 20, 24, 20, 18, 17), "L": (16, 16, 16, 16, 16, 16, 31),
    "M": (17, 27, 21, 21, 17, 17, 17), "N": (17, 17, 25, 21, 19, 17, 17), "O": (14, 17, 17, 17, 17, 17, 14),
    "P": (30, 17, 17, 30, 16, 16, 16), "Q": (14, 17, 17, 17, 21, 18, 13), "R": (30, 17, 17, 30, 20, 18, 17),
    "S": (15, 16, 16, 14, 1, 1, 30), "T": (31, 4, 4, 4, 4, 4, 4), "U": (17, 17, 17, 17, 17, 17, 14),
    "V": (17, 17, 17, 17, 17, 10, 4), "W": (17, 17, 17, 21, 21, 21, 10), "X": (17, 17, 10, 4, 10, 17, 17),
    "Y": (17, 17, 10, 4, 4, 4, 4), "Z": (31, 1, 2, 4, 8, 16, 31),
    "0": (14, 17, 19, 21, 25, 17, 14), "1": (4, 12, 4, 4, 4, 4, 14), "2": (14, 17, 1, 2, 4, 8, 31),
    "3": (31, 2, 4, 2, 1, 17, 14), "4": (2, 6, 10, 18, 31, 2, 2), "5": (31, 16, 30, 1, 1, 17, 14),
    "6": (6, 8, 16, 30, 17, 17, 14), "7": (31, 1, 2, 4, 8, 8, 8), "8": (14, 17, 17, 14, 17, 17, 14),
    "9": (14, 17, 17, 15, 1, 2, 12),
    " ": (0,) * 7, ".": (0, 0, 0, 0, 0, 12, 12), ",": (0, 0, 0, 0, 12, 4, 8), "-": (0, 0, 0, 31, 0, 0, 0),
    "_": (0, 0, 0, 0, 0, 0, 31), "%": (24, 25, 2, 4, 8, 19, 3), ":": (0, 12, 12, 0, 12, 12, 0),
    "/": (0, 1, 2, 4, 8, 16, 0), "(": (2, 4, 8, 8, 8, 4, 2), ")": (8, 4, 2, 2, 2, 4, 8),
    "+": (0, 4, 4, 31, 4, 4, 0), "=": (0, 0, 31, 0, 31, 0, 0), ">": (8, 4, 2, 1, 2, 4, 8),
    "<": (2, 4, 8, 16, 8, 4, 2), "x": (0, 0, 17, 10, 4, 10, 17), "?": (14, 17, 1, 2, 4, 0, 4),
}
CHAR_W, CHAR_H = 6, 8  # glyph plus one pixel of spacing

WHITE, BLACK, GREY, LIGHT = (255, 255, 255), (0, 0, 0), (120, 120, 120), (225, 225, 225)
BLUE, ORANGE, GREEN, RED = (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)


class Canvas:
    def __init__(self, width: int, height: int, bg=WHITE):
        self.w, self.h = width, height
        self.px = bytearray(bytes(bg) * (width * height))

    def rect(self, x0: int, y0: int, x1: int, y1: int, color) -> None:
        x0, x1 = max(0, min(x0, x1)), min(self.w, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.h, max(y0, y1))
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            i = (y * self.w + x0) * 3
            self.px[i:i + len(row)] = row

    def text(self, x: int, y: int, s: str, color=BLACK) -> None:
        for k, ch in enumerate(s):
            glyph = _G.get(ch, _G.get(ch.upper(), _G["?"]))
            for r, bits in enumerate(glyph):
                for c in range(5):
                    if bits >> (4 - c) & 1:
                        self.rect(x + k * CHAR_W + c, y + r, x + k * CHAR_W + c + 1, y + r + 1, color)

    def png(self) -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        stride = self.w * 3
        raw = b"".join(b"\0" + bytes(self.px[y * stride:(y + 1) * stride]) for y in range(self.h))
        ihdr = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9))
                + chunk(b"IEND", b""))


def _nice_max(v: float) -> float:
    for e in range(-2, 7):
        for m in (1, 2, 2.5, 5):
            if m * 10**e >= v:
                return m * 10**e
    return v


def bench_chart(rows: list[dict], path: str, title: str = "ascendc-ops bench") -> None:
    """Speedups (vs step-by-step, vs torch.compile) and % of copy bandwidth per bench row, as a PNG."""
    labels = [f"{r['op']} {r['shape']} {r['dtype']} {r['pass']}" for r in rows]
    label_w = CHAR_W * max(len(s) for s in labels) + 10
    panel_w, bar_h, gap, top, left = 320, 8, 8, 44, 8
    group_h = 2 * bar_h + gap
    width = left + label_w + 2 * panel_w + 60
    height = top + group_h * len(rows) + 40
    cv = Canvas(width, height)
    cv.text(left, 6, title[: (width - 2 * left) // CHAR_W])

    speed = [v for r in rows for v in (r["vs_torch"], r.get("vs_compile")) if v is not None]
    smax = _nice_max(max(speed + [3.0]) * 1.05)
    pmax = _nice_max(max(max(r["pct_copy"] for r in rows) * 1.05, 100.0))
    panels = [(left + label_w, smax, "speedup (blue: vs step, orange: vs compile)",
               ((1.0, GREY), (3.0, RED)), "x"),
              (left + label_w + panel_w + 40, pmax, "% of copy bandwidth (green, red: 50%)", ((50.0, RED),), "%")]
    plot_h = group_h * len(rows)
    for x0, vmax, heading, marks, unit in panels:
        cv.text(x0, 22, heading[: (panel_w + 30) // CHAR_W], GREY)
        cv.rect(x0, top - 4, x0 + 1, top + plot_h, BLACK)  # axis
        for k in range(5):  # grid and ticks
            v = vmax * k / 4
            x = x0 + int(panel_w * k / 4)
            cv.rect(x, top - 4, x + 1, top + plot_h, LIGHT if k else BLACK)
            cv.text(x - 6, top + plot_h + 6, f"{v:g}{unit}", GREY)
        for v, color in marks:
            x = x0 + int(panel_w * v / vmax)
            for y in range(top - 4, top + plot_h, 4):
                cv.rect(x, y, x + 1, y + 2, color)
    for i, (r, label) in enumerate(zip(rows, labels)):
        y = top + i * group_h
        cv.text(left, y + bar_h - 3, label)
        x0, vmax = panels[0][0], panels[0][1]
        for j, (v, color) in enumerate(((r["vs_torch"], BLUE), (r.get("vs_compile"), ORANGE))):
            if v is None:
                cv.text(x0 + 4, y + j * bar_h, "n/a", GREY)
                continue
            cv.rect(x0 + 1, y + j * bar_h, x0 + 1 + int(panel_w * v / vmax), y + (j + 1) * bar_h - 1, color)
        x0, vmax = panels[1][0], panels[1][1]
        cv.rect(x0 + 1, y + bar_h // 2, x0 + 1 + int(panel_w * r["pct_copy"] / vmax), y + bar_h // 2 + bar_h,
                GREEN)
    with open(path, "wb") as f:
        f.write(cv.png())
