"""Issue 24 in AppTest: the model follows the data (reproduction 5), the caption tables keep the ground truth in
view (reproduction 6), ours vs baseline side by side, and widget state sent to the browser when Python corrects it.
The browser-level reproductions 1-3 and the monkey run are in tests/browser/test_browser_state.py."""
from __future__ import annotations

from apptest_helpers import fresh as app, png_uploads


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def clean_r1(at, direction: str = "text→video") -> float:
    (df,) = [d.value for d in at.dataframe if "condition" in d.value.columns and "R@1" in d.value.columns]
    return float(df[(df["condition"] == "clean") & (df["direction"] == direction)]["R@1"].iloc[0])


def test_the_default_image_model_on_videos_switches_to_its_own_familys_video_model():
    """Issue 27: the default tiny-vit-clip on built-in videos uses tiny-vit-clip-video-seqtransf (the same ViT frame
    tower with CLIP4Clip's seqTransf head), with the same undo."""
    at = app(dataset="builtin-videos")
    (line,) = [i.value for i in at.info if "is an image model" in i.value]
    assert "**builtin:tiny-vit-clip** is an image model" in line and "builtin:tiny-vit-clip-video-seqtransf" in line
    assert any("Model **builtin:tiny-vit-clip-video-seqtransf**" in c.value for c in at.caption)
    assert clean_r1(at) > 0.25  # the video model (0.678 on 1,000 held-out videos), not chance (1/200)
    at.button(key="keep_model_btn").click().run()
    assert not at.exception and any("Model **builtin:tiny-vit-clip**" in c.value for c in at.caption)


def test_an_image_model_on_videos_switches_to_the_video_model_with_an_undo():
    """Reproduction 5: built-in videos with the (then default) image model tiny-clip used to score near chance
    (R@1 0.06)."""
    at = app(dataset="builtin-videos", model_choice="builtin:tiny-clip")
    (line,) = [i.value for i in at.info if "is an image model" in i.value]
    assert "builtin:tiny-clip-video-seqtransf" in line
    assert any("Model **builtin:tiny-clip-video-seqtransf**" in c.value for c in at.caption)
    r1 = clean_r1(at)
    assert r1 > 0.5  # the video model (README: 0.884 on 1,000 held-out videos), not chance (1/200)
    at.button(key="keep_model_btn").click().run()
    assert not at.exception and not [i for i in at.info if "is an image model" in i.value]
    assert any("Model **builtin:tiny-clip**" in c.value for c in at.caption)
    assert clean_r1(at) < r1 / 2  # the image model averaging frames: what the undo asked for


def test_a_video_model_chosen_in_the_sidebar_is_kept():
    at = app(dataset="builtin-videos", model_choice="builtin:tiny-clip-video-meanp")
    assert not [i for i in at.info if "is an image model" in i.value]
    assert any("Model **builtin:tiny-clip-video-meanp**" in c.value for c in at.caption)


def test_caption_tables_keep_the_ground_truth_in_view():
    """Reproduction 6: image→text put "score" and "ground truth ✓" after a long caption, beyond the right edge."""
    at = app(direction="i2t")
    for df in at.dataframe[:2]:
        assert list(df.value.columns) == ["rank", "ground truth", "score", "caption #", "caption"]
    assert any("✓" in set(df.value["ground truth"]) for df in at.dataframe[:2])


def test_ours_vs_baseline_on_retrieval_and_hubness():
    at = app(model_choice="builtin:tiny-clip", baseline="builtin:tiny-clip-video-meanp")
    (df,) = [d.value for d in at.dataframe if "model" in d.value.columns and "R@1 clean" in d.value.columns]
    assert list(df["model"]) == ["builtin:tiny-clip", "builtin:tiny-clip-video-meanp"]
    ours = float(metric(at, "Gallery text→image R@1"))
    assert abs(df.loc[0, "R@1 both perturbed"] - ours) < 5e-4  # the same number the page shows for ours
    assert df.loc[0, "R@1 clean"] != df.loc[1, "R@1 clean"]  # two models, two results
    assert any(s.value.startswith("Ours vs baseline (gaussian_noise s3 / keyboard s2)") for s in at.subheader)
    at.switch_page("pages/hubness.py").run()
    assert not at.exception
    (hub,) = [d.value for d in at.dataframe if "model" in d.value.columns and "k_skewness" in d.value.columns]
    assert sorted(set(hub["model"])) == ["builtin:tiny-clip", "builtin:tiny-clip-video-meanp"]
    assert len(hub) == 4


def test_a_caption_index_relabelled_by_another_dataset_is_sent_again():
    """The mechanism behind reproduction 1: the same value, another label -> set through the Session State API,
    so the browser shows the new label (``set_value``)."""
    at = app()
    assert not at.selectbox(key="query_idx").proto.set_value
    at.radio(key="dataset").set_value("builtin-videos").run()
    sb = at.selectbox(key="query_idx")
    assert sb.proto.set_value and sb.proto.raw_value.startswith("#0 · the ")
    assert sb.proto.raw_value[5:] == at.text[0].value  # the label the browser gets is the query actually used


def test_a_clamped_k_comes_back_when_the_gallery_grows():
    """Reproduction 3's mechanism: k clamped to a small gallery is the viewer's 15 again on a large one."""
    from robustlab.datasets.uploads import ingest_uploads

    files, captions = png_uploads(3, "s")
    rep = ingest_uploads(files, caption_lines="\n".join(captions))
    at = app("pages/hubness.py", upload_gallery=rep.gallery, upload_gallery_id="up3", dataset="upload")
    assert at.number_input(key="hub_k").value == 2
    at.session_state["dataset"] = "builtin"
    at.run()
    assert not at.exception and at.number_input(key="hub_k").value == 15


def test_grounding_says_when_there_is_no_baseline_to_compare_with():
    at = app("pages/grounding.py")
    assert any(s.value == "Ours vs baseline" for s in at.subheader)
    assert any("No other grounding model is offered here to compare builtin:tiny-vilt with" in c.value
               for c in at.caption)


def test_task_model_boxes_are_labelled_as_people_write_the_tasks():
    at = app("pages/attention.py")
    labels = [sb.label for sb in at.selectbox]
    assert "VQA model" in labels and "Vqa model" not in labels, labels


def test_a_kept_value_is_the_widgets_declared_default():
    """A widget the browser mounts afresh (its state dropped at the end of a finished run) shows its declared
    default: that is the value the page uses, never the first-run default or the slider's minimum."""
    at = app()
    assert at.slider(key="topk").value == 5 and list(at.slider(key="topk").proto.default) == [5]
    at.slider(key="topk").set_value(9)
    at.slider(key="img_sev").set_value(1)
    at.number_input(key="seed").set_value(7).run()
    assert not at.exception
    assert at.slider(key="topk").value == 9 and list(at.slider(key="topk").proto.default) == [9]
    assert list(at.slider(key="img_sev").proto.default) == [1]
    assert at.number_input(key="seed").proto.default == 7
    assert {"topk", "img_sev", "seed"} <= set(at.session_state["_drawn_done"])  # app.py: the run ended


def test_a_widget_drawn_only_in_runs_cut_short_is_sent_again(monkeypatch):
    """The browser drops, at the end of a finished run, every widget that run did not draw; a run cut short by a
    rerun may draw it on the server while the browser never keeps it. Until a finished run has drawn it, its kept
    value is sent again (``remount``)."""
    import types

    import ui.widget_state as ws

    state, sent = {}, []
    monkeypatch.setattr(ws, "st", types.SimpleNamespace(session_state=state))
    monkeypatch.setattr(ws, "_resend", lambda k, v: sent.append((k, v)))

    def run(draw: bool, finished: bool):
        ws.begin_run()
        if draw:
            ws.remount("topk")
            state.setdefault("topk", 5)
        if finished:
            ws.end_run()

    run(draw=True, finished=True)      # first time: drawn with its default, nothing to send
    run(draw=True, finished=False)     # drawn by the last finished run: the browser has it
    assert sent == []
    run(draw=False, finished=True)     # a finished run without it (st.stop before it): the browser drops it
    run(draw=True, finished=False)     # cut short after drawing it: sent, but maybe never kept
    run(draw=True, finished=False)     # so sent again
    run(draw=True, finished=True)      # and again; this run finished, so the browser keeps it from now on
    run(draw=True, finished=True)
    assert sent == [("topk", 5)] * 3
