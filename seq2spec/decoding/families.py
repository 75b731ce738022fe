"""What seq2spec needs to know about an encoder-decoder model, read from the model itself.

Any transformers model whose configuration says ``is_encoder_decoder`` and whose greedy ``generate`` runs on an
``EncoderDecoderCache`` is decoded by one generic path: the decoder is fed several tokens per row and call, each row
told its own positions (``positions.py``). What differs between families is read from the model, not from a list of
names: where positions come from, how many the decoder has, what the encoder reads. ``probe.py`` then checks the
layout against an unpadded forward once per model before anything is decoded. A family whose decoder cannot verify
several tokens in one forward is refused here, by name, with the reason (``REFUSED``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from torch import nn
from transformers import PreTrainedModel

from seq2spec.decoding.positions import PositionKind, decoder_config, position_kind, position_module

# how generate numbers decoder tokens: by cache slot (a left-padded prompt's padding counted), or from the decoder
# attention mask (Whisper's generate passes decoder_position_ids counted over real tokens)
Numbering = Literal["slot", "mask"]

REFUSED: dict[str, str] = {
    "prophetnet": (
        "ProphetNet's decoder predicts future tokens in parallel n-gram streams and accepts one new token per cached "
        "forward, so it cannot verify several candidates in one forward; use the model's own generate"
    ),
    "xlm-prophetnet": (
        "XLM-ProphetNet's decoder predicts future tokens in parallel n-gram streams and accepts one new token per "
        "cached forward, so it cannot verify several candidates in one forward; use the model's own generate"
    ),
    "fsmt": (
        "FSMT's decoder applies no causal mask when it reads its cache, so in one forward over several new tokens each "
        "would see the ones after it: it cannot verify candidates; use the model's own generate"
    ),
    "dia": (
        "Dia generates frames of audio codebook tokens (one per channel, with a delay pattern and classifier-free "
        "guidance), not one token per position; use the model's own generate"
    ),
}


@dataclass(frozen=True)
class Family:
    """Facts about one model that decoding depends on."""

    model_type: str
    positions: PositionKind  # how the decoder embeds positions (positions.py)
    max_source_length: int | None  # the encoder's position table, where it has one
    max_target_length: int | None  # no decoder position past this is ever fed (None: no limit)
    # what the encoder reads (Whisper: "input_features", Moonshine: "input_values"); token-id encoders given embeddings
    # (Pop2Piano's generate conditions its features into them) read "inputs_embeds"
    encoder_input_name: str = "input_ids"
    # a decoder-only assistant (WhisperForCausalLM, as distil-whisper publishes them): it reads the big model's
    # encoder output and has no encoder of its own
    decoder_only: bool = False
    numbering: Numbering = "slot"
    # the most tokens one row may be fed per forward (Switch Transformers' routers drop a row's tokens past their
    # expert capacity, counted within each forward)
    max_fed_tokens: int | None = None

    @property
    def learned_positions(self) -> bool:
        """Whether the decoder embeds absolute positions (each row must be told its own)."""
        return self.positions != "relative"


def family_of(model: PreTrainedModel, role: str = "model") -> Family:
    """Check that ``model`` is an encoder-decoder seq2spec can decode exactly, and describe it."""
    config = getattr(model, "config", None)
    if config is not None and type(model).__name__ == "WhisperForCausalLM":
        return Family(
            "whisper", "table", None, config.max_target_positions, "input_features", decoder_only=True, numbering="mask"
        )
    if config is None or not hasattr(model, "get_encoder"):
        raise TypeError(f"{role} must be a transformers encoder-decoder model, got {type(model).__name__}")
    if not getattr(config, "is_encoder_decoder", False):
        raise TypeError(
            f"{role} ({type(model).__name__}, model_type={config.model_type!r}) is not an encoder-decoder model; "
            "Seq2SeqSpeculator needs an encoder-decoder such as T5, BART, Marian, NLLB or Whisper"
        )
    model_type = config.model_type
    if model_type in REFUSED:
        reason = REFUSED[model_type]
        raise NotImplementedError(f"{role} ({type(model).__name__}) cannot be decoded speculatively: {reason}")
    routing = _batch_dependent_routing(model)
    if routing:
        raise NotImplementedError(f"{role} ({type(model).__name__}) cannot be decoded exactly: {routing}")
    kind, module = position_kind(model)
    if kind is None:
        raise NotImplementedError(
            f"{role} ({type(model).__name__}, model_type={model_type!r}): its decoder embeds positions with "
            f"{type(module).__name__}, which seq2spec cannot number per row; use the model's own generate"
        )
    return Family(
        model_type,
        kind,
        _encoder_positions(model),
        _decoder_positions(model, kind, module),
        model.get_encoder().main_input_name,
        numbering="mask" if model_type == "whisper" else "slot",
        max_fed_tokens=_expert_capacity(model),
    )


def _table_rows(module: nn.Module | None) -> int | None:
    if isinstance(module, nn.Embedding) and module.padding_idx is None:
        return module.num_embeddings - int(getattr(module, "offset", 0))
    return None


def _encoder_positions(model: PreTrainedModel) -> int | None:
    """The encoder's learned or fixed position table's size (None: it has none, or one that grows)."""
    found = position_module(model.get_encoder())
    return _table_rows(found[1]) if found else None


def _decoder_positions(model: PreTrainedModel, kind: PositionKind, module: nn.Module | None) -> int | None:
    """No decoder position at or past this is fed: a position table's size; for positions passed as ids, the
    configuration's limit (a rotary decoder has none of its own, and the loop then only stops proposing past it)."""
    if kind == "table":
        return _table_rows(module)
    if kind == "ids":
        config = decoder_config(model)
        for name in ("max_target_positions", "max_position_embeddings"):
            limit = getattr(config, name, None)
            if isinstance(limit, int) and limit > 0:
                return limit
    return None


def _batch_dependent_routing(model: PreTrainedModel) -> str | None:
    """Why an NLLB-MoE's routing would depend on the other tokens of a forward (None: it does not)."""
    config = model.config
    if config.model_type != "nllb-moe":
        return None
    if getattr(config, "second_expert_policy", "all") != "all":
        return (
            f"second_expert_policy={config.second_expert_policy!r} routes tokens at random even in evaluation; "
            "set it to 'all'"
        )
    fraction = getattr(config, "moe_eval_capacity_token_fraction", 1.0)
    if not fraction >= 1.0:
        return (
            f"moe_eval_capacity_token_fraction={fraction} lets an expert take fewer tokens than a forward holds, so a "
            "token's route depends on the other tokens of the forward (generate's own output then depends on the "
            "batch); set it to 1.0"
        )
    return None


def _expert_capacity(model: PreTrainedModel) -> int | None:
    """Switch Transformers routes at most ``expert_capacity`` of one row's tokens per forward to each expert and drops
    the rest, so a forward of more tokens than that could route differently from generate's one-token steps."""
    capacity = getattr(model.config, "expert_capacity", None)
    if model.config.model_type == "switch_transformers" and isinstance(capacity, int) and capacity > 0:
        return capacity
    return None
