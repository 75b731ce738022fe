"""CTranslate2 -> transformers Whisper conversion, on a small random Whisper written to CTranslate2 format here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from toy_helpers import WHISPER_TOY_SPECIALS, build_toy_whisper
from transformers import WhisperForConditionalGeneration

from seq2spec.commands.main import main
from seq2spec.whisper.ct2 import (
    ENGLISH_ONLY_VOCABULARY,
    Ct2FormatError,
    convert_ct2_whisper,
    load_whisper_tokenizer,
    read_ct2_model,
    whisper_generation_config,
    write_ct2_model,
)

SPECIALS = list(WHISPER_TOY_SPECIALS)
TIMESTAMPS = 1501
BYTES = 256


def write_tokenizer(path: Path) -> None:
    """A byte-level BPE with no merges plus Whisper's special tokens (ids 256..266)."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: index for index, token in enumerate(sorted(alphabet))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(SPECIALS)
    tokenizer.save(str(path))


def random_whisper(seed: int = 0) -> WhisperForConditionalGeneration:
    return build_toy_whisper(seed)


def ct2_variables(model: WhisperForConditionalGeneration, dtype=np.float32) -> dict[str, np.ndarray]:
    """The CTranslate2 names and fused layouts of a transformers Whisper (what ct2-transformers-converter writes)."""
    state = {name: value.detach().numpy().astype(dtype) for name, value in model.state_dict().items()}
    variables: dict[str, np.ndarray] = {}

    def linear(target: str, source: str) -> None:
        variables[f"{target}/weight"] = state[f"{source}.weight"]
        if f"{source}.bias" in state:
            variables[f"{target}/bias"] = state[f"{source}.bias"]

    def norm(target: str, source: str) -> None:
        variables[f"{target}/gamma"], variables[f"{target}/beta"] = state[f"{source}.weight"], state[f"{source}.bias"]

    def fused(target: str, source: str, names: list[str]) -> None:
        variables[f"{target}/weight"] = np.concatenate([state[f"{source}.{n}.weight"] for n in names])
        zeros = np.zeros(model.config.d_model, dtype=dtype)
        variables[f"{target}/bias"] = np.concatenate([state.get(f"{source}.{n}.bias", zeros) for n in names])

    for conv in ("conv1", "conv2"):
        linear(f"encoder/{conv}", f"model.encoder.{conv}")
    variables["encoder/position_encodings/encodings"] = state["model.encoder.embed_positions.weight"]
    variables["decoder/position_encodings/encodings"] = state["model.decoder.embed_positions.weight"]
    variables["decoder/embeddings/weight"] = state["model.decoder.embed_tokens.weight"]
    variables["encoder/num_heads"] = np.array(model.config.encoder_attention_heads, dtype=np.int32)
    variables["decoder/num_heads"] = np.array(model.config.decoder_attention_heads, dtype=np.int32)
    norm("encoder/layer_norm", "model.encoder.layer_norm")
    norm("decoder/layer_norm", "model.decoder.layer_norm")
    for stack, count in (("encoder", model.config.encoder_layers), ("decoder", model.config.decoder_layers)):
        for i in range(count):
            source, target = f"model.{stack}.layers.{i}", f"{stack}/layer_{i}"
            fused(f"{target}/self_attention/linear_0", f"{source}.self_attn", ["q_proj", "k_proj", "v_proj"])
            linear(f"{target}/self_attention/linear_1", f"{source}.self_attn.out_proj")
            norm(f"{target}/self_attention/layer_norm", f"{source}.self_attn_layer_norm")
            if stack == "decoder":
                linear(f"{target}/attention/linear_0", f"{source}.encoder_attn.q_proj")
                fused(f"{target}/attention/linear_1", f"{source}.encoder_attn", ["k_proj", "v_proj"])
                linear(f"{target}/attention/linear_2", f"{source}.encoder_attn.out_proj")
                norm(f"{target}/attention/layer_norm", f"{source}.encoder_attn_layer_norm")
            linear(f"{target}/ffn/linear_0", f"{source}.fc1")
            linear(f"{target}/ffn/linear_1", f"{source}.fc2")
            norm(f"{target}/ffn/layer_norm", f"{source}.final_layer_norm")
    return variables


CT2_CONFIG = {
    "alignment_heads": [[1, 0], [1, 3]],
    "lang_ids": [BYTES + 2, BYTES + 3, BYTES + 4],
    "suppress_ids": [5, 6, 7],
    "suppress_ids_begin": [32, BYTES],
}


def write_ct2_directory(model, directory: Path, *, split: bool = False, dtype=np.float32) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    aliases = [("decoder/projection/weight", "decoder/embeddings/weight")]
    write_ct2_model(directory / "model.bin", "WhisperSpec", 3, ct2_variables(model, dtype), aliases)
    if split:
        data = (directory / "model.bin").read_bytes()
        (directory / "model.bin").unlink()
        (directory / "model.bin.part1").write_bytes(data[: len(data) // 2])
        (directory / "model.bin.part2").write_bytes(data[len(data) // 2 :])
    (directory / "config.json").write_text(json.dumps(CT2_CONFIG))
    write_tokenizer(directory / "tokenizer.json")
    return directory


def test_an_english_only_model_gets_no_language_or_task_tokens(tmp_path):
    """CTranslate2's config of tiny.en lists language ids as a multilingual model's: an English-only model (OpenAI's
    51,864 tokens) takes a prompt of neither, as openai-whisper and faster-whisper run it."""
    write_tokenizer(tmp_path / "tokenizer.json")
    tokenizer = load_whisper_tokenizer(tmp_path / "tokenizer.json", BYTES + len(SPECIALS) + TIMESTAMPS)
    shape = (CT2_CONFIG, 448, 4, 6)
    english = whisper_generation_config(tokenizer, *shape, vocab_size=ENGLISH_ONLY_VOCABULARY)
    assert english.is_multilingual is False
    assert getattr(english, "lang_to_id", None) is None and getattr(english, "task_to_id", None) is None
    multilingual = whisper_generation_config(tokenizer, *shape, vocab_size=ENGLISH_ONLY_VOCABULARY + 1)
    assert multilingual.is_multilingual is True and len(multilingual.lang_to_id) == 3


@pytest.fixture(scope="module")
def whisper_and_features():
    model = random_whisper()
    generator = torch.Generator().manual_seed(1)
    features = 2 * torch.randn(3, 80, 1, generator=generator) + 0.3 * torch.randn(3, 80, 3000, generator=generator)
    return model, features


@pytest.mark.parametrize("split", [False, True])
def test_round_trip_keeps_weights_and_generation(tmp_path, whisper_and_features, split):
    original, features = whisper_and_features
    source = write_ct2_directory(original, tmp_path / "ct2", split=split)
    converted = WhisperForConditionalGeneration.from_pretrained(convert_ct2_whisper(source, tmp_path / "hf")).eval()

    original_state, converted_state = original.state_dict(), converted.state_dict()
    assert original_state.keys() == converted_state.keys()
    for name, value in original_state.items():
        assert torch.equal(value, converted_state[name]), name

    generation = converted.generation_config
    assert generation.lang_to_id == {"<|en|>": BYTES + 2, "<|fr|>": BYTES + 3, "<|de|>": BYTES + 4}
    assert generation.task_to_id == {"transcribe": BYTES + 6, "translate": BYTES + 5}
    assert generation.no_timestamps_token_id == BYTES + 10
    assert generation.decoder_start_token_id == BYTES + 1 and generation.eos_token_id == BYTES
    assert generation.suppress_tokens == [5, 6, 7] and generation.begin_suppress_tokens == [32, BYTES]
    assert generation.alignment_heads == [[1, 0], [1, 3]]

    original.generation_config = generation
    for kwargs in ({"language": "fr", "task": "transcribe"}, {"language": "de", "task": "translate"}, {}):
        expected = original.generate(features, max_new_tokens=12, **kwargs)
        assert len({tuple(row) for row in expected.tolist()}) > 1  # the rows differ: the comparison means something
        assert torch.equal(converted.generate(features, max_new_tokens=12, **kwargs), expected)
    with_timestamps = {"max_new_tokens": 12, "return_timestamps": True, "language": "en"}
    expected = original.generate(features, **with_timestamps)
    assert torch.equal(converted.generate(features, **with_timestamps), expected)


def test_processor_round_trip(tmp_path, whisper_and_features):
    from transformers import WhisperProcessor

    source = write_ct2_directory(whisper_and_features[0], tmp_path / "ct2")
    processor = WhisperProcessor.from_pretrained(convert_ct2_whisper(source, tmp_path / "hf"))
    assert processor.feature_extractor.feature_size == 80
    assert len(processor.tokenizer) == BYTES + len(SPECIALS) + TIMESTAMPS
    ids = processor.tokenizer("hello", add_special_tokens=False).input_ids
    assert processor.tokenizer.decode(ids) == "hello"
    assert processor.tokenizer.convert_ids_to_tokens(BYTES + len(SPECIALS) + 50) == "<|1.00|>"
    # transformers reads the first timestamp id as the last special id + 1: every special must count as special
    first_timestamp = processor.tokenizer.convert_tokens_to_ids("<|0.00|>")
    assert processor.tokenizer.all_special_ids[-1] + 1 == first_timestamp
    tokens = [first_timestamp + 50, *ids, first_timestamp + 125, processor.tokenizer.eos_token_id]
    offsets = processor.tokenizer.decode(tokens, output_offsets=True)["offsets"]
    assert [(o["text"], o["timestamp"]) for o in offsets] == [("hello", (1.0, 2.5))]


def test_float16_and_int8_weights(tmp_path, whisper_and_features):
    original, _ = whisper_and_features
    source = write_ct2_directory(original, tmp_path / "ct2", dtype=np.float16)
    converted = WhisperForConditionalGeneration.from_pretrained(convert_ct2_whisper(source, tmp_path / "hf"))
    weight = original.model.encoder.layers[0].fc1.weight
    assert torch.equal(converted.model.encoder.layers[0].fc1.weight, weight.half().float())

    quantised = tmp_path / "q.bin"
    scale = np.array([2.0, 4.0], dtype=np.float32)
    values = np.array([[10, -20], [8, 4]], dtype=np.int8)
    write_ct2_model(quantised, "WhisperSpec", 3, {"x/weight": values, "x/weight_scale": scale})
    from seq2spec.whisper.ct2 import _weight

    assert np.array_equal(_weight(read_ct2_model([quantised]), "x"), np.array([[5.0, -10.0], [2.0, 1.0]]))


def test_bad_files_are_named(tmp_path, whisper_and_features):
    source = write_ct2_directory(whisper_and_features[0], tmp_path / "ct2")
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes((source / "model.bin").read_bytes()[:5000])
    with pytest.raises(Ct2FormatError, match="ends early"):
        read_ct2_model([truncated])
    other = tmp_path / "other.bin"
    write_ct2_model(other, "TransformerSpec", 1, {"a": np.zeros(2, dtype=np.float32)})
    with pytest.raises(Ct2FormatError, match="not a Whisper model"):
        convert_ct2_whisper(write_ct2_directory(whisper_and_features[0], tmp_path / "x"), tmp_path / "o", files=[other])
    (source / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match="no tokenizer.json"):
        convert_ct2_whisper(source, tmp_path / "hf")
    with pytest.raises(FileNotFoundError, match="no model.bin"):
        convert_ct2_whisper(tmp_path, tmp_path / "hf")


def test_command_line(tmp_path, whisper_and_features, capsys):
    source = write_ct2_directory(whisper_and_features[0], tmp_path / "ct2", split=True)
    assert main(["convert-ct2", str(source), str(tmp_path / "hf")]) == 0
    assert (tmp_path / "hf" / "model.safetensors").is_file()
    assert main(["convert-ct2", str(tmp_path / "missing"), str(tmp_path / "hf2")]) == 2
    assert "no model.bin" in capsys.readouterr().err


def test_embedded_base_is_converted_once_into_the_cache(tmp_path, monkeypatch, whisper_and_features):
    """The loader converts the wheels' CTranslate2 files once into $SEQ2SPEC_CACHE and reuses the result."""
    from seq2spec import default_models

    source = write_ct2_directory(whisper_and_features[0], tmp_path / "wheel", split=True)
    parts = [source / "model.bin.part1", source / "model.bin.part2"]
    monkeypatch.setattr(default_models, "whisper_base_sources", lambda: (source, parts))
    monkeypatch.setenv("SEQ2SPEC_CACHE", str(tmp_path / "cache"))
    first = default_models.whisper_base_dir()
    assert first == tmp_path / "cache" / "whisper-base"
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    for part in parts:
        part.unlink()  # a second call must not need the sources
    assert default_models.whisper_base_dir() == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    model, processor = default_models.load_whisper_base()
    assert model.config.d_model == 64 and processor.feature_extractor.feature_size == 80


def test_cache_location_follows_the_environment(monkeypatch, tmp_path):
    from seq2spec.default_models import cache_dir

    monkeypatch.delenv("SEQ2SPEC_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "seq2spec"
    monkeypatch.setenv("SEQ2SPEC_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


@pytest.fixture()
def cached_base(tmp_path, monkeypatch, whisper_and_features):
    """``default_models`` pointed at a small CTranslate2 Whisper as its wheels and at a cache in ``tmp_path``."""
    from seq2spec import default_models

    source = write_ct2_directory(whisper_and_features[0], tmp_path / "wheel", split=True)
    parts = [source / "model.bin.part1", source / "model.bin.part2"]
    monkeypatch.setattr(default_models, "whisper_base_sources", lambda: (source, parts))
    monkeypatch.setenv("SEQ2SPEC_CACHE", str(tmp_path / "cache"))
    return default_models


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json", "config.json"])
def test_a_truncated_cache_file_is_named_and_converted_again(cached_base, capsys, name):
    folder = cached_base.whisper_base_dir()
    size = (folder / name).stat().st_size
    with open(folder / name, "r+b") as handle:  # what a killed or full-disk write would leave
        handle.truncate(size // 2)
    capsys.readouterr()
    assert cached_base.whisper_base_dir() == folder
    assert f"the cached copy is damaged: {name} ({size // 2:,} bytes, {size:,} written)" in capsys.readouterr().err
    assert (folder / name).stat().st_size == size
    model, _ = cached_base.load_whisper_base()
    assert model.config.d_model == 64


def test_a_cache_damaged_within_its_sizes_names_the_folder_to_delete(cached_base):
    folder = cached_base.whisper_base_dir()
    config = folder / "config.json"
    config.write_bytes(b"{" + b"x" * (config.stat().st_size - 1))  # same size, not JSON
    with pytest.raises(cached_base.CacheError, match="cannot be loaded") as caught:
        cached_base.load_whisper_base()
    assert str(folder) in str(caught.value) and "delete that folder" in str(caught.value)
    assert "SEQ2SPEC_CACHE" in str(caught.value)


def test_an_unwritable_cache_says_where_to_move_it(cached_base, monkeypatch, capsys):
    unwritable = Path("/sys/seq2spec-cache-test")
    try:
        unwritable.mkdir()
    except OSError:
        pass
    else:
        unwritable.rmdir()
        pytest.skip("/sys is writable here")
    monkeypatch.setenv("SEQ2SPEC_CACHE", str(unwritable))
    with pytest.raises(cached_base.CacheError, match="set SEQ2SPEC_CACHE to another folder"):
        cached_base.whisper_base_dir()
