"""A message from the server's side never shows a viewer a server path (the ground rule "messages never reveal ...
a server path"): ``ui.media.hide_paths`` (``safe_md(..., hide=True)``) replaces absolute paths in exceptions and
reasons the pages show (a model that can't load, an unavailable perturbation, a protocol's "cannot run here", a
stopped job), while captions and what the viewer typed are shown as they are; and the perturbations' own reasons,
which also reach listings and reports, name their folders by setting."""
import pytest

from apptest_helpers import fresh
from ui.media import SERVER_PATH, hide_paths, safe_md


@pytest.mark.parametrize("text, kept", [
    ("AdaIN files missing in /root/.cache/robustlab/adain (see ~/.cache/robustlab/adain/)",
     "AdaIN files missing in a path on the server (see ~/.cache/robustlab/adain/)"),
    ("tiny-clip checkpoint /opt/robustlab/assets/tiny_clip.safetensors is missing; run `robustlab train tiny-clip`",
     "tiny-clip checkpoint a path on the server is missing; run `robustlab train tiny-clip`"),
    ("cannot read /tmp/job-x1/cells/3.json, keeping the rest", "cannot read a path on the server, keeping the rest"),
])
def test_absolute_paths_become_a_path_on_the_server(text, kept):
    assert hide_paths(text) == kept
    shown = safe_md(text, hide=True)
    assert SERVER_PATH in shown and not any(p in shown for p in ("/root", "/opt", "/tmp"))


@pytest.mark.parametrize("text", [
    "t2v/v2t", "mlvp_occlusion/centre at s1/3/5", "the `/centre` variant", "https://huggingface.co/bert-base/x",
    "coco/images/0001.jpg (relative to its data root)", "~/.cache/robustlab/adain/", "R@1 0.5 / 0.6",
])
def test_what_is_not_an_absolute_path_stays(text):
    assert hide_paths(text) == text


def test_a_caption_is_shown_as_it_is():
    caption = "a man cuts /with/ a knife: the onion/garlic mix"
    assert "/with/" in safe_md(caption) and hide_paths(caption) != caption  # only server messages lose paths


def test_the_perturbations_reasons_name_no_server_path(monkeypatch, tmp_path):
    from robustlab.perturb import list_perturbations
    from robustlab.perturb.image import stylize

    monkeypatch.setenv(stylize.ENV_VAR, str(tmp_path / "adain"))
    monkeypatch.setenv("ROBUSTLAB_WORDNET", str(tmp_path / "wordnet"))
    reasons = {s.name: s.reason for s in list_perturbations() if not s.available}
    assert "stylize" in reasons
    for name, why in reasons.items():
        assert str(tmp_path) not in why, name
        assert hide_paths(why) == why, f"{name}: {why}"


@pytest.fixture()
def leaky_perturbation():
    from robustlab.perturb import registry

    name = "zz_test_weights_on_the_server"
    registry.register(name, modality="image", category="stylize", source="test",
                      severity_table={k: {"k": k} for k in range(1, 6)},
                      check=lambda: "weights missing in /srv/secret-models/adain/decoder.pth")(lambda x, p, rng: x)
    yield name
    registry._REGISTRY.pop(name, None)


def test_the_perturb_page_shows_an_unavailable_reason_without_the_path(leaky_perturbation):
    at = fresh("pages/perturb.py")
    listed = [t.value for t in at.dataframe if "why" in t.value.columns]
    (why,) = [df.loc[df["perturbation"] == leaky_perturbation, "why"].item() for df in listed]
    assert why == f"weights missing in {SERVER_PATH}"
    at.selectbox(key="pt_name_image").set_value(leaky_perturbation).run()
    assert not at.exception
    (warning,) = [w.value for w in at.warning if leaky_perturbation in w.value]
    assert "unavailable here" in warning and SERVER_PATH in warning and "/srv" not in warning
