"""AppTest of the Attention page: QUAG-ablated attention maps on a built-in scene and video with tiny-vilt (heatmaps,
token overlay, answers, CSV), QUAG-attention, a chosen layer and head, Table 1 over a few items, and one-line
messages for an empty question and a missing upload — never a traceback."""
import pytest
from streamlit.testing.v1 import AppTest

from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")
TIMEOUT = 180
PAGE = "pages/attention.py"


def page(**state):
    at = AppTest.from_file("../../app.py", default_timeout=TIMEOUT)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _charts(at):
    return [c for c in at.get("plotly_chart")]


def test_scene_with_the_four_short_circuits():
    at = page()
    assert at.selectbox(key="at_model").value == "builtin:tiny-vilt"
    assert len(_charts(at)) == 4  # heatmaps, the rank diagnostic, token overlay, answers
    import json

    specs = [json.loads(c.proto.spec) for c in _charts(at)]
    rank = [f for f in specs if f["layout"].get("yaxis", {}).get("type") == "log"]
    assert len(rank) == 1 and [t["name"].split(" (")[0] for t in rank[0]["data"]] == ["baseline", "video", "text"]
    cap = " ".join(c.value for c in at.caption)
    assert "Video short-circuit: rank" in cap and "holds" in cap and "violated" not in cap

    heat = specs[0]
    titles = [a["text"] for a in heat["layout"]["annotations"]]
    assert titles == ["baseline", "unimodal", "crossmodal", "video", "text"]
    assert heat["layout"]["coloraxis"]["cmin"] == 0  # one shared colour scale
    assert any(s["type"] == "line" for s in heat["layout"]["shapes"])  # quadrant boundaries
    df = at.dataframe[0].value
    assert list(df["ablation"]) == ["baseline", "unimodal", "crossmodal", "video", "text"]
    assert all(isinstance(a, str) and a for a in df["answer"])
    assert "Dataset answer" in " ".join(c.value for c in at.caption)
    assert at.get("download_button")


def test_video_layer_head_and_quag_attention():
    at = page(at_source="video", at_layer=1, at_head=0,
              at_abl=["crossmodal", "quag-attention:video-avg"])
    heat = _charts(at)[0]
    import json

    titles = [a["text"] for a in json.loads(heat.proto.spec)["layout"]["annotations"]]
    assert titles == ["baseline", "crossmodal", "QUAG-attn video-avg"]
    overlay = json.loads(_charts(at)[1].proto.spec)
    assert sum(1 for t in overlay["data"] if t["type"] == "image") >= 2  # frames drawn with the token's attention


def test_table1_over_items():
    at = page(at_t1_n=10, at_t1_iv=["quag:unimodal", "input:language-only"])
    at.button(key="at_t1_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    df = at.dataframe[-1].value
    assert list(df["intervention"]) == ["baseline", "input:language-only", "quag:unimodal"]
    # Rawal et al.'s units: accuracy in %, Δ in percentage points (the library's fractions × 100), named so
    acc, delta = "accuracy (%)", "Δ vs baseline (percentage points)"
    assert list(df.columns[:5]) == ["intervention", acc, delta, "drop ≥ 2 pts", "items"]
    per_type = list(df.columns[5:])
    assert per_type and all(c.startswith("accuracy on ") and c.endswith(" questions (%)") for c in per_type)
    assert df[acc].between(0, 100).all() and df[delta].iloc[0] == 0
    assert ((df[delta] - (df[acc] - df[acc].iloc[0])).abs() <= 0.11).all()  # Δ is in the accuracy's points
    assert (df["drop ≥ 2 pts"] == "↓").tolist() == (df[delta] <= -2).tolist()
    assert (df[acc].iloc[0] > 1) or (df[acc] == 0).all()  # not a fraction
    cap = " ".join(c.value for c in at.caption)
    assert "accuracy in %, Δ in percentage points" in cap and "at least 2 percentage points" in cap
    assert at.dataframe[-1].proto.placeholder == "—"  # a missing per-type accuracy shows "—", never "None"


def test_empty_question_is_a_message():
    at = page()
    key = next(t.key for t in at.text_input if t.key.startswith("at_q_"))
    at.text_input(key=key).set_value("  ").run()
    assert not at.exception
    assert any("Type a question" in i.value for i in at.info)


def test_upload_source_without_a_file_says_what_to_do():
    at = page(at_source="image")
    assert any("Upload" in i.value for i in at.info)
    assert not at.exception and not at.get("plotly_chart")
