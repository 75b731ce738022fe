"""The package's shape: imports run one way (commands -> speculator -> core and drafts -> leaves) with no cycle, and
``SpeculationOptions`` is the one list of option names the commands and the Ray runner use."""

from __future__ import annotations

import argparse
import ast
from dataclasses import fields
from pathlib import Path

import pytest

from seq2spec.commands import ray_cluster
from seq2spec.commands.flags import flag_name, speculation_changes
from seq2spec.commands.main import build_parser
from seq2spec.options import SpeculationOptions

PACKAGE = Path(__file__).resolve().parents[1] / "seq2spec"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The seq2spec modules ``path`` imports, at any depth (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("seq2spec")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("seq2spec"):
            found.add(node.module)
            # "from seq2spec.decoding import cache" names a module too
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {target for target in imports_of(path) if target in modules and target != name}
        for name, path in modules.items()
    }


def test_no_import_cycles(graph):
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                raise AssertionError("import cycle: " + " -> ".join([*trail, module, target]))
            if target not in state:
                visit(target, [*trail, module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("seq2spec.decoding", ("seq2spec.whisper", "seq2spec.commands", "seq2spec.drafts", "seq2spec.speculator")),
        ("seq2spec.drafts", ("seq2spec.whisper", "seq2spec.commands", "seq2spec.speculator")),
        ("seq2spec.whisper", ("seq2spec.commands", "seq2spec.speculator", "seq2spec.drafts")),
        ("seq2spec.options", ("seq2spec.",)),
        ("seq2spec.speculator", ("seq2spec.commands",)),
    ],
)
def test_imports_run_one_way(graph, layer, forbidden):
    offending = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module == layer or module.startswith(layer + ".")
        for target in targets
        if target.startswith(forbidden)
    ]
    assert not offending, offending


def test_core_modules_know_nothing_of_text_audio_or_files():
    for path in (PACKAGE / "decoding").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        for word in ("soundfile", "tokenizer(", "open(", "Path("):
            assert word not in source, f"{path.name} uses {word}"


def speculation_dests(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    group = next(group for group in parser._action_groups if (group.title or "").startswith("speculation"))
    return {action.dest: action.option_strings for action in group._group_actions}


@pytest.mark.parametrize("command", ["correct", "transcribe", "demo"])
def test_every_option_has_exactly_one_flag_per_command(command):
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = subparsers.choices[command]
    dests = speculation_dests(parser)
    assert set(dests) == set(SpeculationOptions.field_names())
    for option in fields(SpeculationOptions):
        assert flag_name(option.name) in dests[option.name]
        action = next(a for a in parser._actions if a.dest == option.name)
        assert option.metadata["help"] in action.help  # the help text comes from the dataclass


def test_flags_set_only_what_the_user_gave():
    args = build_parser().parse_args(
        ["correct", "--num-draft-tokens", "7", "--no-adaptive", "--acceptance", "batch-min", "--input-copy"]
    )
    assert speculation_changes(args) == {
        "num_draft_tokens": 7,
        "adaptive": False,
        "acceptance": "batch-min",
        "input_copy": True,
    }
    assert SpeculationOptions().updated(**speculation_changes(args)).num_draft_tokens == 7
    assert speculation_changes(build_parser().parse_args(["transcribe", "x.wav", "--out", "o.jsonl"])) == {}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["correct", "--acceptance", "batch-max"])


@pytest.mark.parametrize(
    "command, keys", [("correct", ray_cluster.CORRECT_KEYS), ("transcribe", ray_cluster.TRANSCRIBE_KEYS)]
)
def test_ray_actors_receive_exactly_the_options(command, keys):
    argv = [command, "--ray", "--min-draft-confidence", "0.5", "--out", "o"]
    args = build_parser().parse_args(argv if command == "correct" else [command, "a.wav", *argv[1:]])
    options = ray_cluster.actor_options(args, keys)
    passed = set(options) - set(keys) - {"threads"}
    assert passed == set(SpeculationOptions.field_names())
    assert speculation_changes(argparse.Namespace(**options)) == {"min_draft_confidence": 0.5}


def test_unknown_option_names_are_refused():
    with pytest.raises(TypeError, match="unknown speculation option.*num_draft_tokens"):
        SpeculationOptions().updated(draft_tokens=3)
