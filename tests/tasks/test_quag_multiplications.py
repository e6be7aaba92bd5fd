"""QUAG's "Δ multiplication ops" (Rawal et al. Table 1), measured: a QUAG-attention cell counts the matrix
products of one forward with and without the intervention (torch FlopCounterMode), never only the formula."""
from robustlab.datasets import registry as D
from robustlab.models import interventions as iv
from robustlab.models.registry import load_model
from robustlab.tasks.registry import get


def test_a_quag_attention_cell_records_its_measured_multiplications():
    model, ds = load_model("builtin:tiny-vilt"), D.build("builtin-videos", n=6)
    conds = [{"intervention": iv.as_condition(x)} for x in ("quag-attention:video-avg", "quag:text")]
    qa, sc = get("vqa").evaluate(model, ds, conds)
    m = qa.extra["multiplications"]
    assert 0 < m["intervened"] < m["baseline"] and m["saving"] == (m["baseline"] - m["intervened"]) / m["baseline"]
    assert "measured" in m["scope"]
    assert "multiplications" not in sc.extra  # a short circuit keeps every product: nothing to count
    # the count is the forward's own: running it again gives the same numbers
    again = iv.multiplications(model, iv.as_condition("quag-attention:video-avg"), get("vqa").forward_probe(ds, 6))
    assert (again["baseline"], again["intervened"]) == (m["baseline"], m["intervened"])


def test_table1_carries_the_measured_saving_to_the_attention_page():
    import pandas as pd

    from robustlab.bench.report import quag_table1

    model, ds = load_model("builtin:tiny-vilt"), D.build("builtin-videos", n=6)
    t = quag_table1(model, ds, 6, ["quag:text", "quag-attention:video-avg"]).set_index("intervention")
    assert pd.isna(t.loc["quag:text", "mult_ops_saving"]) and pd.isna(t.loc["baseline", "mult_ops_saving"])
    assert 0 < t.loc["quag-attention:video-avg", "mult_ops_saving"] < 1
