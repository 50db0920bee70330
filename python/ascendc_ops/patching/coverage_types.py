"""What a few model types need beyond their shrunk defaults to run as tiny random models in the coverage table
(ascendc_ops.patching.coverage): config values the general shrinking cannot derive, the inputs a type's forward
takes besides token ids, and the types that are not runnable as a causal LM on their own (kept skipped, with
why). Configs and inputs only: nothing here changes what the patching does."""

from __future__ import annotations

import torch

# dots3's sliding-window layers (index 2 of the kept [indexed dense, indexed MoE, sliding MoE]) have head_dim =
# nope + rope, which the proportional per-layer shrinking cannot keep
DOTS3_SLIDING = {
    "02": {
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "q_lora_rank": 32,
        "kv_lora_rank": 16,
        "head_dim": 16,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 8,
        "v_head_dim": 16,
    }
}
# model type -> config values over the shrunk defaults (a sub-config's as a nested dict)
CONFIG_OVERRIDES: dict[str, dict] = {
    # DbrxAttention reads attn_config.rope_theta, which DbrxAttentionConfig never sets (checkpoints carry it)
    # and clip_qkv None becomes clamp(None, None), which torch rejects: the released checkpoints' clip of 8
    "dbrx": {"attn_config": {"rope_theta": 10000.0, "clip_qkv": 8.0}},
    # attention_layers is expanded from attention_types ([kinds, repeats]): one global and one local layer
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},
    # Mamba-2's heads span the expanded hidden size: 64 * 2 = 8 heads of 16
    "mamba2": {"num_heads": 8},
    # ZAYA's router picks one expert
    "zaya": {"num_experts_per_tok": 1},
    "dots3_note_text": {"per_layer_config": DOTS3_SLIDING},
    "dots3_note": {"text_config": {"per_layer_config": DOTS3_SLIDING}},
    # the LM head needs a decoder (and trains only in train mode: every dropout 0, the LSH hashing seeded); the
    # axial position embeddings factor the sequence (12 = 3 x 4, dims sum to hidden 64), the chunked attention
    # takes whole chunks of it
    "reformer": {
        "is_decoder": True,
        "axial_pos_shape": [3, 4],
        "axial_pos_embds_dim": [32, 32],
        "local_attn_chunk_length": 4,
        "lsh_attn_chunk_length": 4,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "lsh_attention_probs_dropout_prob": 0.0,
        "local_attention_probs_dropout_prob": 0.0,
        "hash_seed": 0,
        "num_buckets": 4,  # what it would set itself on the first forward (2 x 12 / 4, a power of 2)
    },
    # the defaults leave both unset, and the model reads them per layer type: LFM2's short-convolution and
    # attention layers (as Lfm2Config derives them), and one rotary setting (its M-RoPE split of 16-wide heads)
    "lfm2_moe": {"layer_types": ["conv", "full_attention"]},
    "cohere_compass_text": {
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]}
        }
    },
    # GIT prefixes the image's patch tokens: a 32-pixel image is 2 x 2 patches of 16 (+ CLS)
    "git": {"vision_config": {"image_size": 32}},
}

# types whose float64 run is another function: the fp32 unpatched model is the golden
NO_FLOAT64_GOLDEN = {
    "reformer": "LSH attention draws its random rotations in the model's dtype, so float64 hashes into other buckets"
}

# speculative-decoding drafters: their forward takes the main model's embeddings and KV states, no token ids
NOT_CAUSAL_LM = {
    t: "a speculative-decoding assistant: runs on its main model's inputs_embeds and shared_kv_states (no "
    "input_ids, no loss), not a causal LM on its own"
    for t in ("gemma4_assistant", "gemma4_unified_assistant")
}


def model_inputs(model_type: str, config, ids: torch.Tensor) -> dict:
    """The forward's inputs for token ids [batch, seq] (the labels are the ids, shifted by the model)."""
    if model_type in ("musicgen", "musicgen_melody"):  # one token stream per codebook, summed embeddings
        shifts = 31 * torch.arange(config.num_codebooks)  # a different stream in each codebook
        codes = (ids.unsqueeze(-1) + shifts) % config.vocab_size  # [batch, seq, codebooks], the labels' layout
        return {"input_ids": codes.transpose(1, 2).reshape(-1, ids.shape[1]), "labels": codes}
    inputs = {"input_ids": ids, "labels": ids}
    if model_type == "git":  # an image the text continues (the loss skips its patch tokens)
        vision = config.vision_config
        size = (ids.shape[0], vision.num_channels, vision.image_size, vision.image_size)
        inputs["pixel_values"] = torch.randn(size, generator=torch.Generator().manual_seed(2))
    return inputs


def prepare(model_type: str, model) -> None:
    """Model state a type's forward needs set before it runs."""
    if model_type == "reformer":  # its backward refuses eval mode (nothing random is left on: see above)
        model.train()
    if model_type == "xmod":  # X-MOD routes every token through its language's adapter
        model.set_default_language(model.config.languages[0])
