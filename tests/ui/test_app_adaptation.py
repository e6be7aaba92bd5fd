"""AppTest of the Adaptation page: the default controls (generated from robustlab.adapt.list_methods), a Tent run
on the built-in videos (R@K clean / shifted / adapted, loss per batch, k-occurrence before and after, the map with
its centroids, kept across a page switch), and a model that cannot adapt that side as one line.

A fresh AppTest per test, switched to the page before its first run (see tests/ui/test_app.py for why sidebar choices
go through session state)."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from robustlab.adapt import list_methods

TIMEOUT = 300
PAGE = "pages/adaptation.py"
NV = 200  # the sidebar's "Built-in videos" (ui.VIDEO_DEMO_N); one caption each
SEQ = "builtin:tiny-clip-video-seqtransf"  # the sidebar's model for the built-in videos (ui.follow.VIDEO_BUILTIN)


def open_page(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def figures(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def figure(at, trace_name: str) -> dict:
    for fig in figures(at):
        if any(t.get("name") == trace_name for t in fig["data"]):
            return fig
    raise AssertionError(f"no chart with a trace named {trace_name!r}")


def _arr(v):
    """Plotly JSON arrays: plain lists or typed arrays ({"dtype", "bdata", "shape"})."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape([int(n) for n in str(v["shape"]).split(",")]) if "shape" in v else a
    return np.asarray(v)


def trace(fig: dict, name: str) -> dict:
    return next(t for t in fig["data"] if t.get("name") == name)


def test_default_view_shows_the_controls():
    at = open_page()
    assert not at.error and not at.warning
    assert any("Adaptation — test-time adaptation" in h.value for h in at.header)
    assert at.radio(key="ad_direction").options == ["text→image", "image→text"]  # the built-in images
    assert at.radio(key="ad_direction").value == "t2i"
    assert at.selectbox(key="ad_txt_pert").value == "keyboard"  # t2i: the captions are shifted
    assert at.slider(key="ad_txt_sev").value == 3
    assert at.selectbox(key="ad_method").value == "hat-vtr"
    labels = at.selectbox(key="ad_method").options  # every method of list_methods(), by its label
    assert labels == [m["label"] for m in list_methods()] and labels[:4] == ["No adaptation", "Tent", "TCR", "HAT-VTR"]
    # widgets from list_methods(): numbers, checkboxes, a choice; a None default is an empty box shown as "auto"
    assert at.number_input(key="ad_hat-vtr_batch_size").value == 16
    assert at.number_input(key="ad_hat-vtr_steps").value == 3
    lr = at.number_input(key="ad_hat-vtr_lr")
    assert lr.value is None and lr.proto.placeholder == "auto (3e-05)"  # t2i: text queries
    assert at.number_input(key="ad_hat-vtr_capacity").proto.placeholder == "auto (100)"
    assert at.checkbox(key="ad_hat-vtr_rerank").value is True
    assert at.selectbox(key="ad_hat-vtr_order").value == "dataset"
    assert any("Zhang et al." in c.value for c in at.caption)
    assert at.button(key="ad_run").label == "Run adaptation"
    assert any("press Run adaptation" in c.value for c in at.caption)
    assert not at.get("plotly_chart") and not at.dataframe

    # image queries: an image perturbation, and the visual side's auto learning rate
    at.radio(key="ad_direction").set_value("i2t").run()
    assert not at.exception
    assert at.selectbox(key="ad_img_pert").value == "gaussian_noise"
    assert at.number_input(key="ad_hat-vtr_lr").proto.placeholder == "auto (0.0003)"
    at.selectbox(key="ad_method").set_value("none").run()
    assert any("No parameters" in c.value for c in at.caption)


def test_tent_on_builtin_videos_shows_metrics_losses_histograms_and_map():
    at = open_page(model_choice="builtin:tiny-clip-video-meanp", dataset="builtin-videos", ad_method="tent")
    assert at.radio(key="ad_direction").value == "t2v"
    at.number_input(key="ad_tent_steps").set_value(1).run()
    at.button(key="ad_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any(c.value.startswith(f"Tent · text→video · {NV} query captions × {NV} gallery videos · query shift: "
                                  "keyboard s3 · ") for c in at.caption)
    assert json.loads(at.json[0].proto.body)["steps"] == 1  # the page's parameters reached robustlab.adapt.run

    # the metrics table: clean, shifted, adapted; the shift hurts
    m = at.dataframe[0].value.set_index("condition")
    assert list(m.index) == ["clean", "shifted", "adapted"]
    assert set(m["direction"]) == {"text→video"}
    for col in ("R@1", "R@5", "R@10", "MdR", "MnR"):
        assert m[col].notna().all()
    assert m[["R@1", "R@5", "R@10"]].apply(lambda c: c.between(0, 1)).all().all()
    assert m.loc["shifted", "R@1"] < m.loc["clean", "R@1"]
    assert (m.loc["clean", ["R@1", "R@5", "R@10"]].diff().dropna() >= 0).all()
    assert {x.label for x in at.metric} >= {"R@1 adapted", "R@5 adapted", "R@10 adapted"}

    # grouped bars: R@1/5/10 for each of the three
    bars = figure(at, "adapted")
    assert [t["name"] for t in bars["data"]] == ["clean", "shifted", "adapted"]
    assert np.allclose(_arr(trace(bars, "adapted")["y"]), m.loc["adapted", ["R@1", "R@5", "R@10"]].astype(float),
                       atol=1e-4)

    # the loss per batch: ceil(200 / 16) = 13 batches; Tent's loss is its entropy
    loss = trace(figure(at, "loss (= entropy)"), "loss (= entropy)")
    y = _arr(loss["y"])
    assert len(y) == 13 and np.isfinite(y).all() and (y >= 0).all()

    # k-occurrence before and after: every gallery video counted once, Σ N_k = k · queries
    hist = figure(at, "before (shifted)")
    assert {t["name"] for t in hist["data"]} == {"before (shifted)", "after (tent)"}
    assert "videos" in hist["layout"]["title"]["text"]
    assert [t["marker"]["color"] for t in hist["data"]] == ["#d62728", "#1f77b4"]  # the map's colours
    for t in hist["data"]:
        bins, counts = _arr(t["x"]).astype(np.int64), _arr(t["y"]).astype(np.int64)
        assert counts.sum() == NV and (bins * counts).sum() == 15 * NV
    hub = at.dataframe[1].value.set_index("measure")
    assert "k_skewness" in hub.index and np.allclose(hub["change"], hub["after (adapted)"] - hub["before (shifted)"])

    # the map (t-SNE by default): 200 queries before and after, 200 gallery videos, three centroids
    fig = figure(at, "gallery")
    names = [t["name"] for t in sorted(fig["data"], key=lambda t: t["legendrank"])]  # the legend's order
    assert names[:3] == ["queries before (shifted)", "queries after (adapted)", "gallery"]
    assert fig["data"][-4]["name"] == "queries before (shifted)"  # its open circles drawn over the adapted ones
    assert sum(n.startswith("centroid · ") for n in names) == 3
    assert [len(_arr(trace(fig, n)["x"])) for n in names[:3]] == [NV, NV, NV]
    assert fig["layout"]["xaxis"]["title"]["text"] == "t-SNE 1"
    assert any("Centroid gap" in x.label for x in at.metric)
    at.radio(key="ad_proj").set_value("pca").run()
    assert not at.exception
    assert figure(at, "gallery")["layout"]["xaxis"]["title"]["text"] == "PCA 1"

    # another page and back: the result and the controls that made it are still there
    at.switch_page("pages/export.py").run()
    assert not at.exception
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.selectbox(key="ad_method").value == "tent" and at.number_input(key="ad_tent_steps").value == 1
    assert list(at.dataframe[0].value["condition"]) == ["clean", "shifted", "adapted"]
    assert not at.info  # the controls match the run shown
    at.number_input(key="ad_tent_steps").set_value(2).run()
    assert any("settings above changed" in i.value for i in at.info)


def test_a_model_that_cannot_adapt_that_side_is_one_line():
    # builtin:tiny-clip: a CNN image tower (BatchNorm only)
    at = open_page(model_choice="builtin:tiny-clip", ad_direction="i2t", ad_method="tent", ad_proj="pca")
    at.button(key="ad_run").click().run()
    assert not at.exception, at.exception
    assert len(at.error) == 1
    msg = at.error[0].value
    assert "builtin:tiny-clip has no LayerNorm on its image side" in msg and "\n" not in msg
    assert not at.get("plotly_chart") and not at.dataframe
    # the page stays usable: the controls are there, and text queries adapt
    at.radio(key="ad_direction").set_value("t2i").run()
    assert not at.exception and not at.error
    at.number_input(key="ad_tent_steps").set_value(1).run()
    at.button(key="ad_run").click().run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["condition"]) == ["clean", "shifted", "adapted"]


def test_the_map_keeps_at_most_1000_points():
    from ui.adaptation import MAX_POINTS, subsample

    q, g = subsample(200, 200)
    assert (q == np.arange(200)).all() and (g == np.arange(200)).all()  # 600 points: all of them
    q, g = subsample(1000, 5000)
    assert 2 * len(q) + len(g) <= MAX_POINTS and len(q) >= 2 and len(g) >= 2
    assert (np.diff(q) > 0).all() and (np.diff(g) > 0).all() and q.max() < 1000 and g.max() < 5000
    assert len(q) == 142 and 2 * len(q) + len(g) == MAX_POINTS  # a 1/7 share of the queries, the rest gallery


def test_the_video_query_shift_starts_from_every_pages_default():
    """Issue 45: the video shift is the session's one choice, whose default is every page's (reverse_sampling s1,
    as on Retrieval), not a page default of its own (gaussian_noise s3 before); a temporal shift says in one line
    which models it shifts."""
    from ui.choice import DEFAULTS

    at = open_page(model_choice=SEQ, dataset="builtin-videos", ad_direction="v2t")
    assert not at.error and not at.warning
    assert (at.selectbox(key="ad_vid_pert").value, at.slider(key="ad_vid_sev").value) == DEFAULTS["video"]["video"] \
        == ("reverse_sampling", 1)
    notes = [c.value for c in at.caption if c.value.startswith("reverse_sampling only changes the frames' order")]
    assert len(notes) == 1 and "\n" not in notes[0]
    # a pick on Retrieval is the Adaptation page's shift too
    at.switch_page("pages/retrieval.py").run()
    at.selectbox(key="vid_pert").set_value("motion_blur").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.selectbox(key="ad_vid_pert").value == "motion_blur"
    assert not any("only changes the frames' order" in c.value for c in at.caption)


@pytest.mark.slow  # six HAT-VTR runs over the 200 built-in videos (the curve sweeps five severities)
def test_hat_vtr_analyses_memory_time_topk_heatmap_and_severity_curve():
    """HAT-VTR on the built-in videos (1 step): the Reliable Memory's accuracy per batch, the time breakdown, a
    query's top-k before and after with the heatmaps, and R@1 vs severity -- each equal to the result object's.
    The query shift is the video default of every page, reverse_sampling s1: the order-sensitive model is shifted
    by it (seqTransf v2t R@1 0.955 -> 0.25; meanP hardly, 0.835 -> 0.82)."""
    from robustlab import adapt

    at = open_page(model_choice=SEQ, dataset="builtin-videos", ad_method="hat-vtr", ad_direction="v2t",
                   ad_proj="pca")
    assert at.selectbox(key="ad_vid_pert").value == "reverse_sampling" and at.slider(key="ad_vid_sev").value == 1
    at.number_input(key="ad_hat-vtr_steps").set_value(1).run()
    at.button(key="ad_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    res = at.session_state["ad_last"]["result"]
    assert res.metrics["shifted"]["R@1"] < res.metrics["clean"]["R@1"] - 0.3  # the default shift is a shift here
    # the memory's accuracy: one point per batch (ceil(200 / 16) = 13), as the result's log
    mem = figure(at, "pairs kept in the memory")
    assert np.allclose(_arr(trace(mem, "pairs kept in the memory")["y"]).astype(float), res.memory_curve("accuracy"))
    assert list(_arr(trace(mem, "pairs kept in the memory")["x"])) == list(range(1, 14))
    # the time breakdown: the result's phases, per 1,000 queries
    tdf = next(d.value for d in at.dataframe if "s per 1,000 queries" in d.value.columns)
    rows = adapt.time_breakdown(res)
    assert list(tdf["phase"]) == [r["label"] for r in rows]
    assert np.allclose(tdf["s per 1,000 queries"], [r["per_1000_queries"] for r in rows])
    # query 7's top-k before and after, as robustlab.adapt.top_k
    at.number_input(key="ad_query").set_value(7).run()
    assert not at.exception
    want = adapt.top_k(res, 7, 5)
    tops = [d.value for d in at.dataframe if "true" in d.value.columns]
    assert len(tops) == 2 and all(len(t) == 5 for t in tops)
    for t, side in zip(tops, ("before", "after")):
        assert list(t["score"].round(6)) == [round(x["score"], 6) for x in want[side]["items"]]
        assert list(t["item"].str.extract(r"(\d+)")[0].astype(int)) == [x["item"] for x in want[side]["items"]]
        assert all(t["item"].str.startswith("caption "))  # v2t: the gallery is the captions
    hm = figure(at, "scores adapted")  # the heatmaps: shifted and adapted, 20 × 20
    z = _arr(trace(hm, "scores adapted")["z"]).astype(float)
    assert z.shape == (20, 20) and np.allclose(z, adapt.heatmap(res, 20)["adapted"])
    # R@1 vs severity: five runs, before and after
    at.button(key="ad_curve_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    curve = at.session_state["ad_curve"]["curve"]
    fig = figure(at, "R@1 before adaptation")
    assert list(_arr(trace(fig, "R@1 before adaptation")["x"])) == [1, 2, 3, 4, 5]
    assert np.allclose(_arr(trace(fig, "R@1 before adaptation")["y"]).astype(float), curve.series()["shifted"])
    assert np.allclose(_arr(trace(fig, "R@1 after adaptation (hat-vtr)")["y"]).astype(float),
                       curve.series()["adapted"])
    assert curve.rows[0]["shifted"] == res.metrics["shifted"]  # severity 1: the run above's shift
