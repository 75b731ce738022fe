"""recipes/make_natural_long_form.py: which voices read the file."""

from pathlib import Path

import pytest
from script_loading import load_script

RECIPES = Path(__file__).resolve().parents[1] / "recipes"


@pytest.fixture(scope="module")
def recipe():
    return load_script(RECIPES / "make_natural_long_form.py")


def test_held_out_file_never_speaks_in_an_evaluation_voice(recipe):
    held_out = recipe.speakers("held-out")
    assert set(held_out) == {"af_nicole", "am_echo", "bf_isabella", "bm_lewis"}
    assert not set(held_out) & set(recipe.speakers("evaluation"))
    assert recipe.speakers("evaluation") == ("af_heart", "am_michael", "bf_emma", "bm_george", "af_bella", "am_fenrir")
    with pytest.raises(ValueError, match="held-out"):
        recipe.speakers("training")
