"""The big Whisper's decoder forward without transformers' per-call wrapping, used only where it is bit-exact.

A verification forward of whisper-base through ``WhisperForConditionalGeneration`` passes through some thirty module
calls, keyword-deprecation wrappers, output records and configuration lookups around its arithmetic; on a GPU, where
a decoder step of a model this small is bound by what the host does per call, that wrapping is a large share of the
forward. ``ExactWhisperForward`` calls the same functions on the same tensors in the same order: the same linear
products and layer norms, transformers' own causal-mask builder and its registered attention function with the
arguments Whisper's attention passes, the same cache updates, the model's own vocabulary head (the sliced one where
the runner installed it), and embeds each row's positions as the runner numbers them.

As for the T5 mirror (``exact_t5.py``), seq2spec does not take that on trust: ``ExactWhisperForward.checked`` runs a
probe through both (one and several tokens per forward, rows with and without padded cache slots) and returns the
mirror only if every logit and every cache entry is equal (``torch.equal``); otherwise, and for anything outside
what it mirrors (hooks, training mode, linear layers other than ``nn.Linear`` and seq2spec's ``Int8Linear``), the big
model keeps transformers' forward. The check runs again after any change of the weights, device, dtype or attention
implementation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import DynamicCache, EncoderDecoderCache, PreTrainedModel
from transformers.masking_utils import create_causal_mask
from transformers.modeling_outputs import BaseModelOutput
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.whisper.modeling_whisper import eager_attention_forward

from seq2spec.decoding.cache import cache_argument
from seq2spec.decoding.fast.checked import BIT_EQUAL, check
from seq2spec.decoding.fast.mirror import caches_equal, linear_forward, refuse_hooks_and_other_linears


@dataclass(frozen=True)
class _Layer:
    self_attention: nn.Module
    self_norm: nn.LayerNorm
    cross_attention: nn.Module
    cross_norm: nn.LayerNorm
    ff_norm: nn.LayerNorm
    fc1: nn.Module
    fc2: nn.Module
    activation: nn.Module


def _norm(layer: nn.LayerNorm, hidden: torch.Tensor) -> torch.Tensor:
    """nn.LayerNorm's forward without the module call."""
    return F.layer_norm(hidden, layer.normalized_shape, layer.weight, layer.bias, layer.eps)


class ExactWhisperForward:
    """``model(encoder_outputs=..., decoder_input_ids=tokens, decoder_attention_mask=..., cache=cache,
    use_cache=True).logits.float()`` for a ``WhisperForConditionalGeneration`` in eval mode, with each row's positions
    counted from its first real cache slot (as ``positions.py`` numbers Whisper's), computed directly; see the module
    docstring. Build it with ``checked``."""

    def __init__(self, model: PreTrainedModel) -> None:
        if type(model).__name__ != "WhisperForConditionalGeneration":
            raise ValueError(f"ExactWhisperForward needs a WhisperForConditionalGeneration, got {type(model).__name__}")
        self.model = model
        decoder = model.model.decoder
        self.decoder = decoder
        self.config = decoder.config
        self.embedding = decoder.embed_tokens
        self.positions = decoder.embed_positions
        self.final_norm = decoder.layer_norm
        implementation = self.config._attn_implementation
        self.attention = ALL_ATTENTION_FUNCTIONS.get_interface(implementation, eager_attention_forward)
        self.layers = [
            _Layer(
                self_attention=layer.self_attn,
                self_norm=layer.self_attn_layer_norm,
                cross_attention=layer.encoder_attn,
                cross_norm=layer.encoder_attn_layer_norm,
                ff_norm=layer.final_layer_norm,
                fc1=layer.fc1,
                fc2=layer.fc2,
                activation=layer.activation_fn,
            )
            for layer in decoder.layers
        ]
        self._check_structure()

    def _check_structure(self) -> None:
        """Refuse what the mirror does not reproduce: hooks, other layer types, layer drop."""
        refuse_hooks_and_other_linears(self.model)
        for name, module in self.decoder.named_modules():
            if isinstance(module, nn.LayerNorm) and type(module) is not nn.LayerNorm:
                raise ValueError(f"decoder norm {name!r} is a {type(module).__name__}")
        for layer in self.layers:
            for attention in (layer.self_attention, layer.cross_attention):
                if type(attention).__name__ != "WhisperAttention":
                    raise ValueError(f"unexpected attention module {type(attention).__name__}")

    @classmethod
    def checked(cls, model: PreTrainedModel) -> ExactWhisperForward | None:
        """The exact forward for ``model`` if it reproduces transformers' logits and caches bit for bit on a probe,
        else None (the model then keeps its own forward)."""
        if type(model).__name__ != "WhisperForConditionalGeneration" or model.training:
            return None
        return check(f"exact forward for {type(model).__name__}", lambda: cls(model), cls.matches_on_probe, BIT_EQUAL)

    # ------------------------------------------------------------------ the forward

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
        leading padded cache slots (None: no row has any), as the runner's decoder attention mask says. Whisper's
        decoder reads the whole encoder output: ``encoder_attention_mask`` is not used, as in transformers."""
        rows, length = tokens.shape
        device = tokens.device
        past = cache.self_attention_cache.get_seq_length()
        hidden = self.embedding(tokens)
        position_ids = (torch.arange(length, device=device) + past).unsqueeze(0).repeat(rows, 1)
        mask = None
        if pad is None:
            positions = self.positions.weight[position_ids]
        else:
            positions = F.embedding((position_ids[:1] - pad[:, None]).clamp(min=0), self.positions.weight)
            mask = (torch.arange(past + length, device=device)[None, :] >= pad[:, None]).long()
        hidden = hidden + positions.to(hidden.device)
        # the cache goes by position: its keyword is ``cache`` from transformers 5.24, ``past_key_values`` before
        causal_mask = create_causal_mask(self.config, hidden, mask, cache, position_ids=position_ids)
        for index, layer in enumerate(self.layers):
            attended = self._attend(layer.self_attention, _norm(layer.self_norm, hidden), causal_mask, cache, index)
            hidden = hidden + attended
            normed = _norm(layer.cross_norm, hidden)
            hidden = hidden + self._attend(layer.cross_attention, normed, None, cache, index, encoder_hidden_states)
            inner = layer.activation(linear_forward(layer.fc1, _norm(layer.ff_norm, hidden)))
            hidden = hidden + linear_forward(layer.fc2, inner)
        hidden = _norm(self.final_norm, hidden)
        return self.model.get_output_embeddings()(hidden).float()

    def _attend(
        self,
        module: nn.Module,
        hidden: torch.Tensor,
        mask: torch.Tensor | None,
        cache: EncoderDecoderCache,
        index: int,
        encoded: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """WhisperAttention's forward (eval mode, no attention weights), operation for operation: self-attention,
        or cross-attention over ``encoded`` with its keys and values computed once."""
        input_shape = hidden.shape[:-1]
        heads, head_dim = module.num_heads, module.head_dim
        query = (linear_forward(module.q_proj, hidden) * module.scaling).view(*input_shape, -1, head_dim)
        query = query.transpose(1, 2).contiguous()
        kv_shape = (input_shape[0], -1, heads, head_dim)
        if encoded is None:
            key = linear_forward(module.k_proj, hidden).view(kv_shape).transpose(1, 2).contiguous()
            value = linear_forward(module.v_proj, hidden).view(kv_shape).transpose(1, 2).contiguous()
            key, value = cache.self_attention_cache.update(key, value, index)
        else:
            key, value = self.cross_attention(cache, index, encoded)
        attended, _ = self.attention(module, query, key, value, mask, dropout=0.0, scaling=1.0, output_attentions=False)
        return linear_forward(module.out_proj, attended.reshape(*input_shape, -1).contiguous())

    def cross_attention(
        self, cache: EncoderDecoderCache, index: int, encoded: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Decoder layer ``index``'s cross-attention keys and values of ``encoded``, ``[rows, heads, frames,
        head_dim]``: from the cache, or computed and cached as the layer's first forward does (a runner may ask for
        them before that forward, to hand them to a draft whose projections are these)."""
        if cache.is_updated.get(index):
            layer = cache.cross_attention_cache.layers[index]
            return layer.keys, layer.values
        module = self.layers[index].cross_attention
        kv_shape = (encoded.shape[0], -1, module.num_heads, module.head_dim)
        cache.is_updated[index] = True
        key = linear_forward(module.k_proj, encoded).view(kv_shape).transpose(1, 2).contiguous()
        value = linear_forward(module.v_proj, encoded).view(kv_shape).transpose(1, 2).contiguous()
        return cache.cross_attention_cache.update(key, value, index)

    # ------------------------------------------------------------------ the probe

    @torch.no_grad()
    def matches_on_probe(self) -> bool:
        """Whether logits and caches equal transformers' bit for bit over a probe of cached steps as the runner feeds
        them: three rows, a three-token prompt, one and several tokens per forward, rows with padded cache slots."""
        model = self.model
        device, dtype = self.embedding.weight.device, self.embedding.weight.dtype
        generator = torch.Generator().manual_seed(0)
        vocabulary, width = self.embedding.weight.shape
        encoded = torch.randn(3, 9, width, generator=generator).to(device, dtype)
        tokens = torch.randint(0, vocabulary, (3, 9), generator=generator).to(device)
        theirs = EncoderDecoderCache(DynamicCache(), DynamicCache())
        ours = EncoderDecoderCache(DynamicCache(), DynamicCache())
        for start, stop, pad in ((0, 3, None), (3, 4, None), (4, 7, None), (7, 8, (0, 2, 1)), (8, 9, (1, 0, 3))):
            step = tokens[:, start:stop]
            pad_tensor = None if pad is None else torch.tensor(pad, device=device)
            padding = {}
            if pad_tensor is not None:  # the runner's mask and Whisper's numbering over each row's real slots
                padding["decoder_attention_mask"] = (
                    torch.arange(stop, device=device)[None, :] >= pad_tensor[:, None]
                ).long()
                slots = torch.arange(start, stop, device=device)[None, :]
                padding["decoder_position_ids"] = (slots - pad_tensor[:, None]).clamp(min=0)
            reference = model(
                encoder_outputs=BaseModelOutput(last_hidden_state=encoded),
                decoder_input_ids=step,
                **padding,
                **cache_argument(model, theirs),
                use_cache=True,
            ).logits.float()
            mine = self(step, ours, encoded, None, pad_tensor)
            if not torch.equal(reference, mine) or not caches_equal(theirs, ours):
                return False
        return True
