"""AppTest: the Retrieval page's metric table shows Qiu et al.'s per-direction mean recall (R@1 + R@5 + R@10) / 3
(issue 48, 6), the number a sweep writes to results.csv as ``<dir>_mean_recall``, for every condition and direction
the table lists."""
import numpy as np
import pytest
from apptest_helpers import fresh

from robustlab.metrics.retrieval import mean_recall
from ui.widgets import MEAN_RECALL


@pytest.fixture()
def app():
    return fresh()  # the app on its default page, Retrieval


def test_the_metric_table_has_the_mean_recall_of_each_direction(app):
    df = app.dataframe[0].value
    assert MEAN_RECALL in df.columns
    assert list(df.columns).index(MEAN_RECALL) == len(df.columns) - 1  # after R@K, MdR, MnR
    assert set(df["condition"]) == {"clean", "image perturbed", "text perturbed", "both perturbed"}
    assert set(df["direction"]) == {"text→image", "image→text"}
    for _, row in df.iterrows():
        # the table rounds each number to 4 places: the mean of the rounded R@K is within 1e-4 of the rounded mean
        want = mean_recall({f"R@{k}": row[f"R@{k}"] for k in (1, 5, 10)})
        assert row[MEAN_RECALL] == pytest.approx(want, abs=1e-4), row
        assert row["R@1"] <= row[MEAN_RECALL] <= row["R@10"]
    assert np.isfinite(df[MEAN_RECALL]).all() and df[MEAN_RECALL].nunique() > 1
    # the column says what it is
    cfg = app.dataframe[0].proto.columns
    assert "(R@1 + R@5 + R@10) / 3" in cfg and "mean_recall" in cfg


def test_the_page_computes_it_from_the_result_not_from_the_rounded_table(app, monkeypatch):
    """The column is robustlab.metrics.retrieval.mean_recall of the unrounded metrics the page got."""
    import ui.widgets as w

    seen = []
    real = w.mean_recall
    monkeypatch.setattr(w, "mean_recall", lambda m: seen.append(dict(m)) or real(m))
    app.slider(key="img_sev").set_value(4).run()
    assert not app.exception
    df = app.dataframe[0].value
    assert len(seen) == len(df)
    for m, (_, row) in zip(seen, df.iterrows()):
        assert set(m) >= {"R@1", "R@5", "R@10", "MdR", "MnR"}
        assert row[MEAN_RECALL] == round((m["R@1"] + m["R@5"] + m["R@10"]) / 3, 4)
        assert row["R@1"] == round(m["R@1"], 4)
