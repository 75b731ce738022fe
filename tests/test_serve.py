"""``seq2spec serve`` with the clients people use: language-tool-python against /v2/check, the openai SDK against
/v1/audio/transcriptions; answers equal to what the commands give, concurrent requests decoded together, bad
inputs refused with a JSON error while the server stays up."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import socket
import threading
import time
from pathlib import Path

import pytest
import requests
import soundfile
from hypothesis import example, given, settings
from hypothesis import strategies as st
from starlette.datastructures import FormData
from synthetic_audio import tone

from seq2spec import Seq2SeqSpeculator
from seq2spec.serve import languagetool
from seq2spec.serve.app import Limits, Services, build_app
from seq2spec.serve.batching import Batcher, QueueFull
from seq2spec.serve.languagetool import changes, lines_with_offsets, utf16_offsets
from seq2spec.serve.transcriptions import TranscriptionForm, transcriber
from seq2spec.spelling.settings import SpellingSettings
from seq2spec.whisper.languages import language_name
from seq2spec.whisper.records import records_one_by_one_on_failure, render
from seq2spec.whisper.request import TranscriptionRequest, WhisperDecoding

uvicorn = pytest.importorskip("uvicorn")
language_tool_python = pytest.importorskip("language_tool_python")
openai = pytest.importorskip("openai")

SAMPLES = Path(__file__).resolve().parents[1] / "recipes" / "data" / "asr_samples"
LINES = [
    "Thsi is a tset.",
    "She recieved a leter from her freind.",
    "I went hom 😀 early, becuase it was late.",
    "The café’s “menu” — MAX_RETRIES=5, mail a@b.org, 3.5kg.",
    "",
    "Teh quick brown fox jumsp over the lazy dog.",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Running:
    """A server on a free port in a thread of this process."""

    def __init__(self, services: Services) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = build_app(services)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def alive(self) -> bool:
        return requests.get(f"{self.url}/health", timeout=10).json()["status"] == "ok"


@pytest.fixture(scope="module")
def speller() -> Seq2SeqSpeculator:
    return Seq2SeqSpeculator()  # the shipped speller


@pytest.fixture(scope="module")
def whisper(toy_whisper_dirs) -> Seq2SeqSpeculator:
    return Seq2SeqSpeculator(str(toy_whisper_dirs[0]), str(toy_whisper_dirs[1]))


@pytest.fixture(scope="module")
def server(speller, whisper):
    services = Services(
        correct=lambda lines, language: speller.correct(lines, truncate=True),
        transcribe=transcriber(whisper, TranscriptionRequest(long_form="batched", batch_size=4)),
        limits=Limits(max_body_bytes=2 * 2**20, max_text_characters=5_000, max_audio_seconds=600),
    )
    running = Running(services)
    yield running
    running.stop()


# ----------------------------------------------------------------------------- LanguageTool


def test_language_tool_python_gets_the_speller_s_corrections(server, speller):
    tool = language_tool_python.LanguageTool("en-US", remote_server=server.url)
    text = "\n".join(LINES) + "\n"
    expected = "\n".join(speller.correct([line])[0] if line.strip() else line for line in LINES) + "\n"
    matches = tool.check(text)
    assert matches and all(match.rule_id == "SEQ2SPEC_SPELLER" for match in matches)
    assert language_tool_python.utils.correct(text, matches) == expected  # offsets right past the emoji too
    assert "This is a test." in expected and "😀" in expected


def test_concurrent_checks_are_decoded_together_each_as_alone(server, speller):
    batcher = server.app.state.batchers["text"]
    before = batcher.stats.batches, batcher.stats.jobs
    texts = [f"{line} Numbr {index}." for index, line in enumerate(LINES * 4) if line and "😀" not in line]

    def check(text: str) -> dict:
        answer = requests.post(f"{server.url}/v2/check", data={"language": "en-US", "text": text}, timeout=300)
        assert answer.status_code == 200, answer.text
        return answer.json()

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(check, texts))
    for text, answer in zip(texts, answers, strict=True):
        fixed = text
        for match in sorted(answer["matches"], key=lambda m: -m["offset"]):  # no astral characters in these
            start, end = match["offset"], match["offset"] + match["length"]
            fixed = fixed[:start] + match["replacements"][0]["value"] + fixed[end:]
        assert fixed == speller.correct([text])[0]
    batches, jobs = batcher.stats.batches - before[0], batcher.stats.jobs - before[1]
    assert jobs == len(texts) and batches < jobs  # requests shared batches
    health = requests.get(f"{server.url}/health", timeout=10).json()
    assert health["batches"]["text"] == dataclasses.asdict(batcher.stats)  # what operators see of the batching
    assert health["batches"]["text"]["largest_batch"] > 1


@pytest.mark.parametrize(
    ("data", "status", "named"),
    [
        ({"text": "Thsi is it."}, 400, "language"),
        ({"language": "de-DE", "text": "Ein Tset."}, 400, "de-DE"),
        ({"language": "en-US"}, 400, "'text' or 'data'"),
        ({"language": "en-US", "txt": "Thsi"}, 400, "'text' or 'data'"),
        ({"language": "en-US", "text": "word " * 1_200}, 413, "5000"),
        ({"language": "en-US", "data": "{not json"}, 400, "annotation"),
    ],
)
def test_bad_checks_get_a_json_error_and_the_server_stays_up(server, data, status, named):
    answer = requests.post(f"{server.url}/v2/check", data=data, timeout=60)
    assert answer.status_code == status and named in answer.json()["error"]["message"]
    assert server.alive()


def test_invalid_utf8_is_refused(server):
    answer = requests.post(
        f"{server.url}/v2/check",
        data=b"language=en-US&text=caf%C3%28",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timeout=60,
    )
    assert answer.status_code == 400 and "UTF-8" in answer.json()["error"]["message"]
    assert server.alive()


# ----------------------------------------------------------------------------- OpenAI transcriptions


def command_record(whisper, path: Path, **options) -> dict:
    """What ``seq2spec transcribe --long-form batched`` records for the file."""
    request = TranscriptionRequest(long_form="batched", batch_size=4, decoding=WhisperDecoding()).updated(**options)
    return records_one_by_one_on_failure(whisper, [path], request)[0]


def test_the_openai_sdk_gets_the_command_s_transcripts(server, whisper, tmp_path):
    path = tmp_path / "clip.wav"
    path.write_bytes((SAMPLES / "clip00_flite_slt.wav").read_bytes())
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused")
    plain = command_record(whisper, path)
    timed = command_record(whisper, path, return_timestamps=True, word_timestamps=True)
    assert plain["text"].strip()
    with path.open("rb") as audio:
        assert client.audio.transcriptions.create(model="whisper-1", file=audio).text == plain["text"].strip()
    with path.open("rb") as audio:
        text = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="text")
    assert text.strip() == plain["text"].strip()
    with path.open("rb") as audio:
        srt = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="srt")
    assert srt == render(command_record(whisper, path, return_timestamps=True), "srt")
    with path.open("rb") as audio:
        verbose = client.audio.transcriptions.create(
            model="whisper-1", file=audio, response_format="verbose_json", timestamp_granularities=["word", "segment"]
        )
    assert [word.word for word in verbose.words] == [word["word"].strip() for word in timed["words"]]
    assert [word.start for word in verbose.words] == [word["start"] for word in timed["words"]]
    assert abs(verbose.duration - soundfile.info(path).duration) < 0.01
    assert verbose.language == language_name(whisper.detect_language(path)) == "german"  # what the toy detects
    with path.open("rb") as audio:
        french = client.audio.transcriptions.create(
            model="whisper-1", file=audio, response_format="verbose_json", language="fr"
        )
    assert french.language == "french" and french.text == command_record(whisper, path, language="fr")["text"].strip()


def test_concurrent_transcriptions_share_batches(server, whisper, tmp_path):
    paths = sorted(SAMPLES.glob("clip*.wav"))[:8]
    batcher = server.app.state.batchers["audio"]
    before = batcher.stats.batches, batcher.stats.jobs

    def post(path: Path) -> str:
        with path.open("rb") as audio:
            answer = requests.post(
                f"{server.url}/v1/audio/transcriptions",
                files={"file": (path.name, audio)},
                data={"model": "whisper-1"},
                timeout=300,
            )
        assert answer.status_code == 200, answer.text
        return answer.json()["text"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(post, paths))
    assert texts == [command_record(whisper, path)["text"].strip() for path in paths]
    assert batcher.stats.jobs - before[1] == len(paths) and batcher.stats.batches - before[0] < len(paths)


def test_requests_in_different_languages_share_a_batch_each_in_its_own(whisper, tmp_path):
    """A language is the file's, not the batch's: requests that differ only in it wait for no batch of their own,
    and each file is decoded in its language, as the command records it."""
    fields = [FormData([("model", "whisper-1"), ("language", code)]) for code in ("fr", "de", "")]
    forms = [TranscriptionForm.of(form, "whisper-1") for form in fields]
    assert len({form.options for form in forms}) == 1
    assert [form.language for form in forms] == ["fr", "de", None]
    paths = [tmp_path / f"{index}.wav" for index in range(4)]
    for index, path in enumerate(paths):  # long tones: signals the toy model gives different texts
        soundfile.write(path, tone(36.0 + 4 * index, 16_000, 1, index + 2), 16_000)
    given = ["fr", "de", None, "fr"]
    request = TranscriptionRequest(batch_size=4, decoding=WhisperDecoding())
    records = transcriber(whisper, request)([(str(path), code) for path, code in zip(paths, given, strict=True)],
                                            forms[0].options)  # fmt: skip
    expected = [
        records_one_by_one_on_failure(whisper, [path], request.updated(language=code))[0]
        for path, code in zip(paths, given, strict=True)
    ]
    assert [record["text"] for record in records] == [record["text"] for record in expected]
    assert [record.get("language") for record in records] == given
    assert len({record["text"] for record in records}) > 1


@pytest.mark.parametrize(
    ("name", "content", "fields", "named"),
    [
        ("notes.wav", b"this is text, not audio\n", {"model": "whisper-1"}, "cannot be read as audio"),
        ("empty.wav", b"", {"model": "whisper-1"}, "empty"),
        ("cut.wav", None, {"model": "whisper-1"}, "cannot be read as audio"),
        ("clip.wav", "clip", {}, "'model'"),
        ("clip.wav", "clip", {"model": "whisper-1", "response_format": "xml"}, "response_format"),
        ("clip.wav", "clip", {"model": "whisper-1", "langauge": "en"}, "langauge"),
        ("clip.wav", "clip", {"model": "whisper-1", "temperature": "hot"}, "temperature"),
        ("clip.wav", "clip", {"model": "whisper-1", "language": "klingon"}, "'klingon' is not a language"),
    ],
)
def test_bad_uploads_get_a_json_error_and_the_server_stays_up(server, name, content, fields, named):
    clip = (SAMPLES / "clip00_flite_slt.wav").read_bytes()
    content = clip if content == "clip" else clip[:30] if content is None else content
    answer = requests.post(
        f"{server.url}/v1/audio/transcriptions", files={"file": (name, content)}, data=fields, timeout=120
    )
    assert answer.status_code == 400, answer.text
    assert named in answer.json()["error"]["message"]
    assert server.alive()


def test_no_file_and_too_large_bodies_are_refused(server):
    answer = requests.post(f"{server.url}/v1/audio/transcriptions", data={"model": "whisper-1"}, timeout=60)
    assert answer.status_code == 400
    big = b"\0" * (3 * 2**20)
    answer = requests.post(
        f"{server.url}/v1/audio/transcriptions",
        files={"file": ("big.wav", big)},
        data={"model": "whisper-1"},
        timeout=60,
    )
    assert answer.status_code == 413 and str(2 * 2**20) in answer.json()["error"]["message"]
    assert server.alive()


# ----------------------------------------------------------------------------- a speller of other languages


def test_a_speller_of_other_languages_corrects_each_request_in_its_own(tmp_path):
    seen: list[tuple[str, str | None]] = []

    def correct(lines: list[str], language: str | None) -> list[str]:
        seen.extend((line, language) for line in lines)
        return [line.upper() if language == "de" else line.lower() for line in lines]

    running = Running(Services(correct=correct, transcribe=None, speller_languages=("de", "en")))
    try:
        listed = requests.get(f"{running.url}/v2/languages", timeout=10).json()
        assert {"name": "German (Austria)", "code": "de", "longCode": "de-AT"} in listed
        assert {"name": "English (US)", "code": "en", "longCode": "en-US"} in listed
        tool = language_tool_python.LanguageTool("de-DE", remote_server=running.url)
        text = "Ein Tset.\nNoch einer."
        assert language_tool_python.utils.correct(text, tool.check(text)) == text.upper()
        english = requests.post(f"{running.url}/v2/check", data={"language": "en-GB", "text": "A TSET."}, timeout=60)
        assert english.json()["language"]["name"] == "English (GB)"
        assert [m["replacements"][0]["value"] for m in english.json()["matches"]] == ["a", "tset"]
        auto = requests.post(f"{running.url}/v2/check", data={"language": "auto", "text": "Wer?"}, timeout=60)
        assert auto.status_code == 200 and auto.json()["language"]["code"] == "de-DE"
        assert seen == [("Ein Tset.", "de"), ("Noch einer.", "de"), ("A TSET.", "en"), ("Wer?", None)]
        refused = requests.post(f"{running.url}/v2/check", data={"language": "fr", "text": "Un tset."}, timeout=60)
        assert refused.status_code == 400 and "de-AT" in refused.json()["error"]["message"]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:  # requests in two languages: a batch for each
            answers = list(
                pool.map(
                    lambda index: requests.post(
                        f"{running.url}/v2/check",
                        data={"language": "de-CH" if index % 2 else "en-US", "text": f"Zeile {index}"},
                        timeout=60,
                    ).json(),
                    range(8),
                )
            )
        for index, answer in enumerate(answers):
            text = f"Zeile {index}"
            matches = [language_tool_python.Match(match, text) for match in answer["matches"]]
            assert language_tool_python.utils.correct(text, matches) == (text.upper() if index % 2 else text.lower())
    finally:
        running.stop()


def test_one_speller_language_is_what_auto_means():
    seen = []
    running = Running(Services(correct=lambda lines, language: seen.append(language) or lines, transcribe=None,
                               speller_languages=("ru",)))  # fmt: skip
    try:
        answer = requests.post(f"{running.url}/v2/check", data={"language": "auto", "text": "Привет"}, timeout=60)
        assert answer.json()["language"] == {
            "name": "Russian (Russia)",
            "code": "ru-RU",
            "detectedLanguage": {"name": "Russian (Russia)", "code": "ru-RU", "confidence": 1.0, "source": "seq2spec"},
        }
        assert seen == ["ru"]
    finally:
        running.stop()


def test_the_speller_languages_flag_is_checked(capsys):
    from seq2spec.commands.main import build_parser, main

    parse = build_parser().parse_args
    assert parse(["serve"]).speller_languages == ["en"]
    assert parse(["serve", "--speller-languages", "DE, en,de"]).speller_languages == ["de", "en"]
    with pytest.raises(SystemExit):
        parse(["serve", "--speller-languages", "German!"])
    # the shipped speller's steps are an English corrector's: it cannot serve German
    assert main(["serve", "--no-transcriber", "--speller-languages", "de"]) == 2
    assert "fold_capitals" in capsys.readouterr().err
    assert languagetool.languages(("xx",)) == ({"name": "xx", "code": "xx", "longCode": "xx"},)


# ----------------------------------------------------------------------------- access, queue, protocol pieces


def test_an_api_key_is_required_where_one_is_set(speller):
    running = Running(Services(correct=lambda lines, _: speller.correct(lines), transcribe=None, api_key="secret"))
    try:
        url = f"{running.url}/v2/check"
        data = {"language": "en-US", "text": "Thsi"}
        refused = requests.post(url, data=data, timeout=60)
        assert refused.status_code == 401 and "API key" in refused.json()["error"]["message"]
        allowed = requests.post(url, data=data, headers={"Authorization": "Bearer secret"}, timeout=60)
        assert allowed.status_code == 200
        assert requests.get(f"{running.url}/health", timeout=10).status_code == 200  # health needs no key
    finally:
        running.stop()


def test_a_non_local_address_needs_a_key_or_no_auth():
    from seq2spec.commands.main import build_parser
    from seq2spec.commands.serve import check_access

    parse = build_parser().parse_args
    with pytest.raises(ValueError, match="--api-key"):
        check_access(parse(["serve", "--host", "0.0.0.0"]))
    assert check_access(parse(["serve", "--host", "0.0.0.0", "--api-key", "k"])) == "k"
    assert check_access(parse(["serve", "--host", "0.0.0.0", "--no-auth"])) is None
    assert check_access(parse(["serve"])) is None


def test_the_speculation_flags_reach_the_speller(monkeypatch):
    import seq2spec
    from seq2spec.commands.main import build_parser
    from seq2spec.commands.serve import build_services

    made = []

    class Recorded:
        spelling = SpellingSettings()

        def __init__(self, *arguments, **options):
            made.append(options)

    monkeypatch.setattr(seq2spec, "Seq2SeqSpeculator", Recorded)
    args = build_parser().parse_args(["serve", "--no-transcriber", "--no-fit-copy-width", "--num-draft-tokens", "3"])
    services = build_services(args)
    assert services.correct is not None and services.transcribe is None
    assert len(made) == 1 and made[0]["fit_copy_width"] is False and made[0]["num_draft_tokens"] == 3
    assert "draft" not in made[0]  # the speller's own default proposer
    for flag, expected in (("none", None), ("input-copy", "input-copy"), ("path/to/draft", "path/to/draft")):
        build_services(build_parser().parse_args(["serve", "--no-transcriber", "--speller-draft", flag]))
        assert made[-1]["draft"] == expected


def test_a_users_speller_is_served_with_its_distilled_layer_draft(toy_byte_models, tmp_path):
    from seq2spec.commands.correct import one_line
    from seq2spec.commands.main import build_parser
    from seq2spec.commands.serve import build_services
    from seq2spec.drafts import layer_draft, save_layer_draft

    big, _, tokenizer = toy_byte_models
    big.save_pretrained(tmp_path / "speller")
    tokenizer.save_pretrained(tmp_path / "speller")
    save_layer_draft(layer_draft(big, (1,)), tmp_path / "draft")
    flags = ["--speller", str(tmp_path / "speller"), "--speller-draft", str(tmp_path / "draft"), "--no-transcriber"]
    services = build_services(build_parser().parse_args(["serve", *flags]))
    lines = ["the cat sat on teh mat", "a dog barked", "she went home to sleep at night"]
    alone = Seq2SeqSpeculator(str(tmp_path / "speller"), str(tmp_path / "draft"))
    assert alone.shares_encoder
    assert services.correct(lines, None) == [one_line(line) for line in alone.correct(lines, truncate=True)]


def test_a_full_queue_answers_503_with_retry_after():
    decoding, release = threading.Event(), threading.Event()

    def slow(lines, language):
        decoding.set()
        release.wait(30)
        return lines

    running = Running(Services(correct=slow, transcribe=None, limits=Limits(max_waiting_rows=2)))

    def waiting_rows() -> int:
        return requests.get(f"{running.url}/health", timeout=10).json()["waiting_rows"]["text"]

    try:
        url = f"{running.url}/v2/check"
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            first = pool.submit(requests.post, url, data={"language": "en-US", "text": "a\nb"}, timeout=60)
            assert decoding.wait(30)  # the first request's two rows are being decoded
            waiting = pool.submit(requests.post, url, data={"language": "en-US", "text": "c\nd"}, timeout=60)
            deadline = time.monotonic() + 30
            while waiting_rows() < 2:  # two more wait: the queue is full
                assert time.monotonic() < deadline
                time.sleep(0.05)
            refused = requests.post(url, data={"language": "en-US", "text": "e"}, timeout=60)
            assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
            release.set()
            assert first.result().status_code == 200 and waiting.result().status_code == 200
    finally:
        release.set()
        running.stop()


def test_a_job_whose_client_left_before_its_batch_is_dropped():
    started, release, seen = threading.Event(), threading.Event(), []

    def decode(rows, options):
        seen.append(list(rows))
        started.set()
        release.wait(10)
        return rows

    batcher = Batcher(decode, max_rows=8, gather_seconds=0.0)

    async def scenario():
        first = asyncio.ensure_future(batcher.submit(["a"]))
        await asyncio.to_thread(started.wait, 10)
        gone = asyncio.ensure_future(batcher.submit(["b"]))
        kept = asyncio.ensure_future(batcher.submit(["c"]))
        await asyncio.sleep(0.05)
        gone.cancel()
        release.set()
        return await first, await kept

    assert asyncio.run(scenario()) == (["a"], ["c"])
    batcher.close()
    assert seen == [["a"], ["c"]] and batcher.stats.dropped == 1


def test_jobs_with_other_options_wait_for_their_own_batch():
    seen = []
    batcher = Batcher(lambda rows, options: seen.append((options, list(rows))) or rows, gather_seconds=0.2)

    async def scenario():
        return await asyncio.gather(batcher.submit([1], "x"), batcher.submit([2], "y"), batcher.submit([3], "x"))

    assert asyncio.run(scenario()) == [[1], [2], [3]]
    batcher.close()
    assert sorted(seen) == [("x", [1, 3]), ("y", [2])]
    with pytest.raises(QueueFull):
        full = Batcher(lambda rows, options: rows, max_waiting_rows=1)
        asyncio.run(full.submit([1, 2]))


def test_clients_answered_by_a_batch_refill_the_next_one():
    """Four clients answered together come back one after another, while two more rows wait: one batch of six."""
    seen = []

    def decode(rows, options):
        seen.append(list(rows))
        time.sleep(0.5)  # the next batch waits up to 0.05 s after this one for its clients to return
        return rows

    batcher = Batcher(decode, max_rows=8, gather_seconds=0.0)

    async def client(name: str, delay: float) -> list:
        first = await batcher.submit([name])
        await asyncio.sleep(delay)  # the answers go out one after another
        return first + await batcher.submit([name])

    async def late(name: str) -> list:
        await asyncio.sleep(0.2)  # arrives while the first batch decodes
        return await batcher.submit([name])

    async def scenario():
        clients = [client(name, 0.004 * index) for index, name in enumerate("abcd")]
        return await asyncio.gather(*clients, late("e"), late("f"))

    assert asyncio.run(scenario()) == [[n, n] for n in "abcd"] + [["e"], ["f"]]
    batcher.close()
    assert sorted(seen[0]) == list("abcd") and sorted(seen[1]) == list("abcdef") and len(seen) == 2


def test_a_single_client_s_requests_never_wait_for_others():
    batcher = Batcher(
        lambda rows, options: time.sleep(0.05) or rows, gather_seconds=0.0, refill_share=200.0, max_refill_seconds=60
    )

    async def scenario():  # a refill wait would be 200 x 0.05 s after each batch
        return [await asyncio.wait_for(batcher.submit([index]), timeout=5) for index in range(3)]

    assert asyncio.run(scenario()) == [[0], [1], [2]]
    batcher.close()
    assert batcher.stats.batches == 3


@pytest.mark.parametrize("reading", [True, False])
def test_a_batch_waits_for_the_requests_being_read(reading):
    seen = []
    batcher = Batcher(lambda rows, options: seen.append(list(rows)) or rows, gather_seconds=0.0, arrival_seconds=5.0)

    async def read_then_submit(name: str, reading_seconds: float) -> list:
        with batcher.arriving() if reading else contextlib.nullcontext():
            await asyncio.sleep(reading_seconds)  # the body still arriving
            work = batcher.enqueue([name])
        return await work

    async def scenario():
        return await asyncio.gather(read_then_submit("a", 0.0), read_then_submit("b", 0.3))

    assert asyncio.run(scenario()) == [["a"], ["b"]]
    batcher.close()
    assert seen == ([["a", "b"]] if reading else [["a"], ["b"]])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
@example(":", "0:0")  # two insertions widened onto the one word between them
def test_the_changes_turn_a_line_into_its_correction(line, corrected):
    line, corrected = line.replace("\n", " ").replace("\r", " "), corrected.replace("\n", " ").replace("\r", " ")
    fixed = line
    for change in reversed(changes(line, corrected)):
        assert 0 <= change.start <= change.end <= len(line)
        fixed = fixed[: change.start] + change.replacement + fixed[change.end :]
    assert fixed == corrected


def test_offsets_count_utf16_units_and_lines_keep_their_starts():
    assert utf16_offsets("a😀b") == [0, 1, 3, 4]
    assert lines_with_offsets("ab\r\ncd\ref\n") == [(0, "ab"), (4, "cd"), (7, "ef")]


def test_the_readme_clients_example_runs_as_printed(server, speller, tmp_path, monkeypatch, capsys):
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- serve-example -->\n```python\n(.*?)```", readme, re.S)
    assert block, "README.md lost its serve example"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "talk.wav").write_bytes((SAMPLES / "clip00_flite_slt.wav").read_bytes())
    exec(compile(block.group(1).replace("http://127.0.0.1:8080", server.url), "README serve example", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == speller.correct(["Thsi is a tset."])[0] == "This is a test."
    assert printed[1] == "1" and " --> " in printed[2]


def test_sigterm_answers_the_request_in_flight_then_stops(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    port = free_port()
    command = [sys.executable, "-m", "seq2spec", "serve", "--port", str(port), "--no-transcriber", "--threads", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
            try:
                requests.get(f"{url}/health", timeout=2)
                break
            except requests.ConnectionError:
                time.sleep(0.2)
        text = "\n".join(f"Thsi is lien numbr {index} of a long lettr." for index in range(200))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(
                requests.post, f"{url}/v2/check", data={"language": "en-US", "text": text}, timeout=600
            )
            time.sleep(2.0)  # the request is in (its 200 lines take the server several seconds)
            os.kill(process.pid, signal.SIGTERM)
            assert answer.result().status_code == 200 and len(answer.result().json()["matches"]) >= 200
        assert process.wait(timeout=120) == 143  # stopped by SIGTERM, as the other commands report it
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{url}/health", timeout=2)
    finally:
        if process.poll() is None:
            process.kill()


def test_a_decoding_fault_answers_500_as_json_and_the_server_stays_up():
    def broken(lines, language):
        raise RuntimeError("a fault in the model")

    running = Running(Services(correct=broken, transcribe=None, limits=Limits(max_waiting_rows=3)))
    try:
        url = f"{running.url}/v2/check"
        failed = requests.post(url, data={"language": "en-US", "text": "Thsi"}, timeout=60)
        assert failed.status_code == 500 and "a fault in the model" in failed.json()["error"]["message"]
        too_many = requests.post(url, data={"language": "en-US", "text": "a\nb\nc\nd"}, timeout=60)
        assert too_many.status_code == 413 and "4 lines" in too_many.json()["error"]["message"]
        assert running.alive()
    finally:
        running.stop()
