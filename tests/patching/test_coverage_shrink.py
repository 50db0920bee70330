"""The coverage table's tiny configs (ascendc_ops.patching.coverage): per-layer settings cut with the layers kept,
per-type overrides and inputs for the families the plain shrinking left skipped, and how a wholly small-valued
output is judged."""

import numpy as np
import pytest

pytest.importorskip("transformers")

from pinned import only_pinned  # noqa: E402

from ascendc_ops.patching import coverage  # noqa: E402

pytestmark = only_pinned  # the families of the pinned transformers


def test_per_layer_settings_keep_the_same_layers():
    """Each combination of attention and MLP kind once, every per-layer list and the per-layer config indexed by
    the same kept layers, per-layer sizes in proportion."""
    present = {
        "num_hidden_layers": 6,
        "head_dim": 256,
        "num_attention_heads": 32,
        "layer_types": ["sliding", "sliding", "full", "sliding", "sliding", "full"],
        "mlp_layer_types": ["dense", "sparse", "sparse", "sparse", "sparse", "sparse"],
        "activation_sparsity_pattern": [0.95, 0.9, 0.0, 0.0, 0.0, 0.0],
        "intermediate_size": [512] * 6,
        "num_attention_heads_per_layer": [32, 32, 64, 32, 32, 64],
        "per_layer_config": {"02": {"head_dim": 512, "window": 7}, "05": {"head_dim": 512, "window": 7}},
        "hybrid_layer_ids": [2, 5],  # not per layer (2 long): left for the config to derive
    }
    kw = {"num_hidden_layers": 2, "head_dim": 16, "intermediate_size": 96, "num_attention_heads": 4}
    coverage._cut_layers(present, kw)
    assert kw["num_hidden_layers"] == 3
    assert kw["layer_types"] == ["sliding", "sliding", "full"]
    assert kw["mlp_layer_types"] == ["dense", "sparse", "sparse"]
    assert kw["activation_sparsity_pattern"] == [0.95, 0.9, 0.0]
    assert kw["intermediate_size"] == [96, 96, 96]
    assert kw["num_attention_heads_per_layer"] == [4, 4, 8]
    # head_dim 512 where 256 became 16: 32; a setting that is no size stays
    assert kw["per_layer_config"] == {"02": {"head_dim": 32, "window": 7}}
    assert "hybrid_layer_ids" not in kw


def test_one_attention_kind_keeps_a_dense_and_a_moe_layer():
    """DeepSeek-V3.2's layers all indexed attention, the first 3 dense: a dense and a MoE layer are kept."""
    present = {
        "num_hidden_layers": 8,
        "layer_types": ["indexed"] * 8,
        "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 5,
    }
    kw = {"num_hidden_layers": 2}
    coverage._cut_layers(present, kw)
    assert kw == {"num_hidden_layers": 2, "layer_types": ["indexed"] * 2, "mlp_layer_types": ["dense", "sparse"]}


def test_kinds_from_another_list_and_first_layers_without_one():
    present = {"num_layers": 5, "layers_block_type": ["mamba", "mamba", "hybrid", "mamba", "hybrid"], "w": [1] * 5}
    kw = {"num_layers": 2}
    coverage._cut_layers(present, kw)
    assert kw["layers_block_type"] == ["mamba", "hybrid"] and kw["w"] == [1, 1]
    kw = {"n_layer": 2}
    coverage._cut_layers({"n_layer": 4, "rates": [0.1, 0.2, 0.3, 0.4]}, kw)
    assert kw["rates"] == [0.1, 0.2]
    kinds = ["a"] * 3 + ["b", "c"]
    kw = {"num_hidden_layers": 2}
    coverage._cut_layers({"num_hidden_layers": 5, "layer_types": kinds}, kw)
    assert kw == {"num_hidden_layers": 3, "layer_types": ["a", "b", "c"]}  # more kinds than 2 layers: one each


@pytest.mark.parametrize(
    ("model_type", "check"),
    [
        (  # Gemma 4's full-attention layers' wider heads: 512 where 256 -> 16, so 32, on the kept full layer
            "gemma4",
            lambda c: (
                c.text_config.layer_types == ["sliding_attention", "full_attention"]
                and [c.text_config.per_layer_config[i].head_dim for i in range(2)] == [16, 32]
            ),
        ),
        ("gemma3n_text", lambda c: len(c.activation_sparsity_pattern) == c.num_hidden_layers == 2),
        ("zamba2", lambda c: c.layers_block_type == ["linear_attention", "hybrid"] and c.hybrid_layer_ids == [1]),
        ("gpt_neo", lambda c: c.attention_layers == ["global", "local"]),
        ("dbrx", lambda c: c.attn_config.rope_theta == 10000.0 and c.d_model == 64),
        (
            "bailing_hybrid",
            lambda c: (
                c.layer_types == ["linear_attention", "linear_attention", "full_attention"]
                and c.mlp_layer_types == ["dense", "sparse", "sparse"]
            ),
        ),
    ],
)
def test_tiny_configs_of_the_formerly_skipped(model_type, check):
    config = coverage.tiny_config(model_type)
    assert check(config), config


@pytest.mark.parametrize("model_type", ["dbrx", "gpt_neo", "git", "musicgen", "xmod", "reformer", "lfm2_moe", "zaya"])
def test_formerly_skipped_rows_pass(model_type):
    """Built from the shrunk defaults with the type's overrides and inputs, patched, and at parity."""
    row = coverage.check_model_type(model_type, coverage.decoder_types()[model_type])
    assert row.status == "pass", row
    assert row.grads and row.grads.split("/")[0] == row.grads.split("/")[1], row


def test_optional_k_rope_left_with_reason():
    """Qwen4-Exp's apply_rotary_pos_emb(q, k=None, ...) also rotates q alone (its indexer): fused_rope leaves it."""
    row = coverage.check_model_type("qwen4_exp_text", coverage.decoder_types()["qwen4_exp_text"])
    assert row.status == "pass" and "fused_rope" not in row.applied, row
    assert any("k is optional" in why for part, why in row.left.items() if part.startswith("fused_rope")), row.left


def test_assistants_stay_skipped_with_why():
    row = coverage.check_model_type("gemma4_assistant", coverage.decoder_types()["gemma4_assistant"])
    assert row.status == "skipped" and "shared_kv_states" in row.note, row


def test_wholly_small_output_judged_by_error_count():
    """A gradient zero in exact arithmetic (every golden element a small value, the comparison's rounding above
    2^-30): ours passes with an ErrorCount within 2x the comparison's and fails with many more."""
    rng = np.random.default_rng(0)
    golden = rng.standard_normal(2000) * 1e-18
    noise = rng.standard_normal(2000) * 1.5e-9

    def noisy(n):
        out = golden.copy()
        out[:n] += noise[:n]
        return out

    second = noisy(100)
    assert coverage._judge(noisy(150), second, golden)[0]
    ok, text = coverage._judge(noisy(1000), second, golden)
    assert not ok and "sanity bound" in text


def test_sanity_bound_read_against_the_comparison_in_the_same_run():
    """An fp32 gradient whose unpatched model comes near the sanity bound (CPM-Ant's second-layer project_q: 0.55x
    to 1.09x by MKL code path) passes at about the same distance in either direction, and fails far past it."""
    rng = np.random.default_rng(1)
    golden = rng.standard_normal(4000)
    bound = 16 * 2.0**-13 * np.maximum(np.abs(golden), np.sqrt(np.mean(golden**2)))  # precision.sanity_bound
    worst = np.zeros_like(golden)
    worst[7] = 1.0

    def at(times):  # golden plus `times` the bound on one element, rounding noise elsewhere
        return golden + bound * (times * worst + 1e-3 * rng.standard_normal(golden.size))

    assert coverage._judge(at(1.05), at(0.95), golden)[0]  # ours just over the bound, the comparison just under
    assert coverage._judge(at(0.9), at(1.1), golden)[0]
    ok, text = coverage._judge(at(6.0), at(0.9), golden)
    assert not ok and "sanity bound" in text, text
