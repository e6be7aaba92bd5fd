"""Issue 45 (polish 4): one perturbation choice across pages. A perturbation picked on one page is the one the next
page starts from (Retrieval, Grounding, Hubness, Perturb), and the video default is the same on every page (the
Retrieval page's and the server's warm-up's)."""
from __future__ import annotations

from apptest_helpers import fresh as app


def test_the_defaults_are_the_warm_ups():
    from ui.choice import DEFAULTS
    from ui.warmup import RETRIEVAL_DEFAULTS

    assert DEFAULTS == RETRIEVAL_DEFAULTS


def test_a_pick_on_retrieval_is_the_choice_on_the_other_pages():
    at = app()
    assert at.selectbox(key="img_pert").value == "gaussian_noise"
    at.selectbox(key="img_pert").set_value("shot_noise").run()
    at.slider(key="img_sev").set_value(4).run()
    assert not at.exception
    at.switch_page("pages/grounding.py").run()
    assert not at.exception
    assert at.selectbox(key="gr_img_pert").value == "shot_noise" and at.slider(key="gr_img_sev").value == 4
    at.selectbox(key="gr_img_pert").set_value("defocus_blur").run()  # a pick on Grounding ...
    at.switch_page("pages/hubness.py").run()
    assert not at.exception
    assert at.selectbox(key="hub_pert").value == "image:defocus_blur" and at.slider(key="hub_sev").value == 4
    at.switch_page("pages/perturb.py").run()
    assert not at.exception
    assert at.selectbox(key="pt_name_image").value == "defocus_blur"
    at.switch_page("pages/retrieval.py").run()  # ... is Retrieval's too, back there
    assert not at.exception
    assert at.selectbox(key="img_pert").value == "defocus_blur" and at.slider(key="img_sev").value == 4
    assert any("defocus_blur s4" in s.value for s in at.subheader)  # and what the page computed with
