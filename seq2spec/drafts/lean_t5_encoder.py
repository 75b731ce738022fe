"""A T5/MT5 draft's encoder written with plain tensor operations.

A draft with its own encoder (the shipped speller's 2M draft) runs it once per batch, and through transformers that
costs far more than its arithmetic: at batch size 1 on a CPU about as long as three of the draft's decoder steps,
spent in the layers around each product (mask builders, output records, a module call per linear layer).
``LeanT5Encoder`` computes the same encoder from the same weights with a few fused operations per layer: query, key
and value in one product, the gated feed-forward's two input products in one, one RMS-norm call per norm, the
position bias built once per source length.

Its output agrees with transformers' to rounding, not bit for bit, so seq2spec runs it for drafts only: the draft's
encoder output only shapes its proposals, and the big model, through its own encoder, decides every output token.
``LeanT5Encoder.checked`` compares the two on a probe with padded rows and returns None when they disagree, in which
case the draft keeps transformers' encoder; so does a draft whose encoder has forward hooks, which only its own
modules would run.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel

from seq2spec.drafts.lean_t5 import LEAN_FAMILIES, checked_lean_t5, clamp_float16, fused_activation, t5_norm


@dataclass(frozen=True)
class _EncoderLayer:
    self_norm: torch.Tensor
    qkv: torch.Tensor  # [3 * inner, d_model]: q, k and v stacked
    out: torch.Tensor
    ff_norm: torch.Tensor
    ff_in: torch.Tensor  # [2 * d_ff, d_model] (gated: wi_0 then wi_1) or [d_ff, d_model]
    ff_out: torch.Tensor


def has_hooks(module: nn.Module) -> bool:
    """Whether ``module`` or any module inside it has forward hooks (which a lean mirror would not run)."""
    return any(inner._forward_hooks or inner._forward_pre_hooks for inner in module.modules())


def _weight(layer: nn.Module) -> torch.Tensor:
    if type(layer) is not nn.Linear or layer.bias is not None:
        raise ValueError(f"the lean encoder mirrors bias-free nn.Linear layers, not {type(layer).__name__}")
    return layer.weight


class LeanT5Encoder:
    """``model.get_encoder()(input_ids, attention_mask).last_hidden_state`` of a T5 or MT5 model in eval mode, to
    rounding; see the module docstring. Build it with ``checked``."""

    def __init__(self, model: PreTrainedModel) -> None:
        config = model.config
        if config.model_type not in LEAN_FAMILIES:
            raise ValueError(f"LeanT5Encoder needs a T5 or MT5 model, got model_type={config.model_type!r}")
        encoder = model.get_encoder()
        if has_hooks(encoder):
            raise ValueError("the draft's encoder has hooks: they run only through transformers' modules")
        self.heads, self.head_dim = config.num_heads, config.d_kv
        self.inner = self.heads * self.head_dim
        self.eps = config.layer_norm_epsilon
        self.gated = bool(config.is_gated_act)
        self.d_ff = config.d_ff
        self.embedding = encoder.embed_tokens.weight
        self.final_norm = encoder.final_layer_norm.weight
        attention = encoder.block[0].layer[0].SelfAttention
        self.bias_embedding = attention.relative_attention_bias.weight  # [buckets, heads]
        self.bucket = attention._relative_position_bucket
        self.buckets, self.max_distance = config.relative_attention_num_buckets, config.relative_attention_max_distance
        self.act, self.float32_act = fused_activation(encoder.block[0].layer[-1].DenseReluDense.act)
        self.layers = [self._layer(block) for block in encoder.block]
        self._biases: dict[tuple[int, torch.dtype], torch.Tensor] = {}

    def _layer(self, block: nn.Module) -> _EncoderLayer:
        own, ff = block.layer[0], block.layer[1]
        attention, dense = own.SelfAttention, ff.DenseReluDense
        if self.gated:
            ff_in = torch.cat([_weight(dense.wi_0), _weight(dense.wi_1)])
        else:
            ff_in = _weight(dense.wi)
        return _EncoderLayer(
            self_norm=own.layer_norm.weight,
            qkv=torch.cat([_weight(attention.q), _weight(attention.k), _weight(attention.v)]),
            out=_weight(attention.o),
            ff_norm=ff.layer_norm.weight,
            ff_in=ff_in,
            ff_out=_weight(dense.wo),
        )

    @classmethod
    def checked(cls, model: PreTrainedModel, tolerance: float | None = None) -> LeanT5Encoder | None:
        """A lean encoder for ``model`` if it reproduces transformers' encoder output on a probe within
        ``tolerance`` (by default ``PROBE_TOLERANCE`` of the model's dtype), else None."""
        return checked_lean_t5(cls, model, tolerance, int8=False)

    @torch.no_grad()
    def probe_difference(self, model: PreTrainedModel) -> float:
        """Largest gap between this encoder's and transformers' outputs on a two-row probe whose second row is
        padded, over the real positions, relative to the outputs' mean size."""
        device = self.embedding.device
        generator = torch.Generator().manual_seed(0)
        ids = torch.randint(2, self.embedding.shape[0], (2, 9), generator=generator).to(device)
        mask = torch.ones(2, 9, dtype=torch.long, device=device)
        mask[1, 6:] = 0
        reference = model.get_encoder()(input_ids=ids, attention_mask=mask, return_dict=True).last_hidden_state
        mine = self(ids, mask)
        real = mask.bool()[..., None]
        gap = (reference.float() - mine.float()).abs().masked_fill(~real, 0).max()
        return float(gap) / max(float(reference.float().abs().mean()), 1e-6)

    def _bias(self, length: int, dtype: torch.dtype) -> torch.Tensor:
        """The bidirectional relative position bias ``[1, heads, length, length]``, kept per length."""
        key = (length, dtype)
        bias = self._biases.get(key)
        if bias is None:
            positions = torch.arange(length, device=self.bias_embedding.device)
            buckets = self.bucket(
                positions[None, :] - positions[:, None],
                bidirectional=True,
                num_buckets=self.buckets,
                max_distance=self.max_distance,
            )
            bias = self.bias_embedding[buckets].permute(2, 0, 1).unsqueeze(0).to(dtype).contiguous()
            if len(self._biases) > 256:
                self._biases.clear()
            self._biases[key] = bias
        return bias

    def _act(self, hidden: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return self.float32_act(hidden) if dtype == torch.float32 else self.act(hidden)

    def _norm(self, hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return t5_norm(hidden, weight, self.eps)

    @torch.no_grad()
    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The encoder output ``[rows, length, d_model]`` for ``input_ids`` (padded where ``attention_mask`` is 0)."""
        rows, length = input_ids.shape
        hidden = F.embedding(input_ids, self.embedding)
        dtype = hidden.dtype
        mask = self._bias(length, dtype)
        if attention_mask is not None:
            mask = mask.masked_fill((attention_mask == 0)[:, None, None, :], torch.finfo(dtype).min)
        for layer in self.layers:
            normed = self._norm(hidden, layer.self_norm)
            query, key, value = (
                F.linear(normed, layer.qkv).view(rows, length, 3 * self.heads, self.head_dim).transpose(1, 2)
            ).split(self.heads, dim=1)
            attended = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=1.0)
            attended = attended.transpose(1, 2).reshape(rows, length, self.inner)
            hidden = clamp_float16(hidden + F.linear(attended, layer.out))
            inner = F.linear(self._norm(hidden, layer.ff_norm), layer.ff_in)
            if self.gated:
                gate, linear = inner.split(self.d_ff, dim=-1)
                inner = self._act(gate, dtype) * linear
            else:
                inner = self._act(inner, dtype)
            hidden = clamp_float16(hidden + F.linear(inner.to(layer.ff_out.dtype), layer.ff_out))
        return self._norm(hidden, self.final_norm)
