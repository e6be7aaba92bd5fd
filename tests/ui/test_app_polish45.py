"""Issue 45's polish list in AppTest: a readable undo button, the Retrieval headline named after the condition it
is (from the result), no arrow for a change of 0.000, and no "text perturbed" rows when nothing perturbs the text."""
from __future__ import annotations

from apptest_helpers import fresh as app

CLIP = "builtin:tiny-clip"


def metric(at, start: str):
    return next(m for m in at.metric if m.label.startswith(start))


def conditions(at) -> set[str]:
    (df,) = [d.value for d in at.dataframe if "condition" in d.value.columns and "R@1" in d.value.columns]
    return set(df["condition"])


# ---- 2. the undo button of a model that follows the data --------------------------------------------------------
def test_the_undo_button_has_a_short_label_and_names_the_model_in_its_help():
    """It read "Use builtin:tiny-clip-video-seqtransf anyway" in a sixth of the page's width: cut off."""
    video = f"{CLIP}-video-seqtransf"
    at = app(model_choice=video)
    btn = at.button(key="keep_model_btn")
    assert len(btn.label) <= 24 and "builtin:" not in btn.label, btn.label
    assert video in btn.help and "images" in btn.help  # what it does, in full


# ---- 3. the Retrieval headline --------------------------------------------------------------------------------
def test_the_headline_names_both_perturbed_sides_when_both_are():
    at = app()  # defaults: gaussian_noise s3 on the images, keyboard s2 on the captions
    m = metric(at, "Gallery text→image R@1")
    assert m.label == "Gallery text→image R@1, image and text perturbed"
    assert conditions(at) == {"clean", "image perturbed", "text perturbed", "both perturbed"}


def test_no_text_perturbed_rows_when_the_text_perturbation_is_none():
    at = app(txt_pert="(none)")
    assert not at.error
    assert metric(at, "Gallery text→image R@1").label == "Gallery text→image R@1, image perturbed"
    assert conditions(at) == {"clean", "image perturbed"}


def test_nothing_perturbed_is_said_and_has_no_change():
    at = app(txt_pert="(none)", img_pert="(none)")
    m = metric(at, "Gallery text→image R@1")
    assert m.label == "Gallery text→image R@1, clean (nothing perturbed)" and not m.proto.delta
    assert conditions(at) == {"clean"}


class _Slot:
    def metric(self, label, value, **kw):
        self.got = (label, value, kw)


def _mets(clean: float, last: float, cond: str = "image perturbed") -> dict:
    return {"clean": {"t2i": {"R@1": clean}}, cond: {"t2i": {"R@1": last}}}


def test_a_change_that_rounds_to_zero_shows_no_arrow_and_no_colour():
    """+0.000 was drawn with a green up arrow."""
    from ui.widgets import headline_r1

    slot = _Slot()
    headline_r1(slot, _mets(0.9750, 0.97504), "t2i", "image")
    label, value, kw = slot.got
    assert value == "0.975" and kw["delta_color"] == "off" and kw["delta_arrow"] == "off"
    headline_r1(slot, _mets(0.975, 0.9), "t2i", "image")
    assert slot.got[2] == {"delta": "-0.075"}  # a real change keeps its arrow
    headline_r1(slot, _mets(0.975, 0.9, "text perturbed"), "t2i", "image")
    assert slot.got[0] == "Gallery text→image R@1, text perturbed"


# ---- 4. Perturb, Attention and CLAVI follow the sidebar (or say why they can't) --------------------------------
def test_perturb_starts_from_the_sidebars_dataset():
    at = app("pages/perturb.py")
    assert at.radio(key="pt_source_image").value == "dataset"  # the sidebar's built-in images
    at.number_input(key="pt_ds_item").set_value(3).run()
    assert not at.exception and not at.error
    from ui.state import DEMO_N, get_builtin_gallery

    name = get_builtin_gallery(DEMO_N).item(3).id
    assert any(t.value.startswith(f"#3 · {name}") for t in at.text)
    at.radio(key="pt_kind").set_value("video").run()  # the sidebar holds images: a video comes from elsewhere
    assert not at.exception and at.radio(key="pt_source_video").value == "builtin"


def test_attention_and_clavi_say_in_one_line_that_their_input_is_their_own():
    for page in ("pages/attention.py", "pages/clavi.py"):
        at = app(page)
        assert any(c.value.startswith("Its own input, not the sidebar's dataset:") for c in at.caption), page
