"""The text steps around a corrector: what is protected and put back as written, long texts cut into sentence
pieces, capitals folded and checked, dictionary and unknown words the model garbled kept; one pipeline
(``SpellingPipeline``) owned by one frozen settings object (``SpellingSettings``)."""

from seq2spec.spelling.settings import SpellingSettings

__all__ = ["SpellingSettings"]
