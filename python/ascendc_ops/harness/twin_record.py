"""The twin's per-launch exports, switched on around a call: its instruction record, whole (JSON: every
instruction with its addresses) or packed (what the pipeline model reads, pipeline/packed.py: distinct
instructions and block kinds once, at any shape), and its host profile (bench/host_profile.py). Each is a
consumer inside the twin that keeps one string per launch until taken."""

from __future__ import annotations

import json
from contextlib import contextmanager

import torch


@contextmanager
def collected(switch, take, load=json.loads):
    """What a twin consumer exports for every launch inside: `switch(on)` turns it on and off, `take()`
    returns its strings, each read by `load` (anything left over from before is dropped first)."""
    take()
    switch(True)
    items: list = []
    try:
        yield items
    finally:
        switch(False)
        items.extend(load(s) for s in take())


def recording():
    """Every launch inside, as recorded by the twin ({"kernel", "block_dim", "blocks"} each)."""
    return collected(torch.ops.ascendc_ops.twin_record, torch.ops.ascendc_ops.twin_record_take)


def packed_recording():
    """Every launch inside, as the twin's packed record (pipeline.packed.PackedLaunch each)."""
    from .pipeline.packed import parse

    ops = torch.ops.ascendc_ops
    return collected(ops.twin_record_packed, ops.twin_record_packed_take, parse)


def host_profiling():
    """Every launch inside, as the twin's host profile ({"kernel", "block_dim", "setup_ns", "block_ns",
    "apis"} each)."""
    return collected(torch.ops.ascendc_ops.twin_host_profile, torch.ops.ascendc_ops.twin_host_profile_take)
