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
