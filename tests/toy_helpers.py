"""Test-only model helpers: drafts that agree part of the time, a check that outputs vary, and a small Whisper."""

from __future__ import annotations

import copy

import torch
from transformers import PreTrainedModel


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


def build_toy_whisper(
    seed: int = 0,
    *,
    decoder_layers: int = 2,
    max_target_positions: int = 64,
    max_source_positions: int = 1500,
    special_tokens: tuple[str, ...] = WHISPER_TOY_SPECIALS,
    num_mel_bins: int = 80,
):
    """A small random Whisper (80 mel bins, 30 s windows of 3000 frames; ``max_source_positions=100``: 200-frame
    windows, for tests that run the encoder thousands of times) whose greedy output depends on the audio and ends with
    EOS at different steps: weights rescaled, timestamp-token embeddings shrunk, the EOS embedding enlarged.
    ``special_tokens`` follow the 256 text tokens (``<|endoftext|>`` and ``<|startoftranscript|>`` first; its
    ``<|xx|>`` tokens of two or three letters are the languages)."""
    from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration

    text, specials = WHISPER_TOY_TEXT_TOKENS, len(special_tokens)
    eos, start = text, text + 1
    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=text + specials + 1501,
        num_mel_bins=num_mel_bins,
        d_model=64,
        encoder_layers=2,
        decoder_layers=decoder_layers,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_target_positions=max_target_positions,
        max_source_positions=max_source_positions,
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
    ids = {token: text + index for index, token in enumerate(special_tokens)}
    languages = [token for token in special_tokens if len(token) in (6, 7) and token[2:-2].isalpha()]
    model.generation_config = GenerationConfig(
        decoder_start_token_id=start,
        eos_token_id=eos,
        pad_token_id=eos,
        bos_token_id=eos,
        no_timestamps_token_id=ids["<|notimestamps|>"],
        prev_sot_token_id=ids["<|startofprev|>"],
        lang_to_id={token: ids[token] for token in languages},
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


def long_form_toy_features(frames: list[int], *, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Long-form toy features, one row per length in ``frames`` (zeros past each row's end), and the attention
    mask that gives each row's own length."""
    features = toy_features(len(frames), max(frames), seed=seed)
    mask = torch.zeros(len(frames), max(frames), dtype=torch.long)
    for row, length in enumerate(frames):
        mask[row, :length] = 1
        features[row, :, length:] = 0.0
    return features, mask


def prompted_long_form(
    device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, dict]:
    """Three long-form toy rows of different lengths (seed 23) and generate's arguments for them: timestamps,
    previous-text conditioning and a prompt, so that rows' prompts differ in length once their windows advance."""
    features, mask = long_form_toy_features([7000, 4500, 6100], seed=23)
    kwargs = {
        "attention_mask": mask.to(device),
        "return_timestamps": True,
        "language": "en",
        "condition_on_prev_tokens": True,
        "prompt_ids": torch.tensor([259, 40, 41, 42, 43], device=device),
    }
    return features.to(device, dtype), kwargs


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


# large-v3's order: <|yue|> after the last language, before the task tokens
V3_SPECIALS = (*WHISPER_TOY_SPECIALS[:5], "<|yue|>", *WHISPER_TOY_SPECIALS[5:])


def toy_whisper_tokenizer(special_tokens: tuple[str, ...]):
    """A tokenizer of the toy Whisper's vocabulary: 256 text tokens, the specials, 1501 timestamp tokens."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    texts = [f"t{index}" for index in range(WHISPER_TOY_TEXT_TOKENS)]
    timestamps = [f"<|{index * 0.02:.2f}|>" for index in range(1501)]
    vocab = {token: index for index, token in enumerate([*texts, *special_tokens, *timestamps])}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>")))


def without_token(model, token: int):
    """A copy of a toy Whisper whose vocabulary lacks ``token``: the later tokens' ids one lower."""
    model = copy.deepcopy(model)
    weight = model.model.decoder.embed_tokens.weight.data
    kept = torch.cat([weight[:token], weight[token + 1 :]])
    model.model.decoder.embed_tokens = torch.nn.Embedding.from_pretrained(kept, freeze=False)
    model.proj_out = torch.nn.Linear(kept.shape[1], kept.shape[0], bias=False)
    model.proj_out.weight = model.model.decoder.embed_tokens.weight
    model.config.vocab_size = kept.shape[0]
    generation = model.generation_config

    def moved(index: int) -> int:
        return index - 1 if index > token else index

    for name in ("decoder_start_token_id", "no_timestamps_token_id", "prev_sot_token_id"):
        setattr(generation, name, moved(getattr(generation, name)))
    generation.lang_to_id = {name: moved(index) for name, index in generation.lang_to_id.items() if index != token}
    generation.task_to_id = {name: moved(index) for name, index in generation.task_to_id.items()}
    model.config.decoder_start_token_id = generation.decoder_start_token_id
    return model.eval()
