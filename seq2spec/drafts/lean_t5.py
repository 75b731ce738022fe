"""A T5/MT5 decoder step written with plain tensor operations, for draft models.

A small draft's forward through transformers costs far more than its arithmetic: each of its few, narrow layers goes
through a stack of modules, output records and mask builders (measured on the shipped 2-layer draft on a CPU: about
as long as a third of the 17M big model's forward). ``LeanT5Decoder`` computes the same decoder step from the same
weights with a handful of fused operations per layer: query, key and value projections in one matrix product, the
gated feed-forward's two input projections in one, the relative position bias looked up from a table by distance.

It reads and writes the caller's ``EncoderDecoderCache`` exactly as transformers does (the same layers, shapes and
``is_updated`` flags), so the cache surgery of ``cache.py`` works unchanged. Its logits agree with transformers' to
rounding, not bit for bit, so seq2spec runs it for drafts only: a draft's logits choose candidates, and the big
model, always run through transformers, decides every output token. ``LeanT5Decoder.checked`` compares the two on a
probe input and returns None when they disagree (another transformers version, an unusual checkpoint), in which case
the draft keeps using transformers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel

from seq2spec.decoding.cache import cache_argument
from seq2spec.drafts.dense import Dense
from seq2spec.drafts.lean import Part, checked_lean, probe_tolerance

LEAN_FAMILIES = frozenset({"t5", "mt5"})
CAUSAL_TABLE_SLOTS = 512  # decoder slots covered by the step's precomputed position-bias table (heads x 512 x 512)


def checked_lean_t5(
    build: Callable[..., Part], model: PreTrainedModel, tolerance: float | None, *, int8: bool
) -> Part | None:
    """``checked_lean`` for a T5/MT5 model in eval mode (None for anything else), ``tolerance`` defaulting to
    ``PROBE_TOLERANCE`` of the model's dtype."""
    if model.config.model_type not in LEAN_FAMILIES or model.training:
        return None
    return checked_lean(build, model, probe_tolerance(model.dtype) if tolerance is None else tolerance, int8=int8)


def fused_activation(act: nn.Module) -> tuple[nn.Module, Callable[[torch.Tensor], torch.Tensor]]:
    """``act``, and the same function for float32 inputs as one operation where transformers spells it as several
    (the tanh GELU of T5 v1.1's gated-gelu). Half-precision inputs keep ``act``: the fused kernel rounds once where
    the composed one rounds after every step."""
    if type(act).__name__ in ("NewGELUActivation", "GELUTanh", "PytorchGELUTanh", "GELUPytorchTanh"):
        return act, partial(F.gelu, approximate="tanh")
    return act, act


def t5_norm(hidden: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """T5's RMS norm in one fused operation (its statistics in float32 for half-precision inputs too)."""
    if hidden.dtype == torch.float32:
        return F.rms_norm(hidden, weight.shape, weight.float(), eps).to(weight.dtype)
    return weight * F.rms_norm(hidden.float(), weight.shape, None, eps).to(weight.dtype)


def clamp_float16(hidden: torch.Tensor) -> torch.Tensor:
    """As transformers' T5 does in float16: pull infinities back to the largest finite values (no host sync)."""
    if hidden.dtype != torch.float16:
        return hidden
    largest = torch.finfo(torch.float16).max
    limit = torch.where(torch.isinf(hidden).any(), largest - 1000, largest)
    return torch.clamp(hidden, -limit, limit)


@dataclass(frozen=True)
class _Layer:
    self_norm: torch.Tensor
    qkv: Dense  # [3 * inner, d_model]: q, k and v stacked
    self_out: Dense
    cross_norm: torch.Tensor
    cross_q: Dense
    cross_kv: Dense  # [2 * inner, d_model]
    cross_out: Dense
    ff_norm: torch.Tensor
    ff_in: Dense  # [2 * d_ff, d_model] (gated: wi_0 then wi_1) or [d_ff, d_model]
    ff_out: Dense


class LeanT5Decoder:
    """``decoder step + LM head`` of a T5 or MT5 model in eval mode; see the module docstring. With ``int8`` (CPU
    only) its linear layers run in int8 (``seq2spec.drafts.dense``)."""

    def __init__(self, model: PreTrainedModel, *, int8: bool = False) -> None:
        config = model.config
        if config.model_type not in LEAN_FAMILIES:
            raise ValueError(f"LeanT5Decoder needs a T5 or MT5 model, got model_type={config.model_type!r}")
        decoder = model.get_decoder()
        self.int8 = int8
        self.heads, self.head_dim = config.num_heads, config.d_kv
        self.inner = self.heads * self.head_dim
        self.eps = config.layer_norm_epsilon
        self.gated = bool(config.is_gated_act)
        self.d_ff = config.d_ff
        self.act, self.float32_act = fused_activation(decoder.block[0].layer[-1].DenseReluDense.act)
        self.embedding = decoder.embed_tokens.weight
        self.final_norm = decoder.final_layer_norm.weight
        self.lm_head = Dense(model.get_output_embeddings().weight, int8=int8)
        # T5 (original and v1.1 checkpoints saved with tied embeddings) scales the decoder output before its head
        scaled = getattr(config, "scale_decoder_outputs", config.model_type == "t5")
        self.output_scale = config.d_model**-0.5 if scaled else None
        attention = decoder.block[0].layer[0].SelfAttention
        self.bias_embedding = attention.relative_attention_bias.weight  # [buckets, heads]
        self.bucket = attention._relative_position_bucket
        self.buckets, self.max_distance = config.relative_attention_num_buckets, config.relative_attention_max_distance
        self.bias_table = torch.empty(0, 0, 0, 0)  # [1, heads, query slot, key slot], see _causal_bias
        self.layers = [self._layer(block) for block in decoder.block]
        self._cross_masks: tuple[torch.Tensor | None, torch.dtype | None, torch.Tensor | None] = (None, None, None)

    def _layer(self, block) -> _Layer:
        own, cross, ff = block.layer[0], block.layer[1], block.layer[2]
        dense = ff.DenseReluDense
        ff_in = torch.cat([dense.wi_0.weight, dense.wi_1.weight]) if self.gated else dense.wi.weight
        own_attention, cross_attention = own.SelfAttention, cross.EncDecAttention
        return _Layer(
            self_norm=own.layer_norm.weight,
            qkv=self._dense(torch.cat([own_attention.q.weight, own_attention.k.weight, own_attention.v.weight])),
            self_out=self._dense(own_attention.o.weight),
            cross_norm=cross.layer_norm.weight,
            cross_q=self._dense(cross_attention.q.weight),
            cross_kv=self._dense(torch.cat([cross_attention.k.weight, cross_attention.v.weight])),
            cross_out=self._dense(cross_attention.o.weight),
            ff_norm=ff.layer_norm.weight,
            ff_in=self._dense(ff_in),
            ff_out=self._dense(dense.wo.weight),
        )

    def _dense(self, weight: torch.Tensor) -> Dense:
        return Dense(weight, int8=self.int8)

    @classmethod
    def checked(
        cls, model: PreTrainedModel, tolerance: float | None = None, *, int8: bool = False
    ) -> LeanT5Decoder | None:
        """A lean decoder for ``model`` if its float version reproduces transformers' logits on a probe input
        (within ``tolerance``, by default ``PROBE_TOLERANCE`` of the model's dtype), else None; with ``int8`` the
        returned step runs its linear layers in int8."""
        return checked_lean_t5(cls, model, tolerance, int8=int8)

    @torch.no_grad()
    def probe_difference(self, model: PreTrainedModel) -> float:
        """Largest gap between this step's and transformers' log-probabilities over a few cached steps of a
        two-row probe with encoder and decoder padding, relative to the log-probabilities' scale."""
        device = self.embedding.device
        generator = torch.Generator().manual_seed(0)
        vocab = self.embedding.shape[0]
        # a stand-in encoder output (the decoders are compared, not the encoder), its row 1 padded after 5 of 7
        encoded = torch.randn(2, 7, self.embedding.shape[1], generator=generator).to(device, self.embedding.dtype)
        source_mask = torch.ones(2, 7, dtype=torch.long, device=device)
        source_mask[1, 5:] = 0
        steps = torch.randint(2, vocab, (2, 6), generator=generator).to(device)
        theirs = EncoderDecoderCache(DynamicCache(), DynamicCache())
        ours = EncoderDecoderCache(DynamicCache(), DynamicCache())
        pad = torch.tensor([0, 2], device=device)  # row 1 starts with two padded slots
        worst = 0.0
        for start, stop in ((0, 3), (3, 4), (4, 6)):
            tokens = steps[:, start:stop]
            slots = torch.arange(stop, device=device)[None, :] >= pad[:, None]
            reference = model(
                encoder_outputs=(encoded,),
                attention_mask=source_mask,
                decoder_input_ids=tokens,
                decoder_attention_mask=slots.long(),
                **cache_argument(model, theirs),
                use_cache=True,
            ).logits.float()
            mine = self(tokens, ours, encoded, source_mask, pad)
            # compare where both models see at least one real token (row 1's first two queries see none)
            keep = (torch.arange(start, stop, device=device)[None, :] >= pad[:, None])[..., None]
            gap = (reference.log_softmax(-1) - mine.log_softmax(-1)).abs().masked_fill(~keep, 0).max()
            worst = max(worst, float(gap) / max(1.0, float(reference.log_softmax(-1).abs().mean())))
        return worst

    def _causal_bias(self, past: int, length: int, dtype: torch.dtype) -> torch.Tensor:
        """Relative position bias with the causal mask folded in, ``[1, heads, length, past + length]`` for queries at
        slots ``past, ...``: a view of a table built once for all slots up to the largest seen (computed per call
        beyond ``CAUSAL_TABLE_SLOTS``, where the table's size would grow with the square of the length)."""
        total = past + length
        if total > CAUSAL_TABLE_SLOTS:
            return self._bias_block(past, total, dtype)
        table = self.bias_table
        if table.shape[-1] < total or table.dtype != dtype:
            size = min(max(total, 2 * table.shape[-1] if table.dtype == dtype else 0, 64), CAUSAL_TABLE_SLOTS)
            self.bias_table = self._bias_block(0, size, dtype).contiguous()
        return self.bias_table[:, :, past:total, :total]

    def _bias_block(self, first: int, total: int, dtype: torch.dtype) -> torch.Tensor:
        """``[1, heads, total - first, total]``: the bias of query slots ``first, ...`` over key slots ``0, ...``,
        the lowest value at future keys."""
        device = self.bias_embedding.device
        distance = torch.arange(first, total, device=device)[:, None] - torch.arange(total, device=device)[None, :]
        buckets = self.bucket(
            -distance.clamp(min=0), bidirectional=False, num_buckets=self.buckets, max_distance=self.max_distance
        )
        bias = self.bias_embedding[buckets].permute(2, 0, 1).to(dtype)  # [heads, query slot, key slot]
        return bias.masked_fill(distance < 0, torch.finfo(dtype).min).unsqueeze(0)

    def _act(self, hidden: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return self.float32_act(hidden) if dtype == torch.float32 else self.act(hidden)

    def _norm(self, hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return t5_norm(hidden, weight, self.eps)

    def _cross_mask(self, encoder_attention_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
        """The additive cross-attention mask ``[rows, 1, 1, source]``, built once per encoder mask."""
        if encoder_attention_mask is None:
            return None
        mask, cached_dtype, additive = self._cross_masks
        if mask is not encoder_attention_mask or cached_dtype != dtype:
            additive = torch.zeros(encoder_attention_mask.shape, dtype=dtype, device=encoder_attention_mask.device)
            additive = additive.masked_fill(encoder_attention_mask == 0, torch.finfo(dtype).min)[:, None, None]
            self._cross_masks = (encoder_attention_mask, dtype, additive)
        return additive

    def _split(self, states: torch.Tensor) -> torch.Tensor:
        rows, length, _ = states.shape
        return states.view(rows, length, self.heads, self.head_dim).transpose(1, 2)

    @staticmethod
    def _merge(attended: torch.Tensor) -> torch.Tensor:
        rows, _, length, _ = attended.shape
        return attended.transpose(1, 2).reshape(rows, length, -1)

    @torch.no_grad()
    def __call__(
        self,
        tokens: torch.Tensor,
        cache: EncoderDecoderCache,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        pad: torch.Tensor | None,
    ) -> torch.Tensor:
        """Float32 logits ``[rows, len, vocab]`` for ``tokens`` appended to the cache; row ``r``'s first ``pad[r]``
        cache slots are padding (None: no row has any)."""
        rows, length = tokens.shape
        past = cache.self_attention_cache.get_seq_length()
        total = past + length
        hidden = F.embedding(tokens, self.embedding)
        dtype = hidden.dtype
        self_mask = self._causal_bias(past, length, dtype)
        if pad is not None:
            padding = torch.arange(total, device=tokens.device)[None, :] < pad.to(tokens.device)[:, None]
            self_mask = self_mask.masked_fill(padding[:, None, None], torch.finfo(dtype).min)
        cross_mask = self._cross_mask(encoder_attention_mask, dtype)
        for index, layer in enumerate(self.layers):
            normed = self._norm(hidden, layer.self_norm)
            query, key, value = layer.qkv(normed).to(dtype).split(self.inner, dim=-1)
            key, value = cache.self_attention_cache.update(self._split(key), self._split(value), index)
            attended = F.scaled_dot_product_attention(self._split(query), key, value, attn_mask=self_mask, scale=1.0)
            hidden = clamp_float16(hidden + layer.self_out(self._merge(attended)).to(dtype))

            normed = self._norm(hidden, layer.cross_norm)
            if cache.is_updated.get(index):
                cross = cache.cross_attention_cache.layers[index]
                key, value = cross.keys, cross.values
            else:
                key, value = layer.cross_kv(encoder_hidden_states).to(dtype).split(self.inner, dim=-1)
                key, value = cache.cross_attention_cache.update(self._split(key), self._split(value), index)
                cache.is_updated[index] = True
            query = self._split(layer.cross_q(normed).to(dtype))
            attended = F.scaled_dot_product_attention(query, key, value, attn_mask=cross_mask, scale=1.0)
            hidden = clamp_float16(hidden + layer.cross_out(self._merge(attended)).to(dtype))

            normed = self._norm(hidden, layer.ff_norm)
            inner = layer.ff_in(normed).to(dtype)
            if self.gated:
                gate, linear = inner.split(self.d_ff, dim=-1)
                inner = self._act(gate, dtype) * linear
            else:
                inner = self._act(inner, dtype)
            hidden = clamp_float16(hidden + layer.ff_out(inner.to(dtype)).to(dtype))
        hidden = self._norm(hidden, self.final_norm)
        if self.output_scale is not None:
            hidden = hidden * self.output_scale
        return self.lm_head(hidden).float()
