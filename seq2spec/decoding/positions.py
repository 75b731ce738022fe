"""Each row's own decoder positions, for every way an encoder-decoder family embeds them.

The speculative loop keeps every row's decoder self-attention cache right-aligned: a row that kept fewer tokens has
more unused slots on its left (``cache.py``). ``generate`` keeps every row at the same length and numbers a token by
its slot. A decoder that embeds absolute positions must therefore be told each row's own numbers: row ``r``'s next
token is number ``start[r]``, its slot in ``generate``'s cache. What a decoder holds says how it embeds them:

- ``relative``: no absolute position module (T5, MT5, UMT5, LongT5, Switch Transformers): attention reads distances
  between slots, which the layout keeps. Nothing to do.
- ``ids``: the forward takes ``decoder_position_ids`` (rotary families such as T5Gemma and Moonshine, Canary, Cohere
  ASR, Whisper), or is a composite ``EncoderDecoderModel`` whose decoder takes ``position_ids``: they are passed,
  numbered fairseq's way where the decoder's embeddings would number them so (RoBERTa).
- ``table``: an ``nn.Embedding`` indexed by position plus its ``offset`` (learned: BART, mBART, Blenderbot, LED,
  MVP, PLBart, BigBird-Pegasus; fixed sinusoids: Marian, Pegasus): the table's rows for each row's numbers.
- ``fairseq``: sinusoids numbered from the padding index, a padding token taking the padding index's row (M2M100,
  NLLB, Speech2Text, SeamlessM4T, SpeechT5): each token's row as ``generate``'s one-token steps compute it.
- ``computed``: sinusoids computed from the numbers (PEGASUS-X): the module's own computation, on each row's numbers.

For the duration of one decoder call the module's ``forward`` is replaced (``installed``), so its own slot-based
computation never runs (it could index past its table where a row's slots outrun its positions). Whatever the kind,
``layout_check.py`` compares the layout with ``generate``'s own steps before a model is decoded.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel

PositionKind = Literal["relative", "ids", "table", "fairseq", "computed"]
COMPOSITE_TYPES = frozenset({"encoder-decoder", "speech-encoder-decoder"})
# attribute names under which decoders keep their absolute position module
_POSITION_MODULE_NAMES = ("embed_positions", "position_embeddings", "pos_emb", "embed_pos")


@dataclass(frozen=True)
class FedPositions:
    """The tokens of one decoder call and their numbers: row ``r``'s token ``j`` is number ``start[r] + j``.
    ``prompt_columns``: how many leading columns are the decoder prompt (the first call only; 0 afterwards);
    ``end``: no number reaches it (known on the host, so a table is sized without waiting for the device)."""

    tokens: torch.Tensor
    start: torch.Tensor
    prompt_columns: int = 0
    end: int = 0

    def numbers(self) -> torch.Tensor:
        """``[rows, len]``: each token's number (negative for a left-padded prompt's padding under Whisper's
        numbering)."""
        offsets = torch.arange(self.tokens.shape[1], device=self.start.device)
        return self.start[:, None] + offsets[None, :]


def _forward_parameters(module: nn.Module) -> set[str]:
    try:
        return set(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return set()


def _accepts_var_keywords(module: nn.Module) -> bool:
    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters)


def is_composite(model: PreTrainedModel) -> bool:
    """An ``EncoderDecoderModel`` or ``SpeechEncoderDecoderModel``: any encoder joined to any causal decoder."""
    return getattr(model.config, "model_type", None) in COMPOSITE_TYPES


def takes_position_ids(model: PreTrainedModel) -> bool:
    """Whether ``model(..., decoder_position_ids=...)`` sets the decoder's positions."""
    if "decoder_position_ids" in _forward_parameters(model):
        return True
    if is_composite(model) and _accepts_var_keywords(model):  # decoder_* keywords go to the decoder, unprefixed
        return "position_ids" in _forward_parameters(model.get_decoder())
    return False


def position_module(decoder: nn.Module) -> tuple[str, nn.Module] | None:
    """The decoder's absolute position module (name and module), None if it has none (rotary embeddings and
    relative attention biases are not such modules)."""
    for name, module in decoder.named_modules():
        if name.rsplit(".", 1)[-1] in _POSITION_MODULE_NAMES and "rotary" not in type(module).__name__.lower():
            return name, module
    return None


def position_kind(model: PreTrainedModel) -> tuple[PositionKind | None, nn.Module | None]:
    """How ``model``'s decoder embeds positions and the module that does (None for ``relative`` and ``ids``); kind
    None: a position module of a kind seq2spec does not know."""
    if takes_position_ids(model):
        return "ids", _fairseq_embeddings(model.get_decoder())
    found = position_module(model.get_decoder())
    if found is None:
        return "relative", None
    _, module = found
    fairseq = ("create_position_ids_from_input_ids", "make_weights")
    if all(callable(getattr(module, name, None)) for name in fairseq) and hasattr(module, "weights"):
        return "fairseq", module
    if isinstance(module, nn.Embedding) and module.padding_idx is None:
        return "table", module
    if not hasattr(module, "weight") and {"inputs_embeds", "position_ids"} <= _forward_parameters(module):
        return "computed", module
    return None, module


def _fairseq_embeddings(decoder: nn.Module) -> nn.Module | None:
    """A decoder's embeddings that number positions fairseq's way when given none (RoBERTa's, in a composite), whose
    ``padding_idx`` the numbers then need; None for decoders that number by slot."""
    for module in decoder.modules():
        if callable(getattr(module, "create_position_ids_from_input_ids", None)) and hasattr(module, "padding_idx"):
            return module
    return None


def decoder_config(model: PreTrainedModel) -> PreTrainedConfig:
    """The configuration that describes the decoder (a composite's or T5Gemma's ``decoder`` part, Canary's
    ``decoder_config``)."""
    config = model.config
    for name in ("decoder", "decoder_config"):
        part = getattr(config, name, None)
        if isinstance(part, PreTrainedConfig):
            return part
    return config


class DecoderPositions:
    """Tells one model's decoder each row's own position numbers for the duration of a call."""

    def __init__(self, model: PreTrainedModel, kind: PositionKind, module: nn.Module | None) -> None:
        self.model, self.kind, self.module = model, kind, module
        # a pad-aware (fairseq) numbering needs the padding token: the module's padding index
        self.padding_index = getattr(module, "padding_idx", None)

    @classmethod
    def of(cls, model: PreTrainedModel) -> DecoderPositions:
        kind, module = position_kind(model)
        if kind is None:
            raise NotImplementedError(
                f"{type(model).__name__}'s decoder embeds positions with {type(module).__name__}, which seq2spec "
                "cannot number per row"
            )
        return cls(model, kind, module)

    @property
    def every_call(self) -> bool:
        """Whether the numbers must be given even when no row is padded: fairseq numbers a block of tokens fed at
        once differently from the same tokens fed one at a time (a padding token among them)."""
        return self.kind == "fairseq" or (self.kind == "ids" and self.module is not None)

    def arguments(self, fed: FedPositions | None) -> dict[str, torch.Tensor]:
        """Keyword arguments of the model's forward that carry the positions (``ids`` kind only; numbered fairseq's
        way where the decoder's embeddings would number them so)."""
        if self.kind != "ids" or fed is None:
            return {}
        numbers = self._numbers(fed) if self.module is not None else fed.numbers().clamp(min=0)
        return {"decoder_position_ids": numbers}

    @contextmanager
    def installed(self, fed: FedPositions | None) -> Iterator[None]:
        """Within the block the decoder's position module gives each row's own positions (``fed`` None: the
        module's own computation is right for every row)."""
        if fed is None or self.module is None or self.kind in ("relative", "ids"):
            yield
            return
        compute = {"table": self._table, "fairseq": self._fairseq, "computed": self._computed}[self.kind]
        original = self.module.forward
        self.module.forward = lambda *args, **kwargs: compute(fed, original, *args, **kwargs)
        try:
            yield
        finally:
            del self.module.forward  # the class's own forward again

    def _table(self, fed: FedPositions, original, *args, **kwargs) -> torch.Tensor:
        module = self.module
        numbers = fed.numbers().clamp(min=0) + int(getattr(module, "offset", 0))
        return F.embedding(numbers.to(module.weight.device), module.weight)

    def _fairseq(self, fed: FedPositions, original, *args, **kwargs) -> torch.Tensor:
        """``generate`` feeds the prompt in one call and each later token alone; ``_numbers`` says what that gives."""
        module = self.module
        padding = self.padding_index
        if padding + 1 + fed.end > module.weights.shape[0]:  # extended as the module's own forward extends it
            rows = padding + 1 + fed.end + getattr(module, "offset", 0)
            module.make_weights(rows, module.weights.shape[1], padding)
        positions = self._numbers(fed)
        rows, length = fed.tokens.shape
        return module.weights.index_select(0, positions.reshape(-1)).view(rows, length, -1).detach()

    def _numbers(self, fed: FedPositions) -> torch.Tensor:
        """Fairseq's numbers: within one call, a token's count of real (non-padding) tokens up to it in that call,
        plus the cache's length, after the padding index; a padding token gets the padding index itself."""
        padding = self.padding_index
        real = (fed.tokens != padding).long()
        positions = (1 + fed.numbers()) * real + padding  # a token fed alone: the cache length before it is its slot
        if fed.prompt_columns:  # the prompt: one call, counted from the cache length before it
            prompt = real[:, : fed.prompt_columns]
            first = (prompt.cumsum(dim=1) + fed.start[:, None]) * prompt + padding
            positions = torch.cat([first, positions[:, fed.prompt_columns :]], dim=1)
        return positions

    def _computed(self, fed: FedPositions, original, *args, **kwargs) -> torch.Tensor:
        """The module's own computation over all rows' numbers laid end to end (each output row depends on its
        number alone), then split back into rows."""
        bound = inspect.signature(original).bind(*args, **kwargs)
        inputs_embeds = bound.arguments["inputs_embeds"]
        rows, length = fed.tokens.shape
        flat = inputs_embeds[:1].new_empty((1, rows * length, inputs_embeds.shape[-1]))
        numbers = fed.numbers().clamp(min=0).reshape(-1, 1)
        return original(flat, 0, position_ids=numbers)[0].view(rows, length, -1)
