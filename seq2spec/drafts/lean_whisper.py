"""A Whisper draft's decoder step written with plain tensor operations (the decoder-only draft of ``seq2spec.whisper``).

Through transformers, a step of the shipped 2-layer Whisper draft costs about a third of a step of the 6-layer base
it drafts for (measured on a two-core CPU: 14 ms against 39 ms): module calls, mask builders and output records on
every call, and a float32 vocabulary head whose weights are read from memory on every step. ``LeanWhisperDraft``
computes the same step from the same weights with a few fused operations per layer (query, key and value in one
product, the query scale folded into its weights, the cross-attention keys and values computed once per batch),
and on a CPU it runs every linear layer in int8 (``seq2spec.drafts.dense``).

It reads and writes the caller's ``EncoderDecoderCache`` as transformers does (the same layers, shapes and
``is_updated`` flags), so the cache surgery of ``cache.py`` works unchanged, and it embeds each row's positions
from its own padding as the runner numbers a Whisper decoder's (``positions.py``). ``LeanWhisperDraft.checked``
compares its float step with transformers' logits on a probe before first use and returns None when they disagree
(another transformers version, an unusual checkpoint), in which case the draft keeps using transformers. The big
model is never run here: a draft's logits choose candidates, the big model decides every output token.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from seq2spec.decoding.families import family_of
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts.dense import Dense
from seq2spec.drafts.lean import checked_lean, probe_tolerance
from seq2spec.int8 import int8_available

WIDENED_HEADS_KEPT = 8  # output heads widened by languages (``for_languages``) kept for the next batches


@dataclass(frozen=True)
class _Layer:
    self_norm: tuple[torch.Tensor, torch.Tensor]
    qkv: Dense  # q (scaled), k and v stacked
    self_out: Dense
    cross_norm: tuple[torch.Tensor, torch.Tensor]
    cross_q: Dense  # scaled
    cross_kv: Dense  # k and v stacked, run once per batch
    cross_out: Dense
    ff_norm: tuple[torch.Tensor, torch.Tensor]
    fc1: Dense
    fc2: Dense


def is_whisper_draft(model: PreTrainedModel) -> bool:
    """A decoder-only Whisper draft (``WhisperForCausalLM``) reading the big model's encoder output."""
    return type(model).__name__ == "WhisperForCausalLM"


def transcribed_languages(prompt: torch.Tensor, transcript_start: int, config: Any) -> set[str]:
    """The language codes a Whisper batch's rows transcribe in (rows translating to English left out): each row's
    language token, the one after its start of transcript (column ``transcript_start`` of ``prompt``), and its task
    token after that. Empty where the prompt holds no language tokens (an English-only model)."""
    code_of = {token_id: token.strip("<|>") for token, token_id in (getattr(config, "lang_to_id", None) or {}).items()}
    translate = (getattr(config, "task_to_id", None) or {}).get("translate")
    column = transcript_start + 1
    if not code_of or prompt.shape[1] <= column:
        return set()
    languages = prompt[:, column].tolist()
    tasks = prompt[:, column + 1].tolist() if prompt.shape[1] > column + 1 else [None] * len(languages)
    rows = zip(languages, tasks, strict=True)
    return {code_of[token] for token, task in rows if token in code_of and task != translate}


class LeanWhisperDraft:
    """``decoder step + output head`` of a ``WhisperForCausalLM`` draft in eval mode; see the module docstring."""

    def __init__(self, model: PreTrainedModel, *, int8: bool = False) -> None:
        if not is_whisper_draft(model):
            raise ValueError(f"LeanWhisperDraft needs a WhisperForCausalLM draft, got {type(model).__name__}")
        decoder = model.model.decoder
        config = model.config
        self.int8 = int8
        self.heads = config.decoder_attention_heads
        self.head_dim = config.d_model // self.heads
        self.act = decoder.layers[0].activation_fn
        self.embedding = decoder.embed_tokens.weight
        self.positions = decoder.embed_positions.weight
        self.eps = decoder.layer_norm.eps
        self.final_norm = (decoder.layer_norm.weight, decoder.layer_norm.bias)
        self.layers = [self._layer(layer) for layer in decoder.layers]
        head = model.proj_out
        self.vocabulary = self.embedding.shape[0]
        self.token_ids = getattr(head, "token_ids", None)  # a vocabulary-subset head scores only these
        self.head = Dense(head.weight, getattr(head, "bias", None), int8=int8)
        # a subset head's whole projection and each language's tokens beyond the subset (``for_languages``)
        self.full_head = (getattr(head, "full_weight", None), getattr(head, "full_bias", None))
        self.language_tokens: dict[str, torch.Tensor] = dict(getattr(head, "language_token_ids", None) or {})
        self._widened: OrderedDict[frozenset[str], LeanWhisperDraft] = OrderedDict()

    def for_languages(self, codes: Iterable[str]) -> LeanWhisperDraft:
        """This step scoring its slice and the tokens of ``codes`` beyond it (the languages a batch's rows
        transcribe), or itself where none of them has tokens of its own. The same layers; only the output head
        differs (its rows taken from the whole projection); the last few are kept for reuse."""
        key = frozenset(code for code in codes if code in self.language_tokens)
        if not key or self.token_ids is None or self.full_head[0] is None:
            return self
        widened = self._widened.get(key)
        if widened is None:
            device = self.token_ids.device
            added = [self.language_tokens[code].to(device) for code in sorted(key)]
            token_ids = torch.unique(torch.cat([self.token_ids, *added]))  # sorted, as index_copy_ needs none
            weight, bias = self.full_head
            widened = copy.copy(self)
            widened.token_ids = token_ids
            rows = token_ids.to(weight.device)
            widened.head = Dense(weight.detach()[rows], None if bias is None else bias.detach()[rows], int8=self.int8)
            widened.language_tokens, widened._widened = {}, OrderedDict()
            self._widened[key] = widened
            while len(self._widened) > WIDENED_HEADS_KEPT:
                self._widened.popitem(last=False)
        self._widened.move_to_end(key)
        return widened

    def _dense(self, weight: torch.Tensor, bias: torch.Tensor | None) -> Dense:
        return Dense(weight, bias, int8=self.int8)

    def _layer(self, layer) -> _Layer:
        own, cross = layer.self_attn, layer.encoder_attn
        return _Layer(
            self_norm=(layer.self_attn_layer_norm.weight, layer.self_attn_layer_norm.bias),
            qkv=self._dense(*_stacked_projection(own, with_query=True)),
            self_out=self._dense(own.out_proj.weight, own.out_proj.bias),
            cross_norm=(layer.encoder_attn_layer_norm.weight, layer.encoder_attn_layer_norm.bias),
            cross_q=self._dense(*_scaled_query(cross)),
            cross_kv=self._dense(*_stacked_projection(cross, with_query=False)),
            cross_out=self._dense(cross.out_proj.weight, cross.out_proj.bias),
            ff_norm=(layer.final_layer_norm.weight, layer.final_layer_norm.bias),
            fc1=self._dense(layer.fc1.weight, layer.fc1.bias),
            fc2=self._dense(layer.fc2.weight, layer.fc2.bias),
        )

    @classmethod
    def checked(cls, model: PreTrainedModel, *, int8: bool | None = None) -> LeanWhisperDraft | None:
        """A lean step for ``model`` (int8 on a CPU unless ``int8`` says otherwise) if its float version
        reproduces transformers' logits on a probe, else None."""
        if not is_whisper_draft(model) or model.training:
            return None
        if int8 is None:
            int8 = int8_available(model.device)
        return checked_lean(cls, model, probe_tolerance(model.dtype), int8=int8)

    @torch.no_grad()
    def probe_difference(self, model: PreTrainedModel) -> float:
        """Largest gap between this step's and transformers' log-probabilities over a few cached steps of a
        two-row probe whose rows keep different numbers of entries (so one is padded), relative to their scale."""
        device, dtype = self.embedding.device, self.embedding.dtype
        generator = torch.Generator().manual_seed(0)
        encoded = torch.randn(2, 9, self.embedding.shape[1], generator=generator).to(device, dtype)
        family = family_of(model)
        theirs = DecoderRunner(model, family, encoded, None)
        mine = DecoderRunner(model, family, encoded, None, step=self)
        scored = self.token_ids if self.token_ids is not None else torch.arange(self.vocabulary, device=device)
        steps = scored[torch.randint(0, scored.numel(), (2, 7), generator=generator).to(scored.device)]
        worst = 0.0
        for start, stop, kept in ((0, 3, [3, 1]), (3, 5, [2, 2]), (5, 7, None)):
            tokens = steps[:, start:stop]
            reference = theirs.forward(tokens)[..., scored].log_softmax(-1)
            ours = mine.forward(tokens)[..., scored].log_softmax(-1)
            worst = max(worst, float((reference - ours).abs().max()) / max(1.0, float(reference.abs().mean())))
            if kept is not None:
                theirs.keep(kept, fed=stop - start)
                mine.keep(kept, fed=stop - start)
        return worst

    def _norm(self, hidden: torch.Tensor, norm: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.layer_norm(hidden, (hidden.shape[-1],), norm[0], norm[1], self.eps)

    def _split(self, states: torch.Tensor) -> torch.Tensor:
        rows, length, _ = states.shape
        return states.view(rows, length, self.heads, self.head_dim).transpose(1, 2)

    def _merge(self, attended: torch.Tensor) -> torch.Tensor:
        rows, _, length, _ = attended.shape
        return attended.transpose(1, 2).reshape(rows, length, -1)

    @torch.no_grad()
    def __call__(
        self,
        tokens: torch.Tensor,
        cache,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        pad: torch.Tensor | None,
    ) -> torch.Tensor:
        """Float32 logits ``[rows, len, vocab]`` for ``tokens`` appended to the cache; row ``r``'s first ``pad[r]``
        cache slots are padding (None: no row has any; its tokens sit at positions counted from its first real
        slot). Whisper's encoder output is never masked: ``encoder_attention_mask`` (the audio features' mask, if
        any) is not used."""
        rows, length = tokens.shape
        past = cache.self_attention_cache.get_seq_length()
        total = past + length
        device = tokens.device
        new_slots = torch.arange(past, total, device=device)
        slots = torch.arange(total, device=device)
        self_mask = (slots[None, :] <= new_slots[:, None])[None, None]  # causal
        if pad is not None:
            pad = pad.to(device)
            real = (slots[None, :] >= pad[:, None])[:, None, None] | (slots[None, :] == new_slots[:, None])[None, None]
            self_mask = self_mask & real  # [rows, 1, length, total]: not the row's padding (a padded token: itself)

        def attend_self(index: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
            key, value = cache.self_attention_cache.update(key, value, index)
            return F.scaled_dot_product_attention(query, key, value, attn_mask=self_mask, scale=1.0)

        def cross_states(index: int) -> tuple[torch.Tensor, torch.Tensor]:
            if cache.is_updated.get(index):
                cross = cache.cross_attention_cache.layers[index]
                return cross.keys, cross.values
            key, value = cache.cross_attention_cache.update(*self.cross_states(index, encoder_hidden_states), index)
            cache.is_updated[index] = True
            return key, value

        if pad is None:
            positions = new_slots[None, :].expand(rows, length)
        else:
            positions = (new_slots[None, :] - pad[:, None]).clamp_(min=0)
        hidden = self.decode(self.embed(tokens, positions), attend_self, cross_states)
        scores = self.head(hidden).float()
        if self.token_ids is None:
            return scores
        logits = scores.new_full((rows, length, self.vocabulary), torch.finfo(self.embedding.dtype).min)
        return logits.index_copy_(-1, self.token_ids.to(device), scores)

    def embed(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings (``positions`` counted from each row's first real token)."""
        return F.embedding(tokens, self.embedding) + F.embedding(positions, self.positions)

    def cross_states(self, index: int, encoder_hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``index``'s cross-attention keys and values of the encoder output, ``[rows, heads, frames, dim]``."""
        dtype = self.embedding.dtype
        key, value = self._projected(self.layers[index].cross_kv, encoder_hidden_states, dtype).chunk(2, dim=-1)
        return self._split(key), self._split(value)

    def decode(
        self,
        hidden: torch.Tensor,
        attend_self: Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
        cross_states: Callable[[int], tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """The decoder layers and final norm over embedded ``hidden``. ``attend_self(layer, query, key, value)``
        stores the new keys and values wherever the caller keeps them and returns the attended values (heads split,
        query already scaled); ``cross_states(layer)`` gives the layer's cross-attention keys and values."""
        dtype = self.embedding.dtype
        for index, layer in enumerate(self.layers):
            query, key, value = self._projected(layer.qkv, self._norm(hidden, layer.self_norm), dtype).chunk(3, dim=-1)
            attended = attend_self(index, self._split(query), self._split(key), self._split(value))
            hidden = hidden + self._projected(layer.self_out, self._merge(attended), dtype)

            key, value = cross_states(index)
            query = self._split(self._projected(layer.cross_q, self._norm(hidden, layer.cross_norm), dtype))
            attended = F.scaled_dot_product_attention(query, key, value, scale=1.0)
            hidden = hidden + self._projected(layer.cross_out, self._merge(attended), dtype)

            inner = self.act(self._projected(layer.fc1, self._norm(hidden, layer.ff_norm), dtype))
            hidden = hidden + self._projected(layer.fc2, inner, dtype)
        return self._norm(hidden, self.final_norm)

    @staticmethod
    def _projected(dense: Dense, hidden: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return dense(hidden).to(dtype)


def _scaled_query(attention) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The attention's query projection with transformers' query scale folded in."""
    weight = attention.q_proj.weight * attention.scaling
    bias = None if attention.q_proj.bias is None else attention.q_proj.bias * attention.scaling
    return weight, bias


def _stacked_projection(attention, *, with_query: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Key and value projections (after the scaled query when ``with_query``) as one weight and bias; Whisper's key
    projection has no bias, so its part of the bias is zero."""
    parts = [_scaled_query(attention)] if with_query else []
    parts += [(attention.k_proj.weight, attention.k_proj.bias), (attention.v_proj.weight, attention.v_proj.bias)]
    weight = torch.cat([w for w, _ in parts])
    zeros = [torch.zeros(w.shape[0], dtype=w.dtype, device=w.device) for w, _ in parts]
    bias = torch.cat([b if b is not None else zero for (_, b), zero in zip(parts, zeros, strict=True)])
    return weight, bias
