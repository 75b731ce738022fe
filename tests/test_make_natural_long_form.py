"""recipes/make_natural_long_form.py: which voices read the file."""

import importlib.util
import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parents[1] / "recipes"


@pytest.fixture(scope="module")
def recipe():
    sys.path.insert(0, str(RECIPES))
    try:
        spec = importlib.util.spec_from_file_location("make_natural_long_form", RECIPES / "make_natural_long_form.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(RECIPES))


def test_held_out_file_never_speaks_in_an_evaluation_voice(recipe):
    held_out = recipe.speakers("held-out")
    assert set(held_out) == {"af_nicole", "am_echo", "bf_isabella", "bm_lewis"}
    assert not set(held_out) & set(recipe.speakers("evaluation"))
    assert recipe.speakers("evaluation") == ("af_heart", "am_michael", "bf_emma", "bm_george", "af_bella", "am_fenrir")
    with pytest.raises(ValueError, match="held-out"):
        recipe.speakers("training")
