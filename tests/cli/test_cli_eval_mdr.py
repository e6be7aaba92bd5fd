"""``robustlab eval retrieval --option mdr=lower``: HAT-VTR's median-rank convention in evaluation, recorded in the
Result; the default stays the ordinary median and is not recorded."""
import json

import numpy as np

from robustlab.cli import main
from robustlab.metrics.retrieval import median_rank


def test_eval_retrieval_takes_the_mdr_convention(tmp_path, capsys):
    base = ["eval", "retrieval", "--model", "builtin:tiny-clip", "--dataset", "builtin", "--n", "40", "--perturb",
            "gaussian_noise", "--severity", "5", "--json"]
    assert main(base) == 0
    med = json.loads(capsys.readouterr().out)
    assert main(base + ["--option", "mdr=lower"]) == 0
    low = json.loads(capsys.readouterr().out)
    a, b = (x[0] if isinstance(x, list) else x for x in (med, low))
    assert "mdr" not in a["extra"] and b["extra"]["mdr"] == "lower"
    for d in ("t2i", "i2t"):
        ma, mb = a["metrics"][d], b["metrics"][d]
        assert {k: v for k, v in ma.items() if k != "MdR"} == {k: v for k, v in mb.items() if k != "MdR"}
        assert mb["MdR"] <= ma["MdR"]
    # the lower convention is torch.median of the same ranks: recompute from the task's own ranks
    from robustlab import datasets, load_model
    from robustlab.tasks.registry import get as get_task

    r = get_task("retrieval").evaluate(load_model("builtin:tiny-clip"), datasets.build("builtin", n=40),
                                       [{}], keep_ranks=True, mdr="lower")[0]
    for d, rk in r.extra["ranks"].items():
        assert r.metrics[d]["MdR"] == median_rank(np.asarray(rk), "lower")
    assert main(base + ["--option", "mdr=upper"]) == 2
    err = capsys.readouterr().err
    assert "mdr must be one of median, lower, got 'upper'" in err and "Traceback" not in err
