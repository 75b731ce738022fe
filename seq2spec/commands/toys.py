"""Small, randomly initialised encoder-decoders whose greedy outputs are varied: the ``seq2spec demo`` pair, and
models to try the library on without downloading any.

A freshly initialised T5 tends to repeat one token (often padding) forever, which would make any comparison with
greedy decoding vacuous. These builders widen the weight initialisation so that outputs depend on the input, silence
the padding logit, and strengthen the end-of-sequence logit so rows stop at different steps.
"""

from __future__ import annotations

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

from seq2spec.drafts.own_layers import layer_draft

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
    """A draft of ``model``'s first ``layers`` decoder layers that shares its encoder module and the rest."""
    return layer_draft(model, tuple(range(layers)))


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
