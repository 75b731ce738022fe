"""The package's shape: imports run one way (commands -> speculator -> spelling, whisper, drafts -> decoding ->
leaves) with no cycle, counting the package ``__init__`` modules an import runs; the package root holds few modules;
the core imports nothing inside functions; and ``SpeculationOptions`` is the one list of option names the commands
and the Ray runner use."""

from __future__ import annotations

import argparse
import ast
from dataclasses import fields
from pathlib import Path

import pytest

from seq2spec.commands import ray_cluster, transcribe
from seq2spec.commands.flags import flag_name, speculation_changes
from seq2spec.commands.main import build_parser
from seq2spec.options import SpeculationOptions

PACKAGE = Path(__file__).resolve().parents[1] / "seq2spec"
# Lowest first. A module imports modules of its own group (``seq2spec.<group>``) or of groups in lower layers only.
LAYERS = (
    ("seq2spec.options", "seq2spec.int8", "seq2spec.memory"),
    ("seq2spec.decoding",),
    ("seq2spec.drafts",),
    ("seq2spec.spelling", "seq2spec.whisper"),
    ("seq2spec.arguments", "seq2spec.pairing", "seq2spec.default_models"),
    ("seq2spec.speculator",),
    ("seq2spec.serve",),
    ("seq2spec.commands",),
    ("seq2spec.__main__",),
)
MAX_ROOT_MODULES = 10
MAX_FUNCTION_LINES = 60  # decorators included
NO_FUNCTION_LEVEL_IMPORTS = ("decoding", "drafts", "int8")  # subpackages whose imports all run at import time


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, prefix: str = "seq2spec") -> set[str]:
    """The modules of package ``prefix`` that ``path`` imports, at any depth (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == prefix}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == prefix:
            found.add(node.module)
            # "from seq2spec.decoding import cache" names a module too
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def packages_run(target: str) -> set[str]:
    """What importing ``target`` runs: the ``__init__`` of every package on its dotted path, and ``target``."""
    parts = target.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts) + 1)}


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules its imports run, package ``__init__`` modules included (importing
    ``seq2spec.x.y`` runs ``seq2spec/x/__init__.py`` first). A package that holds the importer is left out: it is
    already running when the importer runs."""
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set().union(*(packages_run(target) for target in imports_of(path, package.name)))
        running = packages_run(name)
        graph[name] = {target for target in targets if target in modules and target not in running}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*trail[trail.index(target) :], target] if target in trail else [*trail, target]
            if target not in state:
                cycle = visit(target, [*trail, target])
                if cycle is not None:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle is not None:
                return cycle
    return None


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE)


def test_no_import_cycles(graph):
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    """``leaf`` imports a module of ``sub``, which runs ``sub/__init__``, which imports ``user``, which imports
    ``leaf`` again (inside a function, where a cycle hides until it runs): a cycle only its ``__init__`` edge shows."""
    package = write_tree(
        tmp_path / "seq2spec",
        {
            "__init__.py": "",
            "leaf.py": "from seq2spec.sub.helper import VALUE\n",
            "sub/__init__.py": "from seq2spec.sub.user import run\n",
            "sub/helper.py": "VALUE = 1\n",
            "sub/user.py": "def run():\n    from seq2spec.leaf import VALUE\n\n    return VALUE\n",
        },
    )
    graph = import_graph(package)
    assert graph["seq2spec.leaf"] == {"seq2spec.sub", "seq2spec.sub.helper"}
    assert find_cycle(graph) == ["seq2spec.leaf", "seq2spec.sub", "seq2spec.sub.user", "seq2spec.leaf"]
    (package / "sub" / "__init__.py").write_text("", encoding="utf-8")  # the same imports without the __init__ one
    assert find_cycle(import_graph(package)) is None


def test_a_package_importing_its_own_modules_is_no_cycle(tmp_path):
    """``sub/__init__`` imports ``sub.a``, which imports ``sub.b``: ``sub`` is already running when they run."""
    package = write_tree(
        tmp_path / "seq2spec",
        {
            "__init__.py": "from seq2spec.sub import a\n",
            "sub/__init__.py": "from seq2spec.sub.a import A\n",
            "sub/a.py": "from seq2spec.sub.b import B\n\nA = B\n",
            "sub/b.py": "B = 1\n",
        },
    )
    graph = import_graph(package)
    assert graph["seq2spec.sub.a"] == {"seq2spec.sub.b"} and find_cycle(graph) is None


def layer_of(module: str) -> tuple[int, str]:
    """The layer and group (``seq2spec.<first name>``) of a module of the package."""
    group = ".".join(module.split(".")[:2])
    for index, groups in enumerate(LAYERS):
        if group in groups:
            return index, group
    raise AssertionError(f"{module} is in no layer of LAYERS")


def test_no_module_imports_upward(graph):
    """Every import goes to the importer's own group or to a lower layer: nothing in decoding, drafts or int8 can
    reach back up into what imports it (as a root module importing the drafts once made the core import itself)."""
    offending = []
    for module, targets in graph.items():
        if module == "seq2spec":  # the package's face: its names load lazily, from every layer
            continue
        layer, group = layer_of(module)
        for target in targets:
            target_layer, target_group = layer_of(target)
            if target_group != group and target_layer >= layer:
                offending.append(f"{module} imports {target}")
    assert not offending, offending


def test_the_package_root_holds_few_modules():
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(modules) <= MAX_ROOT_MODULES, modules


def test_no_class_runs_past_300_lines():
    offending = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 300:
                offending.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert not offending, offending


@pytest.mark.parametrize("subpackage", NO_FUNCTION_LEVEL_IMPORTS)
def test_no_function_level_imports_of_the_package(subpackage):
    """An import inside a function hides a dependency (and any cycle through it) until the function runs."""
    offending = []
    for path in (PACKAGE / subpackage).rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                names = {*imports_of_node(function)}
                offending += [f"{path.relative_to(PACKAGE)}: {function.name} imports {name}" for name in names]
    assert not offending, offending


def functions_longer_than(limit: int, folder: Path) -> list[str]:
    """``path: name`` of each function under ``folder`` longer than ``limit`` lines, decorators included."""
    offending = []
    for path in folder.rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([function.lineno, *(decorator.lineno for decorator in function.decorator_list)])
                if function.end_lineno - first + 1 > limit:
                    offending.append(f"{path.relative_to(PACKAGE)}: {function.name}")
    return offending


@pytest.mark.parametrize("subpackage", NO_FUNCTION_LEVEL_IMPORTS)
def test_core_functions_fit_on_a_screen(subpackage):
    offending = functions_longer_than(MAX_FUNCTION_LINES, PACKAGE / subpackage)
    assert not offending, offending


def test_int8_kernels_are_called_in_one_place():
    """One quantisation rule (packing, activation range) for the int8 mode and the lean drafts alike."""
    kernels = PACKAGE / "int8" / "kernels.py"
    callers = [path for path in PACKAGE.rglob("*.py") if "torch.ops.quantized" in path.read_text(encoding="utf-8")]
    assert callers == [kernels]


def imports_of_node(node: ast.AST) -> set[str]:
    """The seq2spec modules imported anywhere inside ``node``."""
    found = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Import):
            found |= {alias.name for alias in inner.names if alias.name.split(".")[0] == "seq2spec"}
        elif isinstance(inner, ast.ImportFrom) and inner.module and inner.module.split(".")[0] == "seq2spec":
            found.add(inner.module)
    return found


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
    for path in (PACKAGE / "decoding").rglob("*.py"):
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


def test_every_spelling_setting_has_one_flag_and_the_ray_actors_get_it():
    from seq2spec.commands.flags import spelling_changes
    from seq2spec.spelling.settings import SpellingSettings

    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = subparsers.choices["correct"]
    group = next(g for g in parser._action_groups if (g.title or "").startswith("text steps"))
    dests = {action.dest: action for action in group._group_actions}
    assert (
        set(dests)
        == {setting.name for setting in SpellingSettings.flag_fields()}
        == set(SpellingSettings.field_names()) - {"unchanged"}
    )
    for setting in SpellingSettings.flag_fields():
        assert flag_name(setting.name) in dests[setting.name].option_strings
        assert setting.metadata["help"] in dests[setting.name].help
    args = build_parser().parse_args(
        ["correct", "--no-protect", "--split-longer-than", "0", "--word-check-margin", "3"]
    )
    assert spelling_changes(args) == {"protect": False, "split_longer_than": None, "word_check_margin": 3.0}
    assert spelling_changes(build_parser().parse_args(["correct"])) == {}
    assert set(ray_cluster.CORRECT_KEYS) >= set(dests)


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
    if command == "transcribe":
        assert options.pop("request") == transcribe.request_of(args)
    passed = set(options) - set(keys) - {"threads"}
    assert passed == set(SpeculationOptions.field_names())
    assert speculation_changes(argparse.Namespace(**options)) == {"min_draft_confidence": 0.5}


def test_unknown_option_names_are_refused():
    with pytest.raises(TypeError, match="unknown speculation option.*num_draft_tokens"):
        SpeculationOptions().updated(draft_tokens=3)


# ----------------------------------------------------------------------------- the house's sizes

MAX_SPELLING_MODULE_LINES = 500
MAX_LISTED_STRINGS = 25  # a longer list of words is an asset file
MAX_DECODING_MODULES = 14  # the core a reader needs first; the checked fast paths are in decoding/fast/
MAX_ANY_FUNCTION_LINES = 70
REPOSITORY = PACKAGE.parent


def test_no_spelling_module_runs_past_500_lines():
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text().splitlines()) for path in PACKAGE.glob("spelling/**/*.py")
    }
    assert max(sizes.values()) <= MAX_SPELLING_MODULE_LINES, sorted(sizes.items(), key=lambda item: -item[1])[:3]


def test_no_literal_lists_of_words_in_the_package():
    offending = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.List | ast.Set | ast.Tuple | ast.Dict):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                strings = sum(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items)
                if strings > MAX_LISTED_STRINGS:
                    offending.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ({strings} strings)")
    assert not offending, offending


def test_the_decoding_core_is_a_dozen_modules():
    modules = sorted(path.name for path in (PACKAGE / "decoding").glob("*.py"))
    assert len(modules) <= MAX_DECODING_MODULES, modules


def test_no_function_in_the_package_runs_past_70_lines():
    offending = functions_longer_than(MAX_ANY_FUNCTION_LINES, PACKAGE)
    assert not offending, offending


def test_transcription_options_travel_as_one_request():
    import inspect

    from seq2spec.speculator import Seq2SeqSpeculator

    parameters = inspect.signature(Seq2SeqSpeculator.transcribe).parameters
    assert "vad" not in parameters and "request" in parameters


def test_recipes_results_and_findings_stay_in_their_places():
    assert len(list((REPOSITORY / "recipes").glob("*.py"))) <= 20
    assert not (REPOSITORY / "eval_results").exists()
    assert len((REPOSITORY / "benchmarks" / "README.md").read_text(encoding="utf-8").splitlines()) <= 500
