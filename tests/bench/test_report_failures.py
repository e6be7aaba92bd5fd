"""The report's "Where it breaks" section (robustlab.bench.report_failures): a failure map's folder (failures.json
next to the sweep's cells) gets the worst slices with their intervals and thumbnails and the most fragile examples;
a search result adds the weakest adversarial changes; a plain sweep gets the section from its cells (the breaking
points per perturbation and the most fragile examples, read as a failure map reads them; no slices), and a sweep with
nothing to read per example none; a dataset that cannot be rebuilt leaves placeholders, never an error."""
import json
import re

import pytest

import robustlab as rl
from robustlab.bench import SweepSpec, condition_grid, run_sweep
from robustlab.bench.report import write_report
from robustlab.bench.report_failures import fragility

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    out = tmp_path_factory.mktemp("fmap")
    fmap = rl.failures("builtin:tiny-clip", "builtin", split="demo", n=120,
                       perturbations="gaussian_noise,defocus_blur,keyboard", severities="1-5", out=out)
    return out, fmap


def section(html: str) -> str:
    i = html.find("Where it breaks</h2>")
    assert i > 0, "no 'Where it breaks' section"
    return html[i:html.find("</section>", i)]


def test_a_failure_maps_folder_gets_where_it_breaks(mapped):
    out, fmap = mapped
    s = section(write_report(out)[1].read_text(encoding="utf-8"))
    shown = [x for x in fmap.slices if x.get("significant", True)]
    assert shown, "the map found no significant slice: the test needs one"
    cards = re.findall(r"<b>([^<]*)</b> · [^<]*<br>(\d+) items fail (\d+) % vs (\d+) % of the rest: difference "
                       r"([+-]\d+) points, 95 % CI \[([+-]\d+), ([+-]\d+)\]", s)
    assert cards
    by_desc = {(x["description"], x["size"]): x for x in shown}
    for desc, size, rate, rest, diff, lo, hi in cards:
        x = by_desc[(desc, int(size))]
        assert int(rate) == round(100 * x["failure_rate"]) and int(rest) == round(100 * x["rest_rate"])
        assert int(lo) == round(100 * x["ci"][0]) and int(hi) == round(100 * x["ci"][1])
        assert int(lo) <= int(diff) <= int(hi)
    assert s.count('src="data:image/jpeg;base64,') >= len(cards)  # thumbnails inlined

    # the most fragile example first: broken under the most perturbations (counted here from the items)
    per: dict = {}
    for it in fmap.items:
        if it["breaks_at"]:
            per.setdefault((it["item"], it["caption"]), set()).add(it["perturbation"])
    top = max(len(v) for v in per.values())
    first = fragility(fmap.to_json())[0]
    assert first["count"] == top
    assert f"#{first['item']} · {first['id']}<br>breaks under {top} of 3 perturbation(s)" in s


def test_a_plain_sweep_gets_the_section_from_its_cells(tmp_path):
    from robustlab.bench.report_data import load_run
    from robustlab.bench.report_breaks import sweep_maps
    from robustlab.datasets import build

    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 12},
                     conditions=condition_grid(["gaussian_noise"], [1, 3], ["keyboard"], [1, 3], combine="auto"))
    run_sweep(spec, tmp_path / "plain")
    html = write_report(tmp_path / "plain")[1].read_text(encoding="utf-8")
    s = section(html)
    assert "Breaking points per perturbation (builtin:tiny-clip · retrieval · t2i)" in s
    assert "The most fragile examples" in s and "no slices here" in s
    # the same reading as a failure map of the same cells (the combination cells are no breaking points)
    fmap = rl.failures("builtin:tiny-clip", "builtin", split="demo", n=12, perturbations="gaussian_noise,keyboard",
                       severities="1,3", out=tmp_path / "fmap", slices=False)
    (m,), notes = sweep_maps(load_run(tmp_path / "plain").results, lambda name: build(name, split="demo", n=12))
    assert not notes and m["items"] == fmap.items and m["summary"] == fmap.summary
    assert m["direction"] == fmap.direction == "t2i" and m["severities"] == [1, 3]
    for row in fmap.summary:
        cells = [row["perturbation"], row["examples"], row["broken"], *row["by_severity"].values(),
                 row["clean_failures"], row["holding"]]
        assert "<tr><td>" + "</td><td>".join(map(str, cells)) + "</td>" in s
    top = fragility(fmap.to_json())[0]
    assert f"#{top['item']} · {top['id']}<br>breaks under {top['count']} of 2 perturbation(s)" in s


def test_a_sweep_without_per_example_cells_gets_no_such_section(tmp_path):
    spec = SweepSpec(models=["builtin:tiny-clip"], dataset={"name": "builtin", "split": "demo", "n": 8},
                     conditions=condition_grid([], [1], [], [], combine="none"))  # the clean cell alone
    run_sweep(spec, tmp_path / "clean")
    assert "Where it breaks" not in write_report(tmp_path / "clean")[1].read_text(encoding="utf-8")


def test_a_search_result_adds_the_weakest_changes(mapped, tmp_path):
    out, _ = mapped
    res = rl.failures.search("builtin:tiny-clip", "builtin", split="demo", n=20, budget=400)
    broken = [r for r in res.results if r["status"] == "broken"]
    assert broken, "the search broke nothing: the test needs a breaking change"
    (out / "search.json").write_text(json.dumps(res.to_json()), encoding="utf-8")
    try:
        s = section(write_report(out)[1].read_text(encoding="utf-8"))
    finally:
        (out / "search.json").unlink()
    assert "The weakest adversarial changes" in s
    r = broken[0]
    change = " + ".join(f"{c['axis']} {c['perturbation']} at {c['severity']}" for c in r["change"])
    assert f"#{r['item']} · {r['id']}</td><td>{change}</td><td>{r['clean_rank']} → {r['rank']}" in s


def test_a_dataset_that_cannot_be_rebuilt_leaves_placeholders(mapped, tmp_path):
    out, fmap = mapped
    d = fmap.to_json()
    d["dataset"] = {"name": "no-such-dataset"}
    (tmp_path / "failures.json").write_text(json.dumps(d), encoding="utf-8")
    (tmp_path / "sweep.json").write_text((out / "sweep.json").read_text(), encoding="utf-8")
    s = section(write_report(tmp_path)[1].read_text(encoding="utf-8"))
    assert "the dataset could not be rebuilt here" in s and "no thumbnail" in s
    assert 'src="data:image' not in s
