"""The big T5's decoder forward without transformers' per-call machinery, used only where it is bit-exact.

A verification forward of the shipped 17M speller on a CPU spends about a third of its time outside arithmetic, in
the layers around it: output records, keyword deprecation wrappers, attention masks rebuilt for every layer, the
relative position bias recomputed per call, a module call per linear layer. ``ExactT5Forward`` runs the same
operations on the same tensors in the same order (the same linear products, the same ``scaled_dot_product_attention``
calls with the same additive masks, the same norms and the same cache updates) and leaves out the rest, so its
logits are the model's own bit for bit.

seq2spec does not take that on trust. ``ExactT5Forward.checked`` runs a probe through both (rows with and without
padding in the cache and in the encoder output, one and several tokens per forward) and returns the fast forward only
if every logit and every cache entry is equal (``torch.equal``); otherwise, and for anything outside what it mirrors
(an attention implementation other than sdpa or seq2spec's float64 decoder attention of the int8 mode, linear layers
other than ``nn.Linear`` and seq2spec's ``Int8Linear``, dropout, hooks), the big model keeps transformers' forward.
The check runs again after any change of the weights, device or dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from seq2spec.decoding.cache import cache_argument
from seq2spec.decoding.fast.checked import BIT_EQUAL, check
from seq2spec.decoding.fast.mirror import MIRRORED_LINEARS, caches_equal, linear_forward, refuse_hooks_and_other_linears
from seq2spec.int8.attention import NAME as FLOAT64_ATTENTION
from seq2spec.int8.attention import float64_decoder_attention

EXACT_FAMILIES = frozenset({"t5", "mt5"})


@dataclass(frozen=True)
class _Block:
    self_attention: nn.Module
    cross_attention: nn.Module
    self_norm: nn.Module
    q: nn.Linear
    k: nn.Linear
    v: nn.Linear
    o: nn.Linear
    cross_norm: nn.Module
    cross_q: nn.Linear
    cross_k: nn.Linear
    cross_v: nn.Linear
    cross_o: nn.Linear
    ff_norm: nn.Module
    dense: nn.Module  # T5DenseGatedActDense or T5DenseActDense


def _norm(layer: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """T5LayerNorm's forward, operation for operation."""
    variance = hidden.to(torch.float32).pow(2).mean(-1, keepdim=True)
    hidden = hidden * torch.rsqrt(variance + layer.variance_epsilon)
    if layer.weight.dtype in (torch.float16, torch.bfloat16):
        hidden = hidden.to(layer.weight.dtype)
    return layer.weight * hidden


def _clamp(hidden: torch.Tensor) -> torch.Tensor:
    """T5Block's float16 clamp, operation for operation."""
    if hidden.dtype != torch.float16:
        return hidden
    clamp_value = torch.where(
        torch.isinf(hidden).any(), torch.finfo(hidden.dtype).max - 1000, torch.finfo(hidden.dtype).max
    )
    return torch.clamp(hidden, min=-clamp_value, max=clamp_value)


class ExactT5Forward:
    """``model(encoder_outputs=..., attention_mask=..., decoder_input_ids=tokens, decoder_attention_mask=...,
    cache=cache, use_cache=True).logits.float()`` for a T5/MT5 model in eval mode with sdpa attention (or, in the
    int8 mode, seq2spec's float64 decoder attention), computed directly; see the module docstring. Build it with
    ``checked``."""

    def __init__(self, model: PreTrainedModel) -> None:
        config = model.config
        if config.model_type not in EXACT_FAMILIES:
            raise ValueError(f"ExactT5Forward needs a T5 or MT5 model, got model_type={config.model_type!r}")
        if config._attn_implementation not in ("sdpa", FLOAT64_ATTENTION):
            raise ValueError(f"ExactT5Forward mirrors sdpa attention, not {config._attn_implementation!r}")
        self.float64 = config._attn_implementation == FLOAT64_ATTENTION
        self.model = model
        decoder = model.get_decoder()
        self.embedding = decoder.embed_tokens
        self.final_norm = decoder.final_layer_norm
        self.heads, self.head_dim = config.num_heads, config.d_kv
        self.scale = model.model_dim**-0.5 if getattr(config, "scale_decoder_outputs", False) else None
        attention = decoder.block[0].layer[0].SelfAttention
        self.bias_embedding = attention.relative_attention_bias
        self.bucket = attention._relative_position_bucket
        self.buckets, self.max_distance = config.relative_attention_num_buckets, config.relative_attention_max_distance
        self.blocks = [self._block(block) for block in decoder.block]
        self._check_structure()
        self._encoder_mask: torch.Tensor | None = None  # the last encoder mask seen, and whether it masks nothing
        self._encoder_mask_all_ones = False

    @staticmethod
    def _block(block: nn.Module) -> _Block:
        own, cross, ff = block.layer[0].SelfAttention, block.layer[1].EncDecAttention, block.layer[2]
        return _Block(
            self_attention=own,
            cross_attention=cross,
            self_norm=block.layer[0].layer_norm,
            q=own.q,
            k=own.k,
            v=own.v,
            o=own.o,
            cross_norm=block.layer[1].layer_norm,
            cross_q=cross.q,
            cross_k=cross.k,
            cross_v=cross.v,
            cross_o=cross.o,
            ff_norm=ff.layer_norm,
            dense=ff.DenseReluDense,
        )

    def _check_structure(self) -> None:
        """Refuse what the mirror does not reproduce: other layer types, hooks, dropout in training mode."""
        refuse_hooks_and_other_linears(self.model)
        for block in self.blocks:
            gated = hasattr(block.dense, "wi_0")
            if type(block.dense).__name__ not in ("T5DenseGatedActDense", "T5DenseActDense", "MT5DenseGatedActDense"):
                raise ValueError(f"unexpected feed-forward {type(block.dense).__name__}")
            for layer in (
                (block.dense.wi_0, block.dense.wi_1, block.dense.wo) if gated else (block.dense.wi, block.dense.wo)
            ):
                if type(layer) not in MIRRORED_LINEARS:
                    raise ValueError("a feed-forward layer is neither nn.Linear nor Int8Linear")

    @classmethod
    def checked(cls, model: PreTrainedModel) -> ExactT5Forward | None:
        """The exact forward for ``model`` if it reproduces transformers' logits and caches bit for bit on a probe,
        else None (the model then keeps its own forward)."""
        if model.config.model_type not in EXACT_FAMILIES or model.training:
            return None
        return check(f"exact forward for {type(model).__name__}", lambda: cls(model), cls.matches_on_probe, BIT_EQUAL)

    # ------------------------------------------------------------------ the forward

    def _self_bias(self, past: int, length: int, device: torch.device) -> torch.Tensor:
        """T5Attention.compute_bias(length, past + length, past_seen_tokens=past): ``[1, heads, length, total]``."""
        context = torch.arange(length, dtype=torch.long, device=device)[:, None] + past
        memory = torch.arange(past + length, dtype=torch.long, device=device)[None, :]
        buckets = self.bucket(
            memory - context, bidirectional=False, num_buckets=self.buckets, max_distance=self.max_distance
        )
        return self.bias_embedding(buckets).permute([2, 0, 1]).unsqueeze(0)

    def _encoder_mask_is_empty(self, mask: torch.Tensor | None) -> bool:
        if mask is None:
            return True
        if mask is not self._encoder_mask:
            self._encoder_mask, self._encoder_mask_all_ones = mask, bool(mask.all())
        return self._encoder_mask_all_ones

    @torch.no_grad()
    def __call__(
        self,
        tokens: torch.Tensor,
        cache: EncoderDecoderCache,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        pad: torch.Tensor | None,
    ) -> torch.Tensor:
        """Float32 logits ``[rows, len, vocab]`` for ``tokens`` appended to the cache; ``pad[r]``: row ``r``'s
        leading padded cache slots (None: no row has any), as the runner's decoder attention mask says."""
        rows, length = tokens.shape
        device = tokens.device
        past = cache.self_attention_cache.get_seq_length()
        total = past + length
        hidden = self.embedding(tokens)
        dtype = hidden.dtype
        lowest = torch.finfo(dtype).min
        bias = self._self_bias(past, length, device)
        cross_bias = torch.zeros((1, self.heads, length, encoder_hidden_states.shape[1]), device=device, dtype=dtype)
        encoder_unmasked = self._encoder_mask_is_empty(encoder_attention_mask)
        slots = torch.arange(total, device=device)
        allowed = (torch.arange(past, total, device=device)[:, None] >= slots[None, :])[None, None]
        if pad is not None:
            allowed = allowed & (slots[None, :] >= pad[:, None])[:, None, None]
        if self.float64:  # eager-style masks (0 or the lowest value) beside the raw biases
            self_mask = torch.where(allowed, 0.0, lowest).to(dtype)
            cross_mask = None
            if not encoder_unmasked:
                cross_mask = torch.where(encoder_attention_mask.bool()[:, None, None, :], 0.0, lowest).to(dtype)
            self_attention = (self_mask, bias)
            cross_attention = (cross_mask, cross_bias)
        else:  # sdpa: the bias with the lowest value where masked, as one additive mask
            if pad is None and length == 1:  # transformers passes no mask: the bias is the whole additive mask
                self_mask = bias.contiguous()
            else:
                self_mask = torch.where(allowed, bias, lowest).contiguous()
            if encoder_unmasked:
                cross_mask = cross_bias.contiguous()
            else:
                cross_mask = torch.where(encoder_attention_mask.bool()[:, None, None, :], cross_bias, lowest)
                cross_mask = cross_mask.contiguous()
            self_attention, cross_attention = (self_mask, None), (cross_mask, None)

        for index, block in enumerate(self.blocks):
            hidden = _clamp(
                hidden + self._attention(block, _norm(block.self_norm, hidden), cache, index, self_attention)
            )
            normed = _norm(block.cross_norm, hidden)
            attended = self._cross_attention(block, normed, cache, index, encoder_hidden_states, cross_attention)
            hidden = _clamp(hidden + attended)
            hidden = _clamp(hidden + self._feed_forward(block.dense, _norm(block.ff_norm, hidden)))
        hidden = _norm(self.final_norm, hidden)
        if self.scale is not None:
            hidden = hidden * self.scale
        return self.model.get_output_embeddings()(hidden).float()

    def _heads(self, states: torch.Tensor) -> torch.Tensor:
        return states.view(*states.shape[:-1], -1, self.head_dim).transpose(1, 2)

    def _attend(self, module: nn.Module, query, key, value, masks, shape, out: nn.Module) -> torch.Tensor:
        mask, bias = masks
        if self.float64:
            attended, _ = float64_decoder_attention(
                module, query, key, value, mask, scaling=1.0, dropout=0.0, position_bias=bias
            )
        else:
            attended = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=0.0, scale=1.0)
            attended = attended.reshape(attended.shape[0], -1, query.shape[2], value.shape[-1])
            attended = attended.transpose(1, 2).contiguous()
        return linear_forward(out, attended.reshape(*shape, -1).contiguous())

    def _attention(self, block: _Block, normed, cache: EncoderDecoderCache, index: int, masks) -> torch.Tensor:
        query = self._heads(linear_forward(block.q, normed))
        key = self._heads(linear_forward(block.k, normed))
        value = self._heads(linear_forward(block.v, normed))
        key, value = cache.self_attention_cache.update(key, value, index)
        return self._attend(block.self_attention, query, key, value, masks, normed.shape[:-1], block.o)

    def _cross_attention(self, block: _Block, normed, cache: EncoderDecoderCache, index: int, encoded, masks):
        query = self._heads(linear_forward(block.cross_q, normed))
        if cache.is_updated.get(index):
            layer = cache.cross_attention_cache.layers[index]
            key, value = layer.keys, layer.values
        else:
            key = self._heads(linear_forward(block.cross_k, encoded))
            value = self._heads(linear_forward(block.cross_v, encoded))
            key, value = cache.cross_attention_cache.update(key, value, index)
            cache.is_updated[index] = True
        return self._attend(block.cross_attention, query, key, value, masks, normed.shape[:-1], block.cross_o)

    @staticmethod
    def _feed_forward(dense: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        """T5DenseGatedActDense / T5DenseActDense forward (eval mode), operation for operation."""
        if hasattr(dense, "wi_0"):
            hidden = dense.act(linear_forward(dense.wi_0, hidden)) * linear_forward(dense.wi_1, hidden)
        else:
            hidden = dense.act(linear_forward(dense.wi, hidden))
        weight = dense.wo.weight
        if isinstance(weight, torch.Tensor) and hidden.dtype != weight.dtype and weight.dtype != torch.int8:
            hidden = hidden.to(weight.dtype)
        return linear_forward(dense.wo, hidden)

    # ------------------------------------------------------------------ the probe

    @torch.no_grad()
    def matches_on_probe(self) -> bool:
        """Whether logits and caches equal transformers' bit for bit over a probe of cached steps: three rows, one
        with a padded encoder output, rows with padded cache slots, one and several tokens per forward; and again
        with an encoder output that masks nothing."""
        model = self.model
        device = self.embedding.weight.device
        generator = torch.Generator().manual_seed(0)
        vocab, width = self.embedding.weight.shape
        encoded = torch.randn(3, 7, width, generator=generator).to(device, self.embedding.weight.dtype)
        tokens = torch.randint(2, vocab, (3, 8), generator=generator).to(device)
        padded_source = torch.ones(3, 7, dtype=torch.long, device=device)
        padded_source[1, 5:] = 0
        for source_mask in (padded_source, torch.ones_like(padded_source)):
            theirs = EncoderDecoderCache(DynamicCache(), DynamicCache())
            ours = EncoderDecoderCache(DynamicCache(), DynamicCache())
            # (first, stop, padded cache slots per row or None): as the runner feeds them
            for start, stop, pad in ((0, 1, None), (1, 4, None), (4, 5, None), (5, 7, (0, 2, 1)), (7, 8, (0, 2, 1))):
                step = tokens[:, start:stop]
                pad_tensor = None if pad is None else torch.tensor(pad, device=device)
                mask = None
                if pad_tensor is not None:
                    mask = (torch.arange(stop, device=device)[None, :] >= pad_tensor[:, None]).long()
                reference = model(
                    encoder_outputs=BaseModelOutput(last_hidden_state=encoded),
                    attention_mask=source_mask,
                    decoder_input_ids=step,
                    decoder_attention_mask=mask,
                    **cache_argument(model, theirs),
                    use_cache=True,
                ).logits.float()
                mine = self(step, ours, encoded, source_mask, pad_tensor)
                if not torch.equal(reference, mine) or not caches_equal(theirs, ours):
                    return False
        return True
