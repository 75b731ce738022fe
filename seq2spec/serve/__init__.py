"""``seq2spec serve``: the speller behind LanguageTool's HTTP API and Whisper behind OpenAI's transcription API, the
requests that arrive together decoded together."""
