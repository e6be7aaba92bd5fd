"""AppTest of the Hubness page: the default view (k-occurrence histograms, measures table, top hubs, similarity
heatmap), changing k, direction, perturbation and severity, and hubness reduction before/after.

A fresh AppTest per test, switched to the page before its first run (see tests/ui/test_app.py for why sidebar choices
go through session state)."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 240
N = 300  # the built-in demo gallery (ui.DEMO_N)


def open_page(**state):
    """The Hubness page with tiny-clip, whose text->image space noise makes hub-ridden (the measures below rely on
    it); the default tiny-vit-clip degrades without hubs (k_skewness 0.09 -> 0.20 at gaussian_noise s3)."""
    state = {"model_choice": "builtin:tiny-clip", **state}
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page("pages/hubness.py").run()
    assert not at.exception, at.exception
    return at


def chart(at, title_part: str | None = None, trace_type: str | None = None) -> dict:
    """The plotly figure (as JSON) of the first chart whose title contains ``title_part`` / that has a trace of
    ``trace_type``."""
    for el in at.get("plotly_chart"):
        fig = json.loads(el.proto.spec)
        title = ((fig.get("layout", {}).get("title") or {}).get("text")) or ""
        types = {t.get("type") for t in fig["data"]}
        if (title_part is None or title_part in title) and (trace_type is None or trace_type in types):
            return fig
    raise AssertionError(f"no chart titled {title_part!r} with a {trace_type!r} trace")


def histogram(at, title_part="k-occurrence") -> dict[str, dict[int, int]]:
    """name -> {N_k: number of gallery items}."""
    fig = chart(at, title_part, "bar")
    return {t["name"]: dict(zip(_arr(t["x"]).tolist(), _arr(t["y"]).tolist())) for t in fig["data"]}


def _arr(v):
    """Plotly JSON arrays: plain lists or typed arrays ({"dtype", "bdata", "shape": "r, c"})."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if "shape" in v:
            a = a.reshape([int(n) for n in str(v["shape"]).split(",")])
        return a
    return np.asarray(v)


def measures(at):
    return at.dataframe[0].value.set_index("measure")


def test_default_view():
    at = open_page()
    assert not at.error and not at.warning
    assert at.radio(key="hub_direction").value == "t2i"
    assert at.number_input(key="hub_k").value == 15
    assert at.selectbox(key="hub_pert").value == "image:gaussian_noise"

    # histograms: integer bins, every gallery image counted once, Σ N_k = k · |queries|
    h = histogram(at)
    assert set(h) == {"clean", "perturbed (gaussian_noise s3 (image))"}
    for counts in h.values():
        assert all(float(b).is_integer() for b in counts)
        assert sum(counts.values()) == N
        assert sum(b * c for b, c in counts.items()) == 15 * N

    # measures: noise makes the text→image space hub-ridden; recall falls
    m = measures(at)
    for row in ("k_skewness", "robinhood", "gini", "antihub_occurrence", "hub_occurrence", "R@1", "MdR"):
        assert row in m.index
    assert m.loc["k_skewness", "perturbed"] > m.loc["k_skewness", "clean"] + 0.5
    assert m.loc["R@1", "perturbed"] < m.loc["R@1", "clean"]
    assert np.allclose(m["change"], m["perturbed"] - m["clean"])

    # top hubs: 10 images per tab, the first one attracts the most queries (the histogram's largest bin)
    caps = [im.proto.imgs[0].caption for im in at.image]
    assert len(caps) == 20
    top_p = max(b for b, c in h["perturbed (gaussian_noise s3 (image))"].items() if c)
    assert caps[0].startswith("#1 · item ") and f"N_k = {top_p} queries" in caps[0]

    # heatmap: clean and perturbed, 150 sampled queries × their ground-truth images
    fig = chart(at, trace_type="heatmap")
    hms = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(hms) == 2
    zc, zp = _arr(hms[0]["z"]), _arr(hms[1]["z"])
    assert zc.shape == zp.shape == (150, 150)
    assert np.mean(np.argmax(zc, axis=1) == np.arange(150)) > 0.9  # clean: the diagonal is the best match
    assert np.mean(np.argmax(zp, axis=1) == np.arange(150)) < 0.5  # noise: mostly not


def test_k_direction_and_log_axis():
    at = open_page()
    at.number_input(key="hub_k").set_value(5).run()
    assert not at.exception
    h = histogram(at)
    assert all(sum(b * c for b, c in counts.items()) == 5 * N for counts in h.values())
    at.checkbox(key="hub_log").check().run()
    assert chart(at, "k-occurrence", "bar")["layout"]["yaxis"]["type"] == "log"

    at.radio(key="hub_direction").set_value("i2t").run()
    assert not at.exception and not at.error
    h = histogram(at, "captions")
    for counts in h.values():  # every caption counted once, each captioned image queries 5 captions
        assert sum(counts.values()) == N and sum(b * c for b, c in counts.items()) == 5 * N
    assert len(at.text) >= 10  # caption hubs are shown as text (st.text: never markdown)


def test_text_perturbation_and_severity_zero():
    at = open_page()
    at.selectbox(key="hub_pert").set_value("text:keyboard").run()
    assert not at.exception
    assert any("keyboard s3 (text)" in c.value for c in at.caption)
    m = measures(at)
    assert m.loc["R@1", "perturbed"] < m.loc["R@1", "clean"]
    at.slider(key="hub_sev").set_value(0).run()  # severity 0 is clean: nothing may change
    assert not at.exception
    m = measures(at)
    assert np.allclose(m["change"], 0)


@pytest.mark.parametrize("method", ["dsl", "qbnorm", "hsm"])
def test_reduction_before_after(method):
    at = open_page()
    at.selectbox(key="hub_reduction").set_value(method).run()
    assert not at.exception and not at.warning
    df = next(d.value for d in at.dataframe if "reduction" in d.value.columns)
    assert len(df) == 4 and set(df["reduction"]) == {"before", "after"}
    before = df[(df.condition == "clean") & (df.reduction == "before")].iloc[0]
    assert before["R@1"] == pytest.approx(measures(at).loc["R@1", "clean"], abs=1e-4)
    after = df[df.reduction == "after"]
    assert after["R@1"].between(0, 1).all()
    for which in ("clean", "perturbed"):
        h = histogram(at, which)
        assert {"before", f"after {method}"} == set(h)
        assert all(sum(cnt.values()) == N and sum(b * c for b, c in cnt.items()) == 15 * N for cnt in h.values())
    if method == "dsl":  # dual softmax demotes the noise hubs: the perturbed k-skewness falls
        p = df[df.condition != "clean"].set_index("reduction")
        assert p.loc["after", "k_skewness"] < p.loc["before", "k_skewness"]
    raised = [c for c, g in df.groupby("condition")
              if g.set_index("reduction").loc["after", "k_skewness"] > g.set_index("reduction").loc["before",
                                                                                                   "k_skewness"]]
    said = [c.value for c in at.caption if "raised the k-skewness" in c.value]
    assert bool(said) == bool(raised), (raised, said)  # a reduction that raises it says why (issue 45), only then
    assert all(r in said[0] for r in raised) if said else True


def test_reduction_bad_parameter_is_a_message():
    at = open_page(hub_reduction="dsl")
    at.number_input(key="hub_red_dsl_temperature").set_value(0.0).run()
    assert not at.exception
    assert any("cannot run with these parameters" in w.value for w in at.warning)


def test_empty_upload_gallery_is_a_message():
    at = open_page(dataset="upload")
    assert any("gallery is empty" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_small_uploaded_gallery():
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    g = builtin_gallery(12)
    # k and the hub count remembered from the 300-item demo gallery are brought into the small gallery's range
    at = open_page(upload_gallery=g, upload_gallery_id="upload-test-12", dataset="upload", hub_k=50, hub_m=30)
    assert not at.error and not at.warning
    assert at.number_input(key="hub_k").value == 11  # k < gallery size
    assert at.slider(key="hub_m").value == 12
    for counts in histogram(at).values():
        assert sum(counts.values()) == 12 and sum(b * c for b, c in counts.items()) == 11 * 12
    assert len(at.image) == 24


# ---- video galleries ------------------------------------------------------------------------------------------
NV = 200  # the built-in demo video gallery (ui.VIDEO_DEMO_N), the sidebar's "Built-in videos"


def test_video_gallery_text_to_video():
    at = open_page(dataset="builtin-videos")
    assert not at.error and not at.warning
    assert at.radio(key="hub_direction").value == "t2v"
    assert at.selectbox(key="hub_pert").value == "video:reverse_sampling"  # the video default of every page
    label = "reverse_sampling s1 (video)"
    assert any(f"perturbed: {label}" in c.value for c in at.caption)

    # every gallery video counted once, Σ N_k = k · |queries| (every caption queries the videos)
    h = histogram(at, "videos")
    assert set(h) == {"clean", f"perturbed ({label})"}
    for counts in h.values():
        assert sum(counts.values()) == NV and sum(b * c for b, c in counts.items()) == 15 * NV

    m = measures(at)
    assert list(m.columns) == ["clean", "perturbed", "change"]
    for row in ("k_skewness", "robinhood", "gini", "R@1", "R@5", "MdR"):
        assert row in m.index
    assert m["clean"].notna().all() and m["perturbed"].notna().all()
    assert m.loc["MdR", "perturbed"] > m.loc["MdR", "clean"]  # noise hurts text→video retrieval
    assert np.allclose(m["change"], m["perturbed"] - m["clean"])

    # top hubs are videos: 10 per tab (perturbed and clean)
    assert len(at.get("video")) == 20
    top_p = max(b for b, c in h[f"perturbed ({label})"].items() if c)
    hub_caps = [c.value for c in at.caption if c.value.startswith("#")]
    assert len(hub_caps) == 20 and hub_caps[0].startswith("#1 · item ") and f"N_k = {top_p} queries" in hub_caps[0]

    # heatmap: 150 sampled queries × their own videos, clean and perturbed
    hms = [t for t in chart(at, trace_type="heatmap")["data"] if t["type"] == "heatmap"]
    assert len(hms) == 2 and _arr(hms[0]["z"]).shape == _arr(hms[1]["z"]).shape == (150, 150)


def test_video_gallery_video_to_text_text_perturbation_and_reduction():
    at = open_page(dataset="builtin-videos", hub_direction="v2t", hub_pert="text:keyboard", hub_k=5,
                   hub_reduction="dsl")
    assert not at.error and not at.warning
    label = "keyboard s3 (text)"
    h = histogram(at, "captions")
    for counts in h.values():  # every caption counted once, each video queries 5 captions
        assert sum(counts.values()) == NV and sum(b * c for b, c in counts.items()) == 5 * NV
    m = measures(at)
    assert m.loc["R@5", "perturbed"] < m.loc["R@5", "clean"]
    assert len(at.text) >= 10  # caption hubs as text, next to their video
    df = next(d.value for d in at.dataframe if "reduction" in d.value.columns)
    assert len(df) == 4 and set(df["condition"]) == {"clean", f"perturbed ({label})"}
    before = df[(df.condition == "clean") & (df.reduction == "before")].iloc[0]
    assert before["R@1"] == pytest.approx(m.loc["R@1", "clean"], abs=1e-4)
    assert df["R@1"].between(0, 1).all()
    for which in ("clean", "perturbed"):
        for cnt in histogram(at, which).values():
            assert sum(cnt.values()) == NV and sum(b * c for b, c in cnt.items()) == 5 * NV
