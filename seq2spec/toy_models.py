"""Small, randomly initialised encoder-decoders whose greedy outputs are varied, for tests and benchmarks.

A freshly initialised T5 tends to repeat one token (often padding) forever, which would make any equality test
vacuous. These builders widen the weight initialisation so that outputs depend on the input, silence the padding
logit, and strengthen the end-of-sequence logit so rows stop at different steps. ``varied_enough`` is the check
the tests repeat on their own reference outputs.
"""

from __future__ import annotations

import copy

import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    MBartConfig,
    MBartForConditionalGeneration,
    MT5Config,
    MT5ForConditionalGeneration,
    PreTrainedModel,
    T5Config,
    T5ForConditionalGeneration,
)

FAMILIES = ("t5", "t5-v1_1", "mt5", "bart")  # the families the full test grid covers
EXTRA_FAMILIES = ("mbart",)
VOCAB_SIZE = 128
_DEFAULT_EOS_SCALE = {"bart": 1.4, "mbart": 1.4}


def _shape_output_head(model: PreTrainedModel, pad_id: int, eos_id: int, eos_scale: float) -> PreTrainedModel:
    with torch.no_grad():
        head = model.get_output_embeddings().weight
        head[pad_id] = 0.0
        head[eos_id] *= eos_scale
    return model.eval()


def build_toy_model(
    family: str,
    *,
    seed: int = 0,
    d_model: int = 64,
    layers: int = 2,
    decoder_layers: int | None = None,
    eos_scale: float | None = None,
    init_scale: float = 5.0,
    vocab_size: int = VOCAB_SIZE,
) -> PreTrainedModel:
    """A random ``family`` model (one of ``FAMILIES``) with varied greedy outputs."""
    torch.manual_seed(seed)
    if eos_scale is None:  # chosen so that rows of a random batch end at many different steps
        eos_scale = _DEFAULT_EOS_SCALE.get(family, 2.0)
    decoder_layers = layers if decoder_layers is None else decoder_layers
    heads = max(1, d_model // 16)
    if family in ("t5", "t5-v1_1", "mt5"):
        gated = family != "t5"
        config_class, model_class = (
            (MT5Config, MT5ForConditionalGeneration) if family == "mt5" else (T5Config, T5ForConditionalGeneration)
        )
        config = config_class(
            vocab_size=vocab_size,
            d_model=d_model,
            d_kv=d_model // heads,
            d_ff=2 * d_model,
            num_layers=layers,
            num_decoder_layers=decoder_layers,
            num_heads=heads,
            feed_forward_proj="gated-gelu" if gated else "relu",
            tie_word_embeddings=not gated,
            dropout_rate=0.0,
            initializer_factor=float(init_scale),
            pad_token_id=0,
            eos_token_id=1,
            decoder_start_token_id=0,
        )
        return _shape_output_head(model_class(config), 0, 1, eos_scale)
    if family in ("bart", "mbart"):
        config_class, model_class = (
            (MBartConfig, MBartForConditionalGeneration)
            if family == "mbart"
            else (BartConfig, BartForConditionalGeneration)
        )
        config = config_class(
            vocab_size=vocab_size,
            d_model=d_model,
            encoder_layers=layers,
            decoder_layers=decoder_layers,
            encoder_attention_heads=heads,
            decoder_attention_heads=heads,
            encoder_ffn_dim=2 * d_model,
            decoder_ffn_dim=2 * d_model,
            max_position_embeddings=256,
            dropout=0.0,
            attention_dropout=0.0,
            activation_dropout=0.0,
            init_std=0.02 * float(init_scale),
            tie_word_embeddings=False,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=2,
            forced_eos_token_id=2,
        )
        return _shape_output_head(model_class(config), 1, 2, eos_scale)
    raise ValueError(f"unknown toy family {family!r}; expected one of {FAMILIES + EXTRA_FAMILIES}")


def perturbed_copy(model: PreTrainedModel, *, seed: int = 1, relative_noise: float = 0.05) -> PreTrainedModel:
    """A copy of ``model`` whose decoder weights carry Gaussian noise: a draft that agrees only part of the time."""
    generator = torch.Generator().manual_seed(seed)
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for name, parameter in copied.named_parameters():
            if "decoder" in name or "lm_head" in name:
                noise = torch.randn(parameter.shape, generator=generator).to(parameter)
                parameter.add_(noise * relative_noise * parameter.float().std().to(parameter))
    return copied.eval()


def random_sources(
    rows: int,
    *,
    seed: int = 0,
    min_length: int = 3,
    max_length: int = 16,
    vocab_size: int = VOCAB_SIZE,
    pad_id: int = 0,
    first_id: int = 3,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded random token ids of mixed lengths and their attention mask."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_length, max_length + 1, (rows,), generator=generator)
    lengths[0] = max_length  # the longest row sets the width
    ids = torch.randint(first_id, vocab_size, (rows, max_length), generator=generator)
    mask = (torch.arange(max_length)[None, :] < lengths[:, None]).long()
    return ids * mask + pad_id * (1 - mask), mask


def varied_enough(sequences: torch.Tensor, pad_id: int, *, min_lengths: int = 3, min_distinct: int = 3) -> bool:
    """Do greedy outputs differ in length and content (not one token repeated, not all padding)?"""
    body = sequences[:, 1:]
    lengths = (body != pad_id).sum(dim=1)
    distinct_rows = {tuple(row.tolist()) for row in body}
    distinct_tokens = body[body != pad_id].unique().numel()
    return (
        lengths.unique().numel() >= min(min_lengths, sequences.shape[0])
        and len(distinct_rows) >= min(min_distinct, sequences.shape[0])
        and distinct_tokens >= 8
    )


def damp_decoder_layers(model: PreTrainedModel, first: int, factor: float) -> PreTrainedModel:
    """Scale the residual updates of decoder layers ``first..`` by ``factor``.

    The result is still a nondegenerate random model, but its first ``first`` decoder layers carry most of its
    decisions, so a draft made of those layers agrees with it often, as a distilled draft would.
    """
    decoder = model.get_decoder()
    layers = decoder.block if hasattr(decoder, "block") else decoder.layers
    with torch.no_grad():
        for layer in list(layers)[first:]:
            for name, parameter in layer.named_parameters():
                # output projections of attention and feed-forward blocks write into the residual stream
                if name.endswith(("o.weight", "wo.weight", "out_proj.weight", "fc2.weight")):
                    parameter.mul_(factor)
    return model


def truncated_draft(model: PreTrainedModel, layers: int) -> PreTrainedModel:
    """A draft that shares ``model``'s encoder module and keeps its first ``layers`` decoder layers."""
    config = copy.deepcopy(model.config)
    if hasattr(config, "num_decoder_layers"):
        config.num_decoder_layers = layers
    else:
        config.decoder_layers = layers
    draft = type(model)(config).eval()
    missing = draft.load_state_dict(model.state_dict(), strict=False)
    if missing.missing_keys:
        raise RuntimeError(f"weights missing from the truncated draft: {missing.missing_keys}")
    draft.encoder = model.get_encoder()  # the same module: the speculator runs it once for both
    if hasattr(draft, "model"):
        draft.model.encoder = model.get_encoder()
    return draft


def build_toy_pair(size: str = "small", *, seed: int = 0) -> tuple[PreTrainedModel, PreTrainedModel]:
    """A benchmark pair: a random T5 v1.1-style big model and a shallow draft sharing its encoder."""
    shapes = {
        "small": {"d_model": 256, "layers": 6, "decoder_layers": 6, "draft_layers": 1, "vocab_size": 2048},
        "large": {"d_model": 512, "layers": 8, "decoder_layers": 8, "draft_layers": 1, "vocab_size": 8192},
    }
    if size not in shapes:
        raise ValueError(f"size must be one of {sorted(shapes)}, got {size!r}")
    shape = dict(shapes[size])
    draft_layers = shape.pop("draft_layers")
    big = build_toy_model("t5-v1_1", seed=seed, init_scale=3.0, eos_scale=2.0, **shape)
    damp_decoder_layers(big, draft_layers, 0.03)
    return big, truncated_draft(big, draft_layers)


# ----------------------------------------------------------------------------- Whisper

WHISPER_TOY_SPECIALS = (
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|fr|>",
    "<|de|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
)
WHISPER_TOY_TEXT_TOKENS = 256  # byte-level text tokens; the specials follow, then 1501 timestamp tokens


def build_toy_whisper(seed: int = 0, *, decoder_layers: int = 2, max_target_positions: int = 64):
    """A small random Whisper (80 mel bins, 30 s windows) whose greedy output depends on the audio and ends with
    EOS at different steps: weights rescaled, timestamp-token embeddings shrunk, the EOS embedding enlarged."""
    from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration

    text, specials = WHISPER_TOY_TEXT_TOKENS, len(WHISPER_TOY_SPECIALS)
    eos, start = text, text + 1
    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=text + specials + 1501,
        num_mel_bins=80,
        d_model=64,
        encoder_layers=2,
        decoder_layers=decoder_layers,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_target_positions=max_target_positions,
        pad_token_id=eos,
        bos_token_id=eos,
        eos_token_id=eos,
        decoder_start_token_id=start,
        suppress_tokens=None,
        begin_suppress_tokens=None,
    )
    model = WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 2 and "embed" not in name:
                parameter.mul_(3.0)
            if "encoder_attn.v_proj" in name or "encoder_attn.out_proj" in name:
                parameter.mul_(4.0)
        embeddings = model.model.decoder.embed_tokens.weight
        embeddings.normal_(0, 1.0)
        embeddings[text + specials :] *= 0.3
        embeddings[eos] *= 3.0
        model.model.decoder.embed_positions.weight.normal_(0, 3.0)
        model.model.encoder.embed_positions.weight.normal_(0, 0.5)
    ids = {token: text + index for index, token in enumerate(WHISPER_TOY_SPECIALS)}
    model.generation_config = GenerationConfig(
        decoder_start_token_id=start,
        eos_token_id=eos,
        pad_token_id=eos,
        bos_token_id=eos,
        no_timestamps_token_id=ids["<|notimestamps|>"],
        prev_sot_token_id=ids["<|startofprev|>"],
        lang_to_id={token: ids[token] for token in ("<|en|>", "<|fr|>", "<|de|>")},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        is_multilingual=True,
        max_length=max_target_positions,
        suppress_tokens=[5, 6, 7],
        begin_suppress_tokens=[32, eos],
        max_initial_timestamp_index=50,
        alignment_heads=[[decoder_layers - 1, 0], [decoder_layers - 1, 2]],
    )
    return model


def whisper_draft_sharing_encoder(big, decoder_layers: int = 1):
    """A draft made of the big Whisper's first decoder layers, whose encoder IS the big model's encoder."""
    import copy

    draft = copy.deepcopy(big)
    draft.model.decoder.layers = draft.model.decoder.layers[:decoder_layers]
    draft.config.decoder_layers = decoder_layers
    draft.model.encoder = big.model.encoder
    return draft


def toy_features(rows: int, frames: int = 3000, *, seed: int = 0) -> torch.Tensor:
    """Log-mel-like features whose rows differ (a per-row spectral shape plus noise)."""
    generator = torch.Generator().manual_seed(seed)
    shape = 2 * torch.randn(rows, 80, 1, generator=generator)
    return shape + 0.3 * torch.randn(rows, 80, frames, generator=generator)


def whisper_causal_assistant(big, decoder_layers: int = 1):
    """A decoder-only ``WhisperForCausalLM`` draft (distil-whisper's assistant layout) from the big model's first
    decoder layers; it reads the big model's encoder output."""
    import copy

    from transformers import WhisperForCausalLM

    config = copy.deepcopy(big.config)
    config.decoder_layers = decoder_layers
    assistant = WhisperForCausalLM(config).eval()
    state = {
        k: v
        for k, v in big.model.decoder.state_dict().items()
        if not k.startswith("layers.") or int(k.split(".")[1]) < decoder_layers
    }
    assistant.model.decoder.load_state_dict(state)
    assistant.proj_out.weight = assistant.model.decoder.embed_tokens.weight
    assistant.generation_config = copy.deepcopy(big.generation_config)
    return assistant
