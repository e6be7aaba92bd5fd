"""AppTest of the CLAVI page: a built-in pair (both players, the 19 questions on V and V', the metrics), the seamless
complement, an uploaded video with typed intervals, a bad interval as one line, and a run over built-in pairs."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")
TIMEOUT = 180
PAGE = "pages/clavi.py"


def page(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_builtin_pair_with_its_questions_and_metrics():
    at = page()
    assert at.selectbox(key="cv_model").value == "builtin:tiny-vilt"  # the sidebar's tiny-clip cannot answer
    assert len(at.get("video")) == 2  # V and V' side by side
    df = at.dataframe[0].value
    assert len(df) == 19 and list(df["truth on V"]).count("yes") == 6 and list(df["truth on V′"]).count("yes") == 6
    assert set(df["video-consistent"]) <= {"✓", "✗"}
    # every column says what it holds (the two ✓/✗ columns had no header), and no cell reads "None"
    assert list(df.columns) == ["question type", "question", "truth on V", "model on V", "right on V", "truth on V′",
                                "model on V′", "right on V′", "video-consistent", "text-consistent on V",
                                "text-consistent on V′"]
    assert set(df["right on V"]) | set(df["right on V′"]) <= {"✓", "✗"}
    assert not (df.astype(str) == "None").any().any() and not df.isna().any().any()
    assert at.dataframe[0].proto.placeholder == "—"
    assert {m.label for m in at.metric} >= {"Balanced accuracy", "CAcc_V complement"}
    assert any("seams after frames" in c.value for c in at.caption)
    at2 = page(cv_method="render")
    assert any("no seams" in c.value for c in at2.caption)


def test_uploaded_video_with_typed_intervals_and_a_bad_interval():
    from robustlab.export.basket import LoadedInput

    frames = np.stack([np.full((32, 32, 3), 8 * k, np.uint8) for k in range(24)])
    up = LoadedInput("video", frames, {"kind": "upload"}, "clip.mp4", fps=8.0)
    at = page(cv_source="upload", pt_item_video=up, cv_a0=0.25, cv_a1=1.0, cv_b0=1.5, cv_b1=2.75)
    df = at.dataframe[0].value
    assert df["question"].iloc[0] == "Was someone opening a door?"
    assert len(at.get("video")) == 2
    bad = page(cv_source="upload", pt_item_video=up, cv_a0=0.25, cv_a1=2.0, cv_b0=1.5, cv_b1=2.75)
    assert any("overlap" in e.value for e in bad.error)


def test_run_over_builtin_pairs_with_both_complements():
    at = page(cv_n=5, cv_run_methods=["swap", "render"])
    at.button(key="cv_run").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[1].value
    assert list(table.columns) == ["swap complement", "render complement"] and "CAcc_V complement" in table.index
    assert table.index.name == "metric"  # the row labels' column has a header
    fine = at.dataframe[2].value
    assert fine["question type"].tolist() == ["E", "E-NC", "BE", "BA", "BA-NC"]
    assert list(fine.columns) == ["question type", "subset", "accuracy on V, Q", "accuracy on V, Q′",
                                  "accuracy on V′, Q", "accuracy on V′, Q′"]
    # a type without a swapped-word Q′ has no value there: missing in the data, shown as "—" (never "None")
    e = fine.set_index("question type")
    assert e.loc[["E", "E-NC", "BA-NC"], ["accuracy on V, Q′", "accuracy on V′, Q′"]].isna().all().all()
    assert e.loc[["BE", "BA"]].drop(columns="subset").notna().all().all()
    assert all(d.proto.placeholder == "—" for d in at.dataframe)
    assert len(at.get("download_button")) >= 2
