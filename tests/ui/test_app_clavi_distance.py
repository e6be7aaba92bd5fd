"""AppTest of the CLAVI page's complement-pair attention distance (Rawal et al. App. B.7): a run over one built-in
pair shows Table 16 and Fig. 8 drawn from the result object (its labels, its counts)."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from robustlab.diagnostics import clavi_distance as cd
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")


@pytest.mark.slow
def test_distance_section_shows_table_16_and_fig_8():
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["cv_dist_n"] = 1
    at.switch_page("pages/clavi.py").run()
    assert not at.exception, at.exception
    n_tables = len(at.dataframe)
    at.button(key="cv_dist_run").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe) == n_tables + 1
    t16 = at.dataframe[-1].value
    assert list(t16["complement"]) == [cd.LABELS["video"]] * 2 + [cd.LABELS["text"]] * 2
    assert t16["pairs"].sum() == 8  # BA: 4 video and 4 text complement pairs per CLAVI pair
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (fig,) = [f for f in figs if f["layout"].get("title", {}).get("text") == cd.LABELS["title"]]
    assert {d["name"] for d in fig["data"]} == {cd.LABELS["correct"], cd.LABELS["incorrect"]}
    assert sum(sum(d["y"]) for d in fig["data"]) == 8
