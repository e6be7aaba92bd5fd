"""Every built-in checkpoint in assets/ has its model card beside it, and the card is what its weights say (issue 27:
data, recipe, the command that retrains it, held-out numbers)."""
import pytest

from robustlab.models.cards import card_path, checkpoints, model_card
from robustlab.models.checkpoints import checkpoint_path

PRESENT = [ck for ck in checkpoints() if checkpoint_path(ck).exists()]


def test_the_shipped_checkpoints_are_all_here():
    assert {"tiny-clip.safetensors", "tiny-clip-video.safetensors", "tiny-vilt.safetensors",
            "tiny-vit-clip.safetensors", "tiny-vit-clip-video.safetensors"} <= set(PRESENT)


@pytest.mark.parametrize("ck", PRESENT)
def test_the_card_is_generated_from_the_checkpoint(ck):
    card = card_path(ck)
    assert card.exists(), f"{card.name} missing: run python -m robustlab.models.cards"
    text = card.read_text()
    assert text == model_card(ck), f"{card.name} is stale: run python -m robustlab.models.cards"
    recipe = ck.removesuffix(".safetensors")
    assert f"robustlab train {recipe} --seed" in text and "## Held-out numbers" in text and "## Data" in text
    assert "| 0." in text or "| 1." in text  # at least one measured number
