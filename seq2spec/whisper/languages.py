"""Whisper's languages: a code or name checked against the ones Whisper knows, and against one model's tokens."""

from __future__ import annotations

from typing import Any


def whisper_language(code: str, where: str) -> str:
    """Whisper's code for ``code`` (a code such as ``fr`` or a name such as ``French``), else a ValueError that
    names ``where`` it came from."""
    from transformers.models.whisper.tokenization_whisper import LANGUAGES, TO_LANGUAGE_CODE

    if code.lower() in LANGUAGES or code.lower() in TO_LANGUAGE_CODE:
        return TO_LANGUAGE_CODE.get(code.lower(), code.lower())
    raise ValueError(f"{where}: {code!r} is not a language Whisper knows (codes such as en, fr, zh; or names)")


def languages_besides_english(model: Any) -> list[str]:
    """The codes of every language ``model`` (a multilingual Whisper) has a language token for, English left out."""
    tokens = getattr(model.generation_config, "lang_to_id", None) or {}
    return [token.strip("<|>") for token in tokens if token != "<|en|>"]


def language_name(code: str) -> str:
    """Whisper's lower-case English name for a language code (``fr`` -> ``french``), as OpenAI's API reports it."""
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    return LANGUAGES.get(code, code)


def check_spoken(model: Any, languages: set[str]) -> None:
    """A ValueError naming the languages of ``languages`` (codes or names) ``model`` has no language token for.
    An English-only model (no language tokens) is left to refuse other languages itself."""
    from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE

    known = getattr(model.generation_config, "lang_to_id", None)
    if not languages or known is None:
        return
    missing = sorted(code for code in languages if f"<|{TO_LANGUAGE_CODE.get(code, code)}|>" not in known)
    if missing:
        raise ValueError(f"this model does not speak {', '.join(missing)} (it has no language token for it)")


def detected_languages(model: Any, features: Any) -> list[str]:
    """Each row's language code as Whisper's ``generate`` detects it when given no language: ``detect_language`` on
    the first window's frames of the very features ``generate`` receives, so the code is the one it would put in the
    row's prompt."""
    config = model.generation_config
    encoder = model.model.encoder
    frames = encoder.conv1.stride[0] * encoder.conv2.stride[0] * model.config.max_source_positions
    ids = model.detect_language(
        input_features=features.to(model.device, model.dtype), generation_config=config, num_segment_frames=frames
    )
    code_of = {token_id: token.strip("<|>") for token, token_id in config.lang_to_id.items()}
    return [code_of[token_id] for token_id in ids.tolist()]


def detects_language(model: Any) -> bool:
    """Whether ``model``'s ``generate`` detects each row's language when given none: a multilingual Whisper whose
    generation config names no language (a fine-tuned model's config may, and then that one is used)."""
    config = model.generation_config
    forced = dict(getattr(config, "forced_decoder_ids", None) or ())  # position -> token; older configs hold these
    return (
        bool(getattr(config, "is_multilingual", False))
        and bool(getattr(config, "lang_to_id", None))
        and getattr(config, "language", None) is None
        and forced.get(1) is None
    )
