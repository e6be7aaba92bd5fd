"""VQA breaking points (the answer is wrong) and ``--refine`` (the breaking parameter value between two severities,
recorded so that it regenerates bit for bit), issue 47 item 1."""
import jsonschema
import numpy as np
import pytest

import robustlab.failures as F
from robustlab.datasets import build
from robustlab.failures.refine import bisect, interpolate, refinable, table
from robustlab.metrics.retrieval import ranks as rank_of
from robustlab.models import load_model
from robustlab.perturb import perturb, regenerate
from robustlab.perturb.condition import Condition
from robustlab.perturb.record import hash_value
from robustlab.tasks.registry import get as get_task
from robustlab.tasks.retrieval_bench import RetrievalBench


# ------------------------------------------------------------------------------------------------ VQA
def test_vqa_breaking_points_are_the_wrong_answers(tmp_path):
    fmap = F.failures("builtin:tiny-vilt", "builtin", task="vqa", n=10, perturbations="gaussian_noise,word_deletion",
                      severities="1,3,5", out=tmp_path / "q", slices=False)
    d = fmap.to_json()
    jsonschema.validate(d, F.schema())
    assert d["task"] == "vqa" and d["metric"] == "answer" and d["k"] is None and d["threshold"] is None
    model, ds, task = load_model("builtin:tiny-vilt", device="cpu"), build("builtin", n=10), get_task("vqa")
    for axis, name in (("visual", "gaussian_noise"), ("text", "word_deletion")):
        by_sev = {}
        for s in (0, 1, 3, 5):
            conds = {axis: Condition(name, s, 0)} if s else None
            by_sev[s] = task.evaluate(model, ds, conds)[0].extra
        mine = [it for it in fmap.items if it["perturbation"] == name]
        assert len(mine) == 10
        for e, it in enumerate(mine):
            right = {s: by_sev[s]["correct"][e] for s in by_sev}
            assert it["scores"] == {str(s): v for s, v in right.items()}
            assert it["answers"] == {str(s): by_sev[s]["answers"][e] for s in by_sev}
            assert it["expected"] == ds.item(it["item"]).questions[0].answer
            wrong = [s for s in (0, 1, 3, 5) if not right[s]]
            assert it["breaks_at"] == (wrong[0] if wrong else None) and it["thief"] is None
            assert (it["answers"]["0"].strip().lower() == it["expected"].strip().lower()) == bool(right[0])
    assert any(it["breaks_at"] for it in fmap.items), "nothing broke: the test would show nothing"


def test_vqa_without_questions_is_one_line(tmp_path):
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(3):
        Image.fromarray(np.full((16, 16, 3), 40 * i, np.uint8)).save(folder / f"{i}.png")
    with pytest.raises(F.FailureError) as e:
        F.failures("builtin:tiny-vilt", "upload", task="vqa", root=folder, perturbations="gaussian_noise",
                   out=tmp_path / "o")
    assert "\n" not in str(e.value) and "vqa" in str(e.value)
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------------ refine
def test_refinable_and_interpolate():
    ok, why, changed = refinable("gaussian_noise", 2, 3)
    assert ok and changed == ["sigma"]
    assert not refinable("gaussian_noise", 0, 1)[0] and "lowest swept severity" in refinable("gaussian_noise", 0, 1)[1]
    a, b = table("defocus_blur", 1), table("defocus_blur", 2)
    mid = interpolate(a, b, 0.5)
    assert isinstance(mid["radius"], int) and a["radius"] <= mid["radius"] <= b["radius"]
    assert mid["alias_blur"] == pytest.approx((a["alias_blur"] + b["alias_blur"]) / 2)
    assert interpolate(a, b, 0.0) == a and interpolate(a, b, 1.0) == b
    ok, why, _ = refinable("word_deletion/qiu", 1, 2)
    assert ok, why
    hi, lo = bisect(lambda t: t >= 0.3, steps=6)
    assert lo < 0.3 <= hi and hi - lo == pytest.approx(1 / 64)


@pytest.fixture(scope="module")
def refined(tmp_path_factory):
    return F.failures("builtin:tiny-clip", "builtin", n=30, perturbations="gaussian_noise,keyboard", refine=True,
                      out=tmp_path_factory.mktemp("rf") / "run", slices=False)


def test_the_refined_value_lies_between_the_two_severities(refined):
    jsonschema.validate(refined.to_json(), F.schema())
    assert refined.refine_steps == 6
    done = [it for it in refined.items if (it.get("refined") or {}).get("refinable")]
    assert done, "nothing was refinable: the test would show nothing"
    for it in refined.items:
        r = it.get("refined")
        if not it["breaks_at"]:
            assert r is None
            continue
        if not r["refinable"]:
            assert r["why"]
            continue
        assert r["to_severity"] == it["breaks_at"] and r["from_severity"] < r["to_severity"]
        lo, hi = table(it["perturbation"], r["from_severity"]), table(it["perturbation"], r["to_severity"])
        assert 0 <= r["t_pass"] < r["t"] <= 1 and r["t"] - r["t_pass"] == pytest.approx(1 / 64)
        for key in r["changed"]:
            a, b = sorted((lo[key], hi[key]))
            assert a <= r["params"][key] <= b and a <= r["params_pass"][key] <= b
        assert r["value"] > 1  # it fails at the breaking parameters (k = 1)
        assert r["record"]["severity"] == it["breaks_at"] and r["record"]["seed"] == it["seed"]


def test_the_refined_record_regenerates_bit_for_bit(refined):
    ds = build("builtin", n=30)
    for axis in ("visual", "text"):
        it = next(i for i in refined.items if i["axis"] == axis and (i.get("refined") or {}).get("refinable")
                  and i["refined"]["t"] < 1)
        rec = it["refined"]["record"]
        assert rec["params_override"] is True and rec["params"] == it["refined"]["params"]
        clean = ds.visual(it["item"]) if axis == "visual" else ds.texts()[it["caption"]]
        a = regenerate(rec, clean)
        b = perturb(clean, it["perturbation"], it["breaks_at"], seed=it["seed"], params=it["refined"]["params"]).output
        at_table = perturb(clean, it["perturbation"], it["breaks_at"], seed=it["seed"]).output
        same = np.array_equal if axis == "visual" else (lambda x, y: x == y)
        assert same(a, b) and hash_value(a) == rec["output_hash"]
        assert not same(a, at_table) or rec["params"] == table(it["perturbation"], it["breaks_at"])


def test_a_query_perturbation_holds_at_params_pass_and_fails_at_params(refined):
    """keyboard perturbs the caption query only: rank its perturbed caption against the clean gallery by hand."""
    model = load_model("builtin:tiny-clip", device="cpu")
    ds = build("builtin", n=30)
    bench = RetrievalBench(model, ds)
    V = bench.visuals()[2]
    it = next(i for i in refined.items if i["perturbation"] == "keyboard" and (i.get("refined") or {}).get("refinable"))
    r = it["refined"]
    cap = ds.texts()[it["caption"]]

    def rank(params):
        t = perturb(cap, "keyboard", it["breaks_at"], seed=it["seed"], params=params).output
        e = np.asarray(model.encode_texts([t]), np.float32)[0]
        return int(rank_of((e @ V.T)[None, :], [bench.text_pos[it["caption"]]])[0])
    assert rank(r["params"]) == r["value"] and rank(r["params"]) > 1
    if r["t_pass"] > 0:
        assert rank(r["params_pass"]) == 1
