"""``TranscriptionRequest``: one value for what ``transcribe`` is asked, checked when made; the command, the server and
Ray build it the same way."""

from __future__ import annotations

import pytest

from seq2spec.commands.main import build_parser
from seq2spec.commands.transcribe import request_of
from seq2spec.whisper.request import LONG_FORMS, TranscriptionRequest, WhisperDecoding


def test_long_form_is_one_knob_of_three_values():
    assert LONG_FORMS == ("sequential", "vad", "batched")
    assert [TranscriptionRequest(long_form=mode).finds_speech for mode in LONG_FORMS] == [False, True, True]
    with pytest.raises(ValueError, match="long_form must be one of sequential, vad, batched, got 'piecewise'"):
        TranscriptionRequest(long_form="piecewise")


def test_bad_fields_are_refused_by_name():
    with pytest.raises(ValueError, match="task must be one of transcribe, translate"):
        TranscriptionRequest(task="summarise")
    with pytest.raises(ValueError, match="batch_size must be positive"):
        TranscriptionRequest(batch_size=0)
    with pytest.raises(TypeError, match="max_new_tokens must be an int"):
        TranscriptionRequest(max_new_tokens="10")
    with pytest.raises(TypeError, match="decoding must be a WhisperDecoding"):
        TranscriptionRequest(decoding={"temperature_fallback": True})
    with pytest.raises(TypeError, match=r"unknown transcription option\(s\) \['vad'\] \(vad=True is long_form='vad'\)"):
        TranscriptionRequest().updated(vad=True)
    with pytest.raises(TypeError, match="request must be a TranscriptionRequest"):
        TranscriptionRequest.of("fr", {})


def test_changes_apply_over_a_request():
    base = TranscriptionRequest(long_form="batched", batch_size=4)
    assert TranscriptionRequest.of(base, {"language": "fr"}) == TranscriptionRequest(
        language="fr", long_form="batched", batch_size=4
    )
    assert TranscriptionRequest.of(None, {}) == TranscriptionRequest()
    assert base.updated() is base


def test_the_command_builds_the_request_from_its_flags():
    argv = ["transcribe", "a.wav", "--out", "o.jsonl", "--long-form", "vad", "--batch-size", "3", "--task", "translate"]
    args = build_parser().parse_args([*argv, "--timestamps", "--temperature-fallback", "--language", "de"])
    assert request_of(args) == TranscriptionRequest(
        language="de",
        task="translate",
        return_timestamps=True,
        long_form="vad",
        batch_size=3,
        decoding=WhisperDecoding(temperature_fallback=True, seed=0),
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args(["transcribe", "a.wav", "--out", "o.jsonl", "--vad"])
