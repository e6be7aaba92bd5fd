"""A Dataset object reaches the sweep engine directly (``run_sweep(..., dataset=ds)``): ``robustlab.failures`` of
an object registers nothing (``list_datasets()`` answers the same after it, issue 46's rule), maps it as the
registered dataset it came from is mapped, and its run folder records the object, so a resume given the same object
goes on, one given another is refused and one without it says in one line that it must be passed again. And
``--refine`` scores a VQA answer as the VQA task does: a multiple-choice question (NeXT-QA) by the option picked."""
import json

import numpy as np
import pytest

import robustlab.failures as F
from robustlab.bench import SweepError, SweepSpec, run_sweep
from robustlab.bench.spec import fingerprint, object_dataset
from robustlab.datasets import QA, InMemoryDataset, build
from robustlab.datasets.registry import list_datasets
from robustlab.failures.refine import _Evaluator, refine_item, table

MODEL = "builtin:tiny-clip"
N = 8


def _names() -> list[str]:
    return [d["name"] for d in list_datasets()]


@pytest.fixture(scope="module")
def by_name(tmp_path_factory):
    return F.failures(MODEL, "builtin", n=N, perturbations="gaussian_noise,keyboard", severities="1,3",
                      out=tmp_path_factory.mktemp("name") / "run", slices=False)


def test_a_failure_map_of_an_object_registers_nothing_and_maps_as_by_name(by_name, tmp_path):
    before = _names()
    ds = build("builtin", n=N)
    fmap = F.failures(MODEL, ds, perturbations="gaussian_noise,keyboard", severities="1,3", slices=False)
    assert _names() == before and "in-memory" not in _names()  # the same table of names, in the same process
    assert fmap.items == by_name.items and fmap.summary == by_name.summary
    assert fmap.dataset["object"] is True and fmap.dataset["name"] == "builtin" and fmap.dataset["n"] == N
    assert fmap.dataset["root"] is None and fmap.dataset["seed"] is None
    assert fmap.out is None  # the cells went to a temporary folder, removed once the map was read


def test_the_run_folder_records_the_object_and_resumes_only_with_it(tmp_path):
    ds = build("builtin", n=N)
    out = tmp_path / "run"
    fmap = F.failures(MODEL, ds, perturbations="gaussian_noise", severities="1,3", out=out, slices=False)
    assert fmap.out == str(out) and (out / "failures.json").is_file()
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["dataset"]["object"] == {"kind": "image", "type": type(ds).__name__, "fingerprint": fingerprint(ds)}
    assert sweep["dataset"]["n"] == N and sweep["dataset"]["name"] == "builtin"
    assert "in-memory" not in _names()
    spec = SweepSpec.from_json(sweep)
    # the same object (another instance, the same annotations): every cell is reused
    st = run_sweep(spec, out, dataset=build("builtin", n=N))
    assert st.done == 0 and st.skipped == st.total == 3
    again = F.failures(MODEL, build("builtin", n=N), perturbations="gaussian_noise", severities="1,3", out=out,
                       slices=False)
    assert again.status.done == 0 and again.items == fmap.items
    # without it: one line, nothing run, nothing rebuilt by name
    with pytest.raises(SweepError) as e:
        run_sweep(spec, out)
    assert "\n" not in str(e.value) and "pass the object again" in str(e.value) and "Dataset object" in str(e.value)
    # another object: refused, by run_sweep and by failures alike
    other = build("builtin", n=N, seed=7)
    assert fingerprint(other) != fingerprint(ds)
    with pytest.raises(SweepError, match="another Dataset object") as e:
        run_sweep(spec, out, dataset=other)
    assert "\n" not in str(e.value)
    with pytest.raises(F.FailureError, match="another Dataset object"):
        F.failures(MODEL, other, perturbations="gaussian_noise", severities="1,3", out=out, slices=False)


def test_an_object_spec_and_its_one_line_refusals(tmp_path):
    ds = build("builtin", n=4)
    d = object_dataset(ds)
    assert d["object"]["kind"] == "image" and d["n"] == 4 and d["options"] == {} and d["root"] is None
    spec = SweepSpec(models=[MODEL], dataset={"name": "builtin", "split": "test", "n": 4})
    with pytest.raises(SweepError, match="local engine") as e:  # Ray rebuilds datasets by name: refused first
        run_sweep(spec, tmp_path / "ray", engine="ray", dataset=ds)
    assert "\n" not in str(e.value) and not (tmp_path / "ray").exists()
    with pytest.raises(SweepError, match="takes a Dataset object"):
        run_sweep(spec, tmp_path / "r", dataset={"name": "builtin"})
    empty = InMemoryDataset([], [], name="empty")
    with pytest.raises(SweepError, match="is empty"):
        run_sweep(spec, tmp_path / "r", dataset=empty)
    with pytest.raises(F.FailureError, match="local engine"):
        F.failures(MODEL, ds, perturbations="gaussian_noise", engine="ray")
    with pytest.raises(F.FailureError, match="swept as it is"):
        F.failures(MODEL, ds, perturbations="gaussian_noise", n=3)
    # a spec over the object sweeps it, and the folder then refuses a registered dataset's sweep
    st = run_sweep(spec, tmp_path / "o", dataset=ds)
    assert st.done == st.total == 1
    assert json.loads((tmp_path / "o" / "sweep.json").read_text())["dataset"]["object"]["fingerprint"] == \
        fingerprint(ds)
    with pytest.raises(SweepError, match="holds a sweep over a Dataset object .*: pass that object") as e:
        run_sweep(spec, tmp_path / "o")  # the spec names builtin: the folder holds the object's sweep
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------------------------------------ VQA refinement
class StubVQA:
    """Answers 'open it' to a dark image and 'sleep' to a noisy one (its pixels' spread past ``noisy``), with no
    scores: the multiple-choice pick decides by the answer text ('open it' overlaps 'to open it' best)."""
    model_id = "stub-vqa"
    random_init = False

    def __init__(self, noisy: float):
        self.noisy = noisy

    def vqa(self, image, question):
        return ("sleep" if float(np.asarray(image, np.float32).std()) > self.noisy else "open it"), {}


class Map:
    task, metric, perturb_seed, k, direction = "vqa", "answer", 0, None, None


def test_refine_scores_a_multiple_choice_answer_by_the_option_it_picks():
    options = ["to show", "for fun", "to open it", "dance", "sleep"]
    qa = QA("why did the boy pick up one present", "to open it", "causal", {"choices": options, "answer_index": 2})
    ds = InMemoryDataset([np.full((32, 32, 3), 128, np.uint8)], [None], questions=[[qa]], name="stub-mc")
    lo, hi = table("gaussian_noise", 1), table("gaussian_noise", 5)
    ev = _Evaluator(Map(), ds, StubVQA(noisy=0.5 * 255 * (lo["sigma"] + hi["sigma"]) / 2), None)
    it = {"item": 0, "question": 0, "perturbation": "gaussian_noise", "axis": "visual", "seed": 0, "breaks_at": 5,
          "scores": {"0": 1, "1": 1, "5": 0}}
    # the holding answer 'open it' is the option 'to open it' (right), as the failure map's VQA cells score it;
    # compared as exact text it would have been wrong at every parameter, and nothing would have been bisected
    assert ev.value(it, 5, lo, "lo") == 1 and ev.value(it, 5, hi, "hi") == 0
    r = refine_item(ev, it, steps=6)
    assert r["refinable"] and r["from_severity"] == 1 and r["to_severity"] == 5
    assert 0 < r["t_pass"] < r["t"] < 1 and r["value"] == 0
    assert lo["sigma"] < r["params_pass"]["sigma"] < r["params"]["sigma"] < hi["sigma"]
