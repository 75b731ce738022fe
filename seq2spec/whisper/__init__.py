"""Whisper around the core: generate integration, transcription, audio, the shared-encoder draft, CT2 conversion."""
