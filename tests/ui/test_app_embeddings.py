"""The Embeddings page: AppTest of the PCA and t-SNE maps and of "Add N to basket" (a selection set through the
chart's session state, since AppTest cannot drag on a chart; tests/browser/test_browser_embeddings.py does the real
drag), and unit tests of the selection → basket glue in robustlab.export.selection."""
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from robustlab.diagnostics import views
from robustlab.export import selection
from robustlab.export.basket import Basket
from robustlab.perturb.condition import Condition
from robustlab.tasks.retrieval_bench import RetrievalBench

TIMEOUT = 240


def open_page(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    state.setdefault("emb_method", "pca")
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page("pages/embeddings.py").run()
    assert not at.exception, at.exception
    return at


def figure(at) -> dict:
    (el,) = at.get("plotly_chart")
    return json.loads(el.proto.spec)


def _arr(v):
    """Plotly JSON arrays: plain lists or typed arrays ({"dtype", "bdata", "shape": "r, c"})."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if "shape" in v:
            a = a.reshape([int(n) for n in str(v["shape"]).split(",")])
        return a
    return np.asarray(v)


def markers(fig) -> list[dict]:
    return [t for t in fig["data"] if "markers" in t.get("mode", "")]


def test_pca_default_map():
    at = open_page()
    assert not at.error and not at.warning
    assert at.slider(key="emb_items").value == 200
    assert any(c.value.startswith("800 points: 200 items · image gaussian_noise s3 · text keyboard s2 · PCA")
               for c in at.caption)
    fig = figure(at)
    assert fig["layout"]["dragmode"] == "select"  # a plain drag box-selects
    groups = {t["name"]: t for t in markers(fig)}
    assert set(groups) == {"image · clean", "image · perturbed", "text · clean", "text · perturbed"}
    rows = np.concatenate([_arr(t["customdata"]).ravel() for t in groups.values()])
    assert sorted(rows.tolist()) == list(range(800))  # every point carries its row, once
    lines = [t for t in fig["data"] if t.get("mode") == "lines"]
    assert len(lines) == 1 and len(lines[0]["x"]) == 3 * 400  # one segment per item and perturbed modality
    assert any("No points selected." == c.value for c in at.caption)
    assert any("Export the basket (0)" in str(p.proto.label) for p in at.get("page_link"))


def test_tsne_with_few_points_and_colour_modes():
    at = open_page(emb_method="tsne", emb_items=12, emb_perplexity=30)  # perplexity is lowered to fit 48 points
    assert not at.exception and not at.warning
    assert any(c.value.startswith("48 points: 12 items") and "t-SNE (seed 0)" in c.value for c in at.caption)
    xy = np.concatenate([np.c_[_arr(t["x"]), _arr(t["y"])] for t in markers(figure(at))])
    assert xy.shape == (48, 2) and np.isfinite(xy).all() and xy.std(0).min() > 0
    at.radio(key="emb_color").set_value("modality").run()
    assert not at.exception
    colours = {t["name"]: t["marker"]["color"] for t in markers(figure(at))}
    assert colours["image · clean"] == colours["image · perturbed"] != colours["text · clean"]


def test_k_occurrence_colours_sum_to_k_times_queries():
    at = open_page(emb_items=300, emb_color="k-occurrence", emb_k=10, emb_txt_pert="(none)")
    fig = figure(at)
    (tr,) = markers(fig)
    rows = _arr(tr["customdata"]).ravel()
    nk = _arr(tr["marker"]["color"])
    assert len(rows) == 900  # 300 items: image clean, image perturbed, text clean
    # rows: images clean, captions clean, images perturbed (300 each). As retrieval targets of all 300 queries,
    # each group's N_k sums to k · 300
    assert [int(nk[i:i + 300].sum()) for i in (0, 300, 600)] == [10 * 300] * 3
    assert nk[600:].max() > nk[:300].max()  # noise grows image hubs


def test_remembered_values_outside_the_range_are_clamped():
    at = open_page(emb_items=5000, emb_k=500, emb_img_pert="(none)", emb_txt_pert="(none)")
    assert at.slider(key="emb_items").value == 300 and at.number_input(key="emb_k").value == 100
    assert any(c.value.startswith("600 points: 300 items") for c in at.caption)


def test_no_perturbation_has_no_lines():
    at = open_page(emb_img_pert="(none)", emb_txt_pert="(none)", emb_items=20)
    fig = figure(at)
    assert {t["name"] for t in markers(fig)} == {"image · clean", "text · clean"}
    assert not [t for t in fig["data"] if t.get("mode") == "lines"]


def test_selection_adds_perturbed_examples_to_the_basket():
    # 20 items: rows 0-19 image clean, 20-39 text clean, 40-59 image perturbed, 60-79 text perturbed
    sel = {"selection": {"points": [{"customdata": [0]}, {"customdata": [40]}, {"customdata": [25]},
                                    {"curve_number": 0, "point_index": 3}],  # a line vertex: ignored
                         "point_indices": [0], "box": [], "lasso": []}}
    at = open_page(emb_items=20, emb_chart=sel)
    assert any(s.value == "Selected: 3 point(s), 2 item(s)" for s in at.subheader)
    assert at.button(key="emb_add").label == "Add 2 to basket"
    # the 1st item's image clean/perturbed, the 6th item's caption clean/perturbed (+ each item's name as text)
    assert len(at.image) == 2 and len(at.text) == 2 + 2
    at.button(key="emb_add").click().run()
    assert not at.exception
    basket = at.session_state["basket"]
    assert [e.kind for e in basket] == ["image", "text"]
    assert [e.record["name"] for e in basket] == ["gaussian_noise", "keyboard"]
    assert basket[0].source["type"] == "builtin" and basket[0].model["view"] == "embeddings"
    assert any("basket holds 2" in s.value for s in at.success)
    assert any("Export the basket (2)" in str(p.proto.label) for p in at.get("page_link"))
    at.button(key="emb_add").click().run()  # the same examples again: nothing new
    assert len(at.session_state["basket"]) == 2 and any("(2 already there)" in s.value for s in at.success)


def test_clean_only_selection_offers_nothing_to_add():
    sel = {"selection": {"points": [{"customdata": [1]}], "point_indices": [1], "box": [], "lasso": []}}
    at = open_page(emb_items=10, emb_img_pert="(none)", emb_txt_pert="(none)", emb_chart=sel)
    assert at.button(key="emb_add").label == "Add 0 to basket" and at.button(key="emb_add").disabled


# ---- the glue, without Streamlit ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bench(tiny_clip):
    from robustlab.datasets.synthetic.datasets import builtin_gallery

    return RetrievalBench(tiny_clip, builtin_gallery(16))


def test_selected_rows_from_plotly_payloads():
    assert views.selected_rows({"points": [{"customdata": [3]}, {"customdata": 5}, {"customdata": {"0": 3}},
                                           {"customdata": [99]}, {"customdata": ["x"]}]}, 10) == [3, 5]
    # without customdata: (curve, point) through the trace → rows map; traces without rows (lines) are skipped
    tr = [None, [7, 8, 9], [0, 1]]
    assert views.selected_rows({"points": [{"curve_number": 1, "point_index": 2}, {"curve_number": 0,
                                                                                    "point_index": 0},
                                           {"curve_number": 2, "point_index": 5}]}, 10, tr) == [9]
    assert views.selected_rows(None, 10) == [] and views.selected_rows({}, 10) == []


def test_selection_examples_regenerate_exactly(bench, tmp_path):
    from robustlab.perturb import regenerate

    ic, tc = Condition("defocus_blur", 2, 7), Condition("char_swap", 3, 7)
    pts = views.embedding_points(bench, ic, tc, n_items=8, method="pca", k=3)
    assert len(pts) == 32 and len(pts.pairs) == 16
    for a, b in pts.pairs:  # each line joins the clean and the perturbed point of one item and modality
        assert pts.item[a] == pts.item[b] and pts.modality[a] == pts.modality[b]
        assert (pts.condition[a], pts.condition[b]) == ("clean", "perturbed")
    img_rows = [r for r in range(len(pts)) if pts.modality[r] == "image"][:3]
    txt_rows = [r for r in range(len(pts)) if pts.modality[r] == "text" and pts.condition[r] == "perturbed"][:2]
    exs = selection.selection_examples(bench, pts, img_rows + txt_rows, ic, tc, model_id="builtin:tiny-clip")
    assert [e.kind for e in exs] == ["image"] * 3 + ["text"] * 2
    for e in exs:
        assert e.record["seed"] == 7 + e.source["index"]  # gallery item i is perturbed with seed + i
        out = regenerate(e.record, e.clean)
        out = getattr(out, "output", out)
        if e.kind == "image":
            assert np.array_equal(out, e.output) and np.array_equal(e.clean, bench.gallery.images[e.source["index"]])
        else:
            assert out == e.output and e.clean == bench.gallery.captions[e.source["index"]]
            assert e.source["field"] == "caption"
        assert -1 <= e.model["scores"]["cosine_clean_vs_perturbed"] <= 1
    b = Basket()
    assert sum(b.add(e) for e in exs) == 5 and sum(b.add(e) for e in exs) == 0
    # and the basket exports to a zip that regenerates bit for bit
    from robustlab.export.manifest import build_zip, regenerate_export

    z = tmp_path / "embeddings.zip"
    z.write_bytes(build_zip(b))
    res = regenerate_export(z)
    assert len(res) == 5 and all(r.ok for r in res)
    # a clean modality gives nothing to add
    assert selection.selection_examples(bench, pts, img_rows, Condition(), tc) == []


def test_embedding_points_errors(bench):
    with pytest.raises(ValueError, match="'tsne' or 'pca'"):
        views.embedding_points(bench, Condition(), Condition(), n_items=4, method="umap")
    with pytest.raises(ValueError, match="at least one item"):
        views.embedding_points(bench, Condition(), Condition(), n_items=0, method="pca")


# ---- video galleries ------------------------------------------------------------------------------------------
SEQ = "builtin:tiny-clip-video-seqtransf"


def test_video_gallery_map_selection_plays_and_adds_to_basket():
    # 20 videos: rows 0-19 video clean, 20-39 text clean, 40-59 video perturbed, 60-79 text perturbed
    sel = {"selection": {"points": [{"customdata": [0]}, {"customdata": [40]}, {"customdata": [65]}],
                         "point_indices": [0], "box": [], "lasso": []}}
    at = open_page(dataset="builtin-videos", model_choice=SEQ, emb_items=20, emb_chart=sel)
    assert not at.error and not at.warning
    # the video default is every page's (ui.choice.DEFAULTS, issue 45): reverse_sampling s1
    assert at.selectbox(key="emb_vid_pert").value == "reverse_sampling" and at.slider(key="emb_vid_sev").value == 1
    assert any(c.value.startswith("80 points: 20 items · video reverse_sampling s1 · text keyboard s2 · PCA")
               for c in at.caption)
    fig = figure(at)
    groups = {t["name"]: t for t in markers(fig)}
    assert set(groups) == {"video · clean", "video · perturbed", "text · clean", "text · perturbed"}
    assert {t["marker"]["symbol"] for t in groups.values()} >= {"square", "square-open"}
    rows = np.concatenate([_arr(t["customdata"]).ravel() for t in groups.values()])
    assert sorted(rows.tolist()) == list(range(80))
    (lines,) = [t for t in fig["data"] if t.get("mode") == "lines"]
    assert len(lines["x"]) == 3 * 40  # one segment per item and perturbed modality
    # the selection: item 0's video (clean and perturbed players) and item 5's caption
    assert any(s.value == "Selected: 3 point(s), 2 item(s)" for s in at.subheader)
    assert len(at.get("video")) == 2 and not at.image
    at.button(key="emb_add").click().run()
    assert not at.exception
    basket = at.session_state["basket"]
    assert [e.kind for e in basket] == ["video", "text"]
    v = basket[0]
    assert v.record["name"] == "reverse_sampling" and v.record["severity"] == 1 and v.fps == 8.0
    shown = [c.value for c in at.caption if c.value.endswith(" · video")]  # "item N · video" over the players
    assert shown == [f"item {v.source['index']} · video"]  # rows are a seeded subsample of the 200 videos
    assert v.source["collection"] == "video"
    # reverse sampling: frames 0, r, 2r, ... each repeated r times, played backwards (⌈n/r⌉·r frames)
    from robustlab.perturb.video.temporal import sampling_indices

    idx = sampling_indices(len(v.clean), int(v.record["params"]["rate"]))[::-1]
    assert v.output.shape == (len(idx),) + v.clean.shape[1:] and np.array_equal(v.output, v.clean[idx])
    assert basket[1].record["name"] == "keyboard" and basket[1].source["field"] == "caption"


def test_video_gallery_keeps_its_own_perturbation_choice():
    # a video perturbation remembered on the video map is not applied to images, and back
    state = dict(model_choice=SEQ, emb_items=10, emb_vid_pert="jumble", emb_img_pert="(none)",
                 emb_txt_pert="(none)")
    at = open_page(dataset="builtin-videos", **state)
    # (the severity not set: the video default's, reverse_sampling s1, as on every page)
    assert any(c.value.startswith("30 points: 10 items · video jumble s1 · text clean") for c in at.caption)
    at = open_page(dataset="builtin", **state)
    assert any(c.value.startswith("20 points: 10 items · image clean · text clean") for c in at.caption)


@pytest.fixture(scope="module")
def video_bench(tmp_path_factory):
    from robustlab.datasets.synthetic.datasets import builtin_video_gallery
    from robustlab.models import load_model

    g = builtin_video_gallery(12, cache_dir=tmp_path_factory.mktemp("videos"))
    return RetrievalBench(load_model("builtin:tiny-clip-video-meanp", device="cpu"), g)


def test_video_embedding_points_and_examples_regenerate_exactly(video_bench, tmp_path):
    from robustlab.export.manifest import build_zip, regenerate_export
    from robustlab.perturb import regenerate

    vc, tc = Condition("gaussian_noise", 2, 3), Condition("char_swap", 3, 3)
    pts = views.embedding_points(video_bench, vc, tc, n_items=8, method="pca", k=3)
    assert len(pts) == 32 and len(pts.pairs) == 16 and set(pts.modality) == {"video", "text"}
    for a, b in pts.pairs:
        assert pts.item[a] == pts.item[b] and pts.modality[a] == pts.modality[b]
        assert (pts.condition[a], pts.condition[b]) == ("clean", "perturbed")
    # N_k is over the whole 12-video gallery (12 caption queries, k = 3): the sampled 8 hold at most Σ = 36
    full = views.embedding_points(video_bench, vc, tc, n_items=12, method="pca", k=3)
    for m in ("video", "text"):
        for c in ("clean", "perturbed"):
            sel = (full.modality == m) & (full.condition == c)
            assert int(full.k_occurrence[sel].sum()) == 3 * 12
    vrows = [r for r in range(len(pts)) if pts.modality[r] == "video"][:2]
    trows = [r for r in range(len(pts)) if pts.modality[r] == "text" and pts.condition[r] == "perturbed"][:1]
    exs = selection.selection_examples(video_bench, pts, vrows + trows, vc, tc,
                                       model_id="builtin:tiny-clip-video-meanp")
    assert [e.kind for e in exs] == ["video", "video", "text"]
    for e in exs:
        i = e.source["index"]
        assert e.record["seed"] == 3 + i  # gallery item i is perturbed with seed + i
        out = regenerate(e.record, e.clean)
        out = getattr(out, "output", out)
        if e.kind == "video":
            assert np.array_equal(out, e.output) and np.array_equal(e.clean, video_bench.gallery.videos[i])
            assert e.fps == 8.0 and e.source["collection"] == "video" and e.source["size"] == 64
        else:
            assert out == e.output and e.clean == video_bench.gallery.captions[i]
    b = Basket()
    assert sum(b.add(e) for e in exs) == 3
    z = tmp_path / "videos.zip"
    z.write_bytes(build_zip(b))
    res = regenerate_export(z)
    assert len(res) == 3 and all(r.ok for r in res)
    assert selection.selection_examples(video_bench, pts, vrows, Condition(), tc) == []
