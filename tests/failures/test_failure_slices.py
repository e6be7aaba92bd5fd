"""A failure map's slices (issue 47, item 1 and 2 wired together): computed by default from the map's own items,
discovered slices from the model's embeddings and captions (no metadata), metadata slices side by side where the
dataset has attributes, the statistics recomputed by hand from the items, ``slices=False`` skips them."""
import jsonschema
import numpy as np
import pytest

import robustlab.failures as F
from robustlab.datasets import build
from robustlab.failures.slicing import dataset_attributes, failure_slices, slice_severity

N = 60


@pytest.fixture(scope="module")
def fmap(tmp_path_factory):
    return F.failures("builtin:tiny-clip", "builtin", n=N, perturbations="gaussian_noise,contrast",
                      severities="1-5", out=tmp_path_factory.mktemp("sl") / "run")


def _per_item(fmap, name):
    """(holds clean, lowest breaking severity >= 1 or NaN) per item, by hand from the items."""
    holds = np.zeros(N, bool)
    sev = np.full(N, np.nan)
    for it in fmap.items:
        if it["breaks_at"] != 0:
            holds[it["item"]] = True
        if it["perturbation"] == name and it["breaks_at"]:
            sev[it["item"]] = it["breaks_at"] if np.isnan(sev[it["item"]]) else min(sev[it["item"]], it["breaks_at"])
    return holds, sev


def test_slices_are_computed_by_default_and_follow_the_schema(fmap):
    d = fmap.to_json()
    jsonschema.validate(d, F.schema())
    assert fmap.slices, "the built-in world has attributes: metadata slices at least"
    kinds = {s["kind"] for s in fmap.slices}
    assert "metadata" in kinds and kinds <= {"discovered", "metadata"}
    assert {s["perturbation"] for s in fmap.slices} <= {None, "gaussian_noise", "contrast"}
    assert d["slices_note"] is None


def test_each_slice_statistic_is_what_the_items_give(fmap):
    for s in fmap.slices:
        if s["perturbation"] is None:
            continue
        holds, sev = _per_item(fmap, s["perturbation"])
        pop = np.flatnonzero(holds)
        assert s["severity"] == slice_severity(sev[pop], fmap.severities)
        failed = np.zeros(N, bool)
        failed[pop] = sev[pop] <= s["severity"]
        inside = np.zeros(N, bool)
        inside[s["members"]] = True
        assert set(s["members"]) <= set(pop.tolist()) and s["size"] == len(s["members"])
        assert s["failure_rate"] == pytest.approx(failed[inside].mean(), abs=1e-4)
        rest = holds & ~inside
        assert s["rest_rate"] == pytest.approx(failed[rest].mean(), abs=1e-4)
        assert s["ci"][0] <= s["difference"] + 1e-4 and s["difference"] - 1e-4 <= s["ci"][1]
        assert all(failed[i] for i in s["examples"]) and set(s["examples"]) <= set(s["members"])
        broke = sev[s["members"]][failed[s["members"]]]
        if broke.size:
            assert s["mean_breaking_severity"] == pytest.approx(broke.mean(), abs=1e-3)
        if s["kind"] == "metadata":
            name, value = s["description"].split("=", 1)
            attrs = dataset_attributes(build("builtin", n=N))[name]
            assert all(any(str(v) == value for v in attrs[i]) for i in s["members"])
        else:
            assert s["significant"] and s["embedder"] == "builtin:tiny-clip"


def test_discovery_reads_no_metadata(fmap, monkeypatch):
    """With the dataset's attributes hidden, the discovered slices are the same; only the metadata ones go."""
    import robustlab.failures.slicing as SL

    ds = build("builtin", n=N)
    from robustlab.models import load_model
    model = load_model("builtin:tiny-clip", device="cpu")
    full = failure_slices(fmap, ds, model)
    monkeypatch.setattr(SL, "dataset_attributes", lambda ds: None)
    blind = failure_slices(fmap, ds, model)
    assert [s for s in full if s["kind"] == "discovered"] == blind
    assert all(s["kind"] == "discovered" for s in blind)


def test_no_slices_and_a_failing_finder(tmp_path):
    off = F.failures("builtin:tiny-clip", "builtin", n=N, perturbations="gaussian_noise", severities="1,3",
                     out=tmp_path / "a", slices=False)
    assert off.slices == [] and off.slices_note is None

    def broken(fmap, ds, model):
        raise RuntimeError("no encoder here")
    noted = F.failures("builtin:tiny-clip", "builtin", n=N, perturbations="gaussian_noise", severities="1,3",
                       out=tmp_path / "a", slices=broken)
    assert noted.slices == [] and noted.slices_note == "no slices: no encoder here"
    assert noted.items == off.items  # the map stands


def test_a_fusion_model_is_embedded_by_the_builtin_clip(tmp_path):
    fmap = F.failures("builtin:tiny-vilt", "builtin", task="vqa", n=N, perturbations="gaussian_noise",
                      severities="1,3,5", out=tmp_path / "q")
    jsonschema.validate(fmap.to_json(), F.schema())
    assert fmap.slices_note is None
    assert all(s.get("embedder", "builtin:tiny-clip") == "builtin:tiny-clip" for s in fmap.slices)


def test_attributes_of_the_builtin_world():
    ds = build("builtin", n=5)
    attrs = dataset_attributes(ds)
    assert set(attrs) == {"background", "objects", "color", "shape", "size", "texture"}
    assert attrs["background"][2] == {ds.scenes[2].background} and attrs["objects"][3] == {len(ds.scenes[3].objects)}
    assert dataset_attributes(build("builtin-videos", n=3)) is not None
