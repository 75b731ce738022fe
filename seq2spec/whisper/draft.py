"""A shallow decoder-only draft for a Whisper model, sharing the big model's encoder and embeddings.

The draft is a ``WhisperForCausalLM`` (distil-whisper's assistant layout) whose token embeddings, position
embeddings and output projection ARE the big model's modules (no copy), and whose encoder input is the big
model's encoder output. Only its own decoder layers and final layer norm are stored: the shipped draft for
Whisper base is 2 layers, about 17 MB in fp16 (``seq2spec/assets/whisper_base_draft``).

A draft may also restrict its output projection to a subset of the vocabulary (the tokens it was trained to
propose, stored with its weights): base's projection over all 51,865 tokens costs as much as two of its decoder
layers, and the draft only needs to rank the tokens it can usefully propose. Every other token gets the lowest
score, so it is never proposed; base, which verifies every proposal, always scores the full vocabulary.

A draft with a slice may also carry, per language, the tokens of that language the slice lacks
(``language_tokens.safetensors`` beside its weights, made by ``recipes/language_vocabularies.py``): a batch whose rows
transcribe those languages is scored over the slice and their tokens (``LeanWhisperDraft.for_languages``), so a
language the slice was not chosen for (Korean, Chinese) still gets its own tokens proposed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

WHISPER_BASE_DRAFT_DIR = Path(__file__).parents[1] / "assets" / "whisper_base_draft"
# the shipped draft for the languages it names (``languages`` in its config), beside the English one
WHISPER_BASE_MULTILINGUAL_DRAFT_DIR = Path(__file__).parents[1] / "assets" / "whisper_base_multilingual_draft"
WEIGHTS_FILE = "decoder.safetensors"
CONFIG_FILE = "draft_config.json"
OUTPUT_TOKENS_KEY = "output_token_ids"
LANGUAGE_TOKENS_FILE = "language_tokens.safetensors"  # language code -> its tokens beyond the slice
OPTIONS_KEY = "speculation_options"


class VocabularySubsetHead(nn.Module):
    """An output projection computed only for ``token_ids``; other tokens get the dtype's lowest value.

    Its weight rows are copied from ``full`` (a ``Linear`` over the whole vocabulary) once, so a step reads
    ``len(token_ids)`` rows instead of the whole matrix. The logits keep the full vocabulary's shape, so logits
    processors and the speculative loop see nothing different. ``full_weight`` is ``full``'s weight itself (not a
    copy) and ``language_token_ids`` each language's tokens beyond ``token_ids`` (empty unless given), from which a
    batch's scored tokens may be widened (``LeanWhisperDraft.for_languages``).
    """

    def __init__(self, full: nn.Linear, token_ids: torch.Tensor) -> None:
        super().__init__()
        token_ids = torch.as_tensor(token_ids, dtype=torch.long).flatten()
        if token_ids.numel() == 0 or bool((token_ids < 0).any()) or bool((token_ids >= full.out_features).any()):
            raise ValueError(f"output token ids must be non-empty and in [0, {full.out_features})")
        if torch.unique(token_ids).numel() != token_ids.numel():
            raise ValueError("output token ids must not repeat")
        self.in_features, self.out_features = full.in_features, full.out_features
        device = full.weight.device
        self.register_buffer("token_ids", token_ids.to(device))
        self.register_buffer("weight", full.weight.detach()[self.token_ids].clone())
        self.register_buffer("bias", None if full.bias is None else full.bias.detach()[self.token_ids].clone())
        self.full_weight, self.full_bias = full.weight, full.bias
        self.language_token_ids: dict[str, torch.Tensor] = {}

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        subset = nn.functional.linear(hidden, self.weight, self.bias)
        logits = subset.new_full((*subset.shape[:-1], self.out_features), torch.finfo(subset.dtype).min)
        return logits.index_copy_(-1, self.token_ids, subset)


def restrict_output_vocabulary(draft, token_ids: torch.Tensor | Sequence[int]):
    """Make ``draft`` score only ``token_ids`` (see ``VocabularySubsetHead``); returns the draft."""
    head = draft.proj_out
    if not isinstance(head, nn.Linear):
        raise TypeError(f"the draft's output projection is a {type(head).__name__}, not a full Linear layer")
    draft.proj_out = VocabularySubsetHead(head, torch.as_tensor(token_ids))
    return draft


def add_language_tokens(draft, tokens: dict[str, torch.Tensor]):
    """Give a draft with a vocabulary slice each language's tokens beyond it (language code -> token ids), scored
    for a batch whose rows transcribe that language; returns the draft."""
    head = draft.proj_out
    if not isinstance(head, VocabularySubsetHead):
        raise TypeError("language tokens widen a vocabulary slice; this draft scores every token already")
    checked = {}
    for code, ids in tokens.items():
        ids = torch.as_tensor(ids).flatten().long()
        if ids.numel() and (bool((ids < 0).any()) or bool((ids >= head.out_features).any())):
            raise ValueError(f"language tokens of {code!r} must be in [0, {head.out_features})")
        checked[code] = ids.to(head.token_ids.device)
    head.language_token_ids = checked
    return draft


def output_token_ids(draft) -> torch.Tensor | None:
    """The token ids a draft scores, or None when it scores the whole vocabulary."""
    head = draft.proj_out
    return head.token_ids if isinstance(head, VocabularySubsetHead) else None


def _skeleton(big, num_layers: int):
    """A draft whose shared parts are the big model's modules and whose own parts are still unallocated (meta)."""
    from transformers import WhisperForCausalLM

    config = copy.deepcopy(big.config)
    config.decoder_layers = num_layers
    with torch.device("meta"):
        draft = WhisperForCausalLM(config)
    decoder = draft.model.decoder
    decoder.embed_tokens = big.model.decoder.embed_tokens
    decoder.embed_positions = big.model.decoder.embed_positions
    draft.proj_out = big.proj_out
    draft.generation_config = copy.deepcopy(big.generation_config)
    return draft


def own_parameters(draft) -> dict[str, nn.Parameter]:
    """The draft's parameters that are not the big model's (decoder layers and final layer norm)."""
    decoder = draft.model.decoder
    named = {f"layers.{k}": v for k, v in decoder.layers.named_parameters()}
    named.update({f"layer_norm.{k}": v for k, v in decoder.layer_norm.named_parameters()})
    return named


def draft_from_big_layers(big, layers: Sequence[int]):
    """A fresh draft whose layers are copies of the big model's decoder ``layers`` (distil-whisper's initialisation)."""
    source = big.model.decoder
    if not layers or any(not 0 <= i < len(source.layers) for i in layers):
        raise ValueError(
            f"layers {list(layers)} must name decoder layers of the big model (0..{len(source.layers) - 1})"
        )
    draft = _skeleton(big, len(layers))
    decoder = draft.model.decoder
    decoder.layers = nn.ModuleList(copy.deepcopy(source.layers[i]) for i in layers)
    for position, layer in enumerate(decoder.layers):
        for attention in (layer.self_attn, layer.encoder_attn):
            attention.layer_idx = position  # the cache slot of this layer in the draft's own cache
    decoder.layer_norm = copy.deepcopy(source.layer_norm)
    return draft.eval()


def save_whisper_draft(draft, directory: str | Path, *, dtype: torch.dtype = torch.float16, **card: object) -> Path:
    """Write the draft's own weights (``dtype``), its output token ids if it has a subset head (and its languages'
    tokens beyond them, if any), and a small config; the shared parts are not stored."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {name: p.detach().to("cpu", dtype).contiguous() for name, p in own_parameters(draft).items()}
    subset = output_token_ids(draft)
    if subset is not None:
        tensors[OUTPUT_TOKENS_KEY] = subset.to("cpu", torch.int32).contiguous()
        card = {**card, "output_tokens": int(subset.numel())}
        languages = draft.proj_out.language_token_ids
        if languages:
            stored = {code: ids.to("cpu", torch.int32).contiguous() for code, ids in languages.items()}
            save_file(stored, directory / LANGUAGE_TOKENS_FILE)
    save_file(tensors, directory / WEIGHTS_FILE)
    config = draft.config
    description = {
        "decoder_layers": config.decoder_layers,
        "d_model": config.d_model,
        "vocab_size": config.vocab_size,
        "max_target_positions": config.max_target_positions,
        **card,
    }
    (directory / CONFIG_FILE).write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    return directory


def share_frozen_cross_projections(draft, big, stored: dict[str, torch.Tensor]) -> list[tuple[int, int]]:
    """Give each draft layer whose stored cross-attention key and value projections are a big decoder layer's, as
    stored (the distillation recipe keeps them frozen), that big layer's own projection modules; returns the
    (draft layer, big layer) pairs.

    The draft then computes with the weights it was trained with (the big model's, not their copy rounded to the
    stored precision), and the speculator hands it the big model's cross-attention keys and values of those layers
    instead of computing them again (``seq2spec.drafts.shared_cross``)."""
    pairs = []
    big_layers = big.model.decoder.layers
    for index, layer in enumerate(draft.model.decoder.layers):
        for source, big_layer in enumerate(big_layers):
            if _stored_copy_of(stored, f"layers.{index}.encoder_attn", big_layer.encoder_attn):
                layer.encoder_attn.k_proj = big_layer.encoder_attn.k_proj
                layer.encoder_attn.v_proj = big_layer.encoder_attn.v_proj
                pairs.append((index, source))
                break
    return pairs


def _stored_copy_of(stored: dict[str, torch.Tensor], prefix: str, attention: nn.Module) -> bool:
    """Whether the stored key and value projections under ``prefix`` are ``attention``'s rounded to their dtype."""
    for projection in ("k_proj", "v_proj"):
        module = getattr(attention, projection)
        if type(module) is not nn.Linear:
            return False
        for name in ("weight", "bias"):
            mine, theirs = stored.get(f"{prefix}.{projection}.{name}"), getattr(module, name)
            if (mine is None) != (theirs is None):
                return False
            if mine is not None and (
                mine.shape != theirs.shape or not torch.equal(theirs.detach().to(mine.device, mine.dtype), mine)
            ):
                return False
    return True


def draft_languages(directory: str | Path) -> tuple[str, ...]:
    """The language codes a saved draft proposes for (``languages`` in its config; none if it names none)."""
    description = json.loads((Path(directory) / CONFIG_FILE).read_text(encoding="utf-8"))
    return tuple(description.get("languages", ()))


def is_whisper_draft_folder(path: object) -> bool:
    """Whether ``path`` (a name or path) is a folder holding a draft saved by ``save_whisper_draft``."""
    if not isinstance(path, str | Path):
        return False
    return (Path(path) / CONFIG_FILE).is_file() and (Path(path) / WEIGHTS_FILE).is_file()


def check_draft_fits(big, directory: str | Path) -> dict:
    """The saved draft's description (its config), after checking that ``directory`` holds a draft made for a model
    of ``big``'s shape; else FileNotFoundError or a ValueError naming the setting that differs."""
    directory = Path(directory)
    config_path, weights_path = directory / CONFIG_FILE, directory / WEIGHTS_FILE
    if not config_path.is_file() or not weights_path.is_file():
        raise FileNotFoundError(f"{directory} holds no Whisper draft ({CONFIG_FILE} and {WEIGHTS_FILE} expected)")
    description = json.loads(config_path.read_text(encoding="utf-8"))
    for key in ("d_model", "vocab_size", "max_target_positions"):
        if getattr(big.config, key) != description[key]:
            raise ValueError(
                f"the draft in {directory} was made for {key}={description[key]}, "
                f"but the big model has {key}={getattr(big.config, key)}"
            )
    return description


def load_whisper_draft(big, directory: str | Path | None = None, *, full_vocabulary: bool = False):
    """Attach a saved draft to a loaded big Whisper model; it takes the big model's device and dtype.

    ``directory`` defaults to the shipped draft for Whisper base. The draft's token and position embeddings and
    output projection are the big model's own modules, so it adds only its decoder layers to memory (and, for a
    draft saved with a vocabulary subset, that subset's rows of the projection). Stored cross-attention key and value
    projections that are a big layer's as stored (frozen in distillation, as the shipped draft's) become that layer's
    own modules too (``share_frozen_cross_projections``). ``full_vocabulary`` ignores a saved subset and scores
    every token; otherwise the languages' tokens saved beside a subset (``LANGUAGE_TOKENS_FILE``) come along.
    Speculation options saved with the draft (``speculation_options`` in its config) ride along as
    ``draft.seq2spec_options``: ``Seq2SeqSpeculator`` uses them unless given its own.
    """
    from safetensors.torch import load_file

    if getattr(big, "seq2spec_int8", False):
        raise ValueError(
            "the big model is already quantised to int8; attach the draft to the float model first, then quantise "
            "both: seq2spec.int8.quantize_int8_pair(big, draft), or load_whisper_base_pair(dtype='int8')"
        )
    directory = Path(directory) if directory is not None else WHISPER_BASE_DRAFT_DIR
    description = check_draft_fits(big, directory)
    weights_path = directory / WEIGHTS_FILE
    draft = _skeleton(big, int(description["decoder_layers"]))
    decoder = draft.model.decoder
    parameter = next(big.parameters())
    decoder.layers.to_empty(device=parameter.device)
    decoder.layer_norm.to_empty(device=parameter.device)
    state = load_file(weights_path, device=str(parameter.device))
    subset = state.pop(OUTPUT_TOKENS_KEY, None)
    expected = set(own_parameters(draft))
    if set(state) != expected:
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        raise ValueError(
            f"{weights_path}: weights do not match the draft (missing {missing[:3]}, extra {unexpected[:3]})"
        )
    with torch.no_grad():
        for name, value in own_parameters(draft).items():
            value.copy_(state[name])
    decoder.layers.to(parameter.dtype)
    decoder.layer_norm.to(parameter.dtype)
    share_frozen_cross_projections(draft, big, state)
    if subset is not None and not full_vocabulary:
        restrict_output_vocabulary(draft, subset.long())
        if (directory / LANGUAGE_TOKENS_FILE).is_file():
            add_language_tokens(draft, load_file(directory / LANGUAGE_TOKENS_FILE, device=str(parameter.device)))
    # the speculation options the draft was tuned with (seq2spec.options.recommended_options)
    draft.seq2spec_options = dict(description.get(OPTIONS_KEY, {}))
    return draft.eval()
