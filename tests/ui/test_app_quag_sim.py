"""AppTest of the Attention page's simulation-study section (Rawal et al. §3, Fig. 2): a bad α is one line, a run
draws the chart from the result object (its α and its axis labels), and the chart stays when the widgets change."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from robustlab.diagnostics import quag_simulation as qs
from robustlab.models.checkpoints import checkpoint_path
from robustlab.models.tiny_vilt import CHECKPOINT

pytestmark = pytest.mark.skipif(not checkpoint_path(CHECKPOINT).exists(),
                                reason="assets/tiny-vilt.safetensors missing; run `robustlab train tiny-vilt`")


def _sim_chart(at):
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return [f for f in specs if f["layout"].get("title", {}).get("text") == qs.TITLE]


@pytest.mark.slow
def test_simulation_section_runs_and_draws_from_the_result():
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["at_sim_alphas"] = "0.1, 0.7"
    at.session_state["at_sim_epochs"] = 1
    at.switch_page("pages/attention.py").run()
    assert not at.exception, at.exception
    assert not _sim_chart(at)  # nothing drawn before a run
    at.button(key="at_sim_run").click().run()
    assert not at.exception, at.exception
    errs = [e.value for e in at.error]
    assert any("α must be in [0, 0.5)" in e for e in errs) and all("\n" not in e for e in errs)
    at.text_input(key="at_sim_alphas").set_value("0.1, 0.3").run()
    at.button(key="at_sim_run").click().run()
    assert not at.exception, at.exception
    (fig,) = _sim_chart(at)
    assert fig["data"][0]["x"] == [0.1, 0.3] and fig["data"][0]["name"] == "crossmodal short-circuit"
    assert fig["layout"]["xaxis"]["title"]["text"] == qs.X_LABEL
    assert fig["layout"]["yaxis"]["title"]["text"] == qs.Y_LABEL.format(sc="crossmodal")
    at.text_input(key="at_sim_alphas").set_value("0.2").run()  # widgets changed, no run: the result stays as it was
    (fig,) = _sim_chart(at)
    assert fig["data"][0]["x"] == [0.1, 0.3]
