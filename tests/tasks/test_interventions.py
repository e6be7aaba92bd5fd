"""Model interventions as a condition axis: parsing, the models that take them, the tasks that run them, sweeps and
the report's Table 1 (Rawal et al.)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robustlab.models import interventions as I
from robustlab.tasks.conditions import conditions_json, normalize
from vilt_helpers import _random_vilt, _tiny_vilt

ROOT = Path(__file__).resolve().parents[2]


def test_parse_names_and_errors():
    assert I.parse("quag:unimodal").spec == "quag:unimodal"
    assert I.parse("quag:TT+VV").spec == "quag:unimodal"  # a preset's quadrants get the preset's name
    assert I.parse("quag:tv").spec == "quag:TV"
    assert I.parse("quag-attention:video-avg/additive").spec == "quag-attention:video-avg"  # the default
    assert I.parse("quag-attention:text-avg/multiplicative").variant == "multiplicative"
    assert I.parse("input:language-only").kind == "input"
    assert set(I.names()) >= {"quag:unimodal", "quag:crossmodal", "quag:video", "quag:text", "input:language-only",
                              "input:video-only", "quag-attention:video-avg", "quag-attention:text-avg",
                              "quag-attention:text-video-avg"}
    for bad, msg in [("quag:XX", "unknown quadrant"), ("blur:3", "unknown intervention"),
                     ("quag-attention:audio-avg", "unknown QUAG-attention mode"),
                     ("quag-attention:video-avg/exp", "unknown size correction"),
                     ("input:text-only", "unknown input ablation"), ("quag:unimodal/x", "no variant")]:
        with pytest.raises(I.InterventionError, match=msg):
            I.parse(bad)


def test_the_axis_leaves_results_without_interventions_as_they_were():
    assert set(conditions_json({})) == {"visual", "text"}  # cell keys of earlier runs are unchanged
    c = normalize({"intervention": "quag:crossmodal"})
    assert c["intervention"].name == "quag:crossmodal" and c["intervention"].severity == 1
    assert conditions_json(c)["intervention"]["name"] == "quag:crossmodal"
    assert normalize({"intervention": None}) == {}


def test_vqa_under_interventions_equals_the_hooked_model():
    from robustlab.datasets import build
    from robustlab.diagnostics import quag
    from robustlab.models.attention import intervention
    from robustlab.tasks import get

    model = _tiny_vilt()
    ds = build("builtin", split="test", n=40)
    res = get("vqa").evaluate(model, ds, [{}, {"intervention": "quag:unimodal"},
                                          {"intervention": "input:language-only"},
                                          {"intervention": "quag-attention:video-avg"}])
    acc = [r.metrics["acc"] for r in res]
    assert res[1].conditions["intervention"]["name"] == "quag:unimodal"
    items = [ds.item(i) for i in range(40)]
    vis = [ds.visual(i) for i in range(40) for _ in items[i].questions]
    qs = [q.question for it in items for q in it.questions]
    ans = [q.answer for it in items for q in it.questions]

    def accuracy(preds):
        return float(np.mean([p[0] == a for p, a in zip(preds, ans)]))

    assert acc[0] == pytest.approx(accuracy(model.vqa_batch(vis, qs)))
    with intervention(quag.replace_fn("unimodal")):
        assert acc[1] == pytest.approx(accuracy(model.vqa_batch(vis, qs)))
    grey = [np.full_like(v, 128) for v in vis]
    assert acc[2] == pytest.approx(accuracy(model.vqa_batch(grey, qs)))
    with intervention(quag.QuagAttention("video-avg")):
        assert acc[3] == pytest.approx(accuracy(model.vqa_batch(vis, qs)))
    assert acc[1] != acc[0] and acc[2] != acc[0]  # the interventions act (tiny-vilt uses both modalities)


def test_video_only_sends_only_the_special_tokens():
    model = _tiny_vilt()
    seen = []
    proxy = I._InputAblated(model, "video-only")
    orig = model.tokenize

    def spy(texts):
        ids, mask = orig(texts)
        seen.append(model.tokenizer.convert_ids_to_tokens(ids[0][mask[0].bool()].tolist()))
        return ids, mask

    model.tokenize = spy
    try:
        img = np.zeros((64, 64, 3), np.uint8)
        proxy.vqa(img, "is there a red circle?")
    finally:
        del model.tokenize
    assert seen == [["[CLS]", "[SEP]"]]
    assert not hasattr(I._InputAblated(object(), "video-only"), "vqa_batch")  # a missing method stays missing


def test_which_models_and_tasks_take_interventions():
    from robustlab.datasets import build
    from robustlab.models import load_model
    from robustlab.tasks import get

    clip = load_model("builtin:tiny-clip", device="cpu")
    with pytest.raises(I.InterventionError, match="needs a fusion model"):
        I.check("quag:unimodal", clip)
    ds = build("builtin", split="test", n=8)
    with pytest.raises(ValueError, match="retrieval takes no model interventions"):
        get("retrieval").evaluate(clip, ds, [{"intervention": "input:language-only"}])
    hf = _random_vilt()
    assert I.check("quag:crossmodal", hf).spec == "quag:crossmodal"
    assert I.check("quag-attention:video-avg", hf).spec == "quag-attention:video-avg"  # hf-vilt takes it too
    with pytest.raises(I.InterventionError, match="QUAG-attention .* implements for builtin:tiny-vilt"):
        I.check("quag-attention:video-avg", type("Fusion", (), {"forward_with_attention": lambda *a: None})())
    # hf-vilt answers one question per forward: the intervention reaches it through forward_with_attention
    img = np.random.default_rng(0).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    base = hf.vqa(img, "is it red?")[1]
    with I.applied(hf, I.as_condition("quag:text")) as m:
        ablated = m.vqa(img, "is it red?")[1]
    assert base != ablated and hf.vqa(img, "is it red?")[1] == base  # nothing left behind


def _cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "robustlab.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_sweep_and_report_table1(tmp_path):
    _tiny_vilt()
    from robustlab.bench.report import load_run, report_tables

    out = tmp_path / "run"
    r = _cli("bench", "--models", "builtin:tiny-vilt", "--dataset", "builtin-videos", "--n", "60", "--tasks", "vqa",
             "--perturbations", "none", "--interventions", "quag:unimodal,input:video-only,quag:VV+TV",
             "--out", str(out), "--quiet", "--report")
    assert r.returncode == 0, r.stderr
    t = report_tables(load_run(out))["interventions"]
    assert list(t["intervention"]) == ["baseline", "input:video-only", "quag:unimodal", "quag:video"]
    base = t["score"].iloc[0]
    np.testing.assert_allclose(t["delta"], t["score"] - base)
    assert all((d == "↓") == (base - s >= 0.02 - 1e-12) for d, s in zip(t["drop"][1:], t["score"][1:]))
    assert {"type: direction", "type: order"} <= set(t.columns)
    html = (out / "report.html").read_text()
    assert "Model interventions (Rawal et al., Table 1)" in html and "quag:unimodal" in html
    # resumable like any sweep: nothing to run the second time
    r2 = _cli("bench", "--models", "builtin:tiny-vilt", "--dataset", "builtin-videos", "--n", "60", "--tasks", "vqa",
              "--perturbations", "none", "--interventions", "quag:unimodal,input:video-only,quag:VV+TV",
              "--out", str(out), "--quiet")
    assert r2.returncode == 0 and "0 cells run, 4 already there" in r2.stderr


@pytest.mark.parametrize("extra, message", [
    (["--interventions", "quag:bogus"], "unknown quadrant or preset 'bogus'"),
    (["--interventions", "quag-attention:audio-avg"], "unknown QUAG-attention mode"),
])
@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_cli_intervention_errors_are_one_line(tmp_path, extra, message):
    r = _cli("bench", "--models", "builtin:tiny-vilt", "--dataset", "builtin", "--tasks", "vqa", "--n", "4",
             "--perturbations", "none", "--out", str(tmp_path / "o"), "--quiet", *extra)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("robustlab:")]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr
