"""CLAVI (Rawal et al. §5): the complement builder, the 19 questions, the metrics, the built-in pairs and the task."""
from __future__ import annotations

import numpy as np
import pytest

from robustlab.diagnostics import clavi as cl


def _frames(t=40, size=8):
    """Frame k is filled with the value k, so a frame's origin can be read back from its pixels."""
    return np.stack([np.full((size, size, 3), k, np.uint8) for k in range(t)])


def _origin(frames):
    return [int(f[0, 0, 0]) for f in frames]


# ---- builder ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(25))
def test_extensions_keep_out_and_in_totals_equal_and_fit(seed):
    rng = np.random.default_rng(seed)
    t = int(rng.integers(12, 80))
    a0 = int(rng.integers(0, t // 3))
    a1 = int(rng.integers(a0 + 1, t // 2))
    b0 = int(rng.integers(a1, t - 2))
    b1 = int(rng.integers(b0 + 1, t + 1))
    e = cl.extensions((a0, a1), (b0, b1), t, np.random.default_rng(seed))
    assert 0 <= e.out_a <= a0 and a1 <= e.in_a <= e.in_b <= b0 and b1 <= e.out_b <= t
    assert (a0 - e.out_a) + (e.out_b - b1) == (e.in_a - a1) + (b0 - e.in_b)  # §5.1's constraint
    assert e == cl.extensions((a0, a1), (b0, b1), t, np.random.default_rng(seed))  # seeded


def test_complement_swaps_the_extended_actions_and_keeps_the_middle():
    f = _frames(40)
    ext = cl.Extension(out_a=3, in_a=14, in_b=22, out_b=36)  # A = [5, 12), B = [25, 33)
    p = cl.complement(f, (5, 12), (25, 33), ext)
    assert _origin(p.video) == list(range(3, 36))
    assert _origin(p.complement) == list(range(22, 36)) + list(range(14, 22)) + list(range(3, 14))  # B', mid, A'
    assert len(p.video) == len(p.complement)
    assert _origin(p.video[slice(*p.a_in_v)]) == _origin(p.complement[slice(*p.a_in_c)]) == list(range(5, 12))
    assert _origin(p.video[slice(*p.b_in_v)]) == _origin(p.complement[slice(*p.b_in_c)]) == list(range(25, 33))
    # equal totals keep the actions' separation: B ends ... A starts in V' as A ends ... B starts in V
    assert p.a_in_c[0] - p.b_in_c[1] == p.b_in_v[0] - p.a_in_v[1] == 13
    assert p.seams == (14, 22)
    rec = p.record()
    assert rec["extension"] == ext.to_dict() and rec["method"] == "swap"


def test_the_papers_worked_example_in_milliseconds():
    """Released JSON: A = [0.90, 6.50], B = [14.00, 20.10], out_a 0.325, in_a 6.673, in_b 13.549, out_b 20.15
    (out total 0.625, in total 0.624: the released numbers are rounded)."""
    f = np.zeros((20200, 1, 1, 3), np.uint8)
    p = cl.complement(f, (900, 6500), (14000, 20100), cl.Extension(325, 6673, 13549, 20150))
    assert len(p.video) == len(p.complement) == 20150 - 325
    assert (900 - 325) + (20150 - 20100) == 625 and (6673 - 6500) + (14000 - 13549) == 624
    assert p.b_in_c == (451, 6551) and p.a_in_c[0] == (20150 - 6673) + (900 - 325)


def test_intervals_are_checked_in_one_line():
    f = _frames(30)
    with pytest.raises(cl.ClaviError, match="overlap"):
        cl.complement(f, (2, 12), (10, 20))
    with pytest.raises(cl.ClaviError, match="inside the video"):
        cl.complement(f, (2, 12), (20, 40))
    with pytest.raises(cl.ClaviError, match="at least 3 frames"):
        cl.complement(f[:2], (0, 1), (1, 2))
    p = cl.complement(f, (15, 20), (2, 8), seed=1)  # given B first: taken in time order
    assert p.a == (2, 8) and p.b == (15, 20)
    assert cl.frames_from_seconds((0.5, 1.2), (2.0, 3.01), 10, 40) == ((5, 12), (20, 31))
    with pytest.raises(cl.ClaviError, match="frame rate"):
        cl.frames_from_seconds((0, 1), (2, 3), 0, 40)


# ---- questions --------------------------------------------------------------------------------------------
def _paper_questions():
    a, b, c = cl.Action("opening a door"), cl.Action("drinking from a cup"), cl.Action("washing a car")
    return cl.questions(a, b, c)


def test_nineteen_questions_with_the_released_counts_codes_and_answers():
    qs = _paper_questions()
    assert len(qs) == 19
    count = {t: sum(q.qtype == t for q in qs) for t in ("E", "E-NC", "BE", "BA", "BA-NC")}
    assert count == {"E": 2, "E-NC": 1, "BE": 4, "BA": 4, "BA-NC": 8}
    for side in ("answer_v", "answer_c"):
        ans = [getattr(q, side) for q in qs]
        assert ans.count("yes") == 6 and ans.count("no") == 13  # 6:13 on V and on V'
    codes_v = sorted({q.code(False) for q in qs})
    assert codes_v == [0, 1, 4, 5, 8, 9, 10] and sorted({q.code(True) for q in qs}) == [c + 16 for c in codes_v]
    # the released table's answers per code
    expect = {0: "yes", 1: "no", 4: "yes", 5: "no", 8: "yes", 9: "no", 10: "no",
              16: "yes", 17: "no", 20: "no", 21: "yes", 24: "no", 25: "yes", 26: "no"}
    for q in qs:
        assert expect[q.code(False)] == q.answer_v and expect[q.code(True)] == q.answer_c
    for k, q in enumerate(qs):  # partners are symmetric; E and E-NC pair with themselves
        assert qs[q.partner].partner == k
        assert (q.partner == k) == (q.qtype in ("E", "E-NC"))
        if q.qtype in ("BE", "BA", "BA-NC") and q.partner != k:
            words = {w for w in q.question.split() if w not in qs[q.partner].question.split()}
            assert len(words) == 1 and words <= {"before", "after", "beginning?", "end?"}
    assert qs[0].question == "Was someone opening a door?"
    assert "Was the person opening a door at the beginning?" in [q.question for q in qs]
    assert "Did drinking from a cup happen after opening a door?" in [q.question for q in qs]
    assert all("washing a car" in q.question for q in qs if q.qtype in ("E-NC", "BA-NC"))


# ---- metrics ----------------------------------------------------------------------------------------------
def _answers(rule, n=3):
    qs = _paper_questions()
    return [cl.PairAnswers(qs, [rule(q, False) for q in qs], [rule(q, True) for q in qs]) for _ in range(n)]


def test_metrics_of_an_oracle_a_yes_sayer_and_a_model_that_ignores_the_video():
    perfect = cl.metrics(_answers(lambda q, c: q.answer_c if c else q.answer_v))
    assert perfect["balanced_acc"] == perfect["cacc_v"] == perfect["cacc_t_complement"] == 1.0
    yes = cl.metrics(_answers(lambda q, c: "yes"))
    assert yes["balanced_acc"] == 0.5 and yes["yes_rate"] == 1.0
    # answers from the words alone (the same on V and V'), right on V: every complement question flips on V',
    # so video-consistency on the complement subset is exactly 0 while the control subset stays perfect
    blind = cl.metrics(_answers(lambda q, c: q.answer_v))
    assert blind["cacc_v_complement"] == 0.0 and blind["cacc_v_control"] == 1.0
    assert blind["cacc_t_complement"] == 0.5  # right on every question of V, wrong on every one of V'
    assert blind["balanced_acc"] == pytest.approx(0.5 * (8 / 12 + 22 / 26))  # recall of yes 8/12, of no 22/26
    fine = blind["fine"]
    assert fine["4"]["acc"] == 1.0 and fine["20"]["acc"] == 0.0 and fine["26"]["acc"] == 1.0
    assert fine["21"]["name"] == "BE' (V')"
    with pytest.raises(cl.ClaviError):
        cl.metrics([])


def test_balanced_accuracy_is_the_mean_of_the_two_recalls():
    assert cl.balanced_accuracy(["yes", "yes", "no", "no", "no", "no"], ["yes", "no", "no", "no", "no", "yes"]) \
        == pytest.approx(0.5 * (1 / 2 + 3 / 4))
    assert cl.balanced_accuracy(["yes", "no"], ["maybe", "No "]) == 0.5  # not yes/no is wrong; case/space ignored


def test_text_consistency_pairs_ba_nc_with_its_before_after_swap():
    qs = _paper_questions()
    ans = cl.PairAnswers(qs, [q.answer_v for q in qs], [q.answer_c for q in qs])
    ans.on_v[11] = "yes"  # one BA-NC question wrong on V
    rows = ans.consistency()
    assert rows[11]["cacc_t_v"] is False and rows[qs[11].partner]["cacc_t_v"] is False
    assert rows[11]["cacc_v"] is False and rows[qs[11].partner]["cacc_v"] is True
    assert sum(not r["cacc_t_v"] for r in rows) == 2


# ---- the built-in world ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def videos():
    from robustlab.datasets import build

    return build("builtin-videos", n=30)


def test_builtin_pairs_use_the_events_intervals(videos):
    from robustlab.datasets.synthetic import clavi as wc
    from robustlab.datasets.synthetic import qa

    got = [i for i in range(len(videos)) if videos.clavi(i) is not None]
    assert got and len(got) < len(videos)  # the videos whose two events hit one object have none
    for i in range(len(videos)):
        v = videos.scene(i)
        assert (videos.clavi(i) is None) == (v.events[0].obj == v.events[1].obj)
    i = got[0]
    v, frames = videos.scene(i), videos.visual(i)
    pair, qs = videos.clavi(i)
    e1, e2 = v.events
    assert pair.a == (e1.start, e1.end) and pair.b == (e2.start, e2.end)
    ext = pair.extension
    assert np.array_equal(pair.video, frames[ext.out_a:ext.out_b])
    assert np.array_equal(pair.complement, np.concatenate([frames[ext.in_b:ext.out_b], frames[ext.in_a:ext.in_b],
                                                           frames[ext.out_a:ext.in_a]]))
    p2, q2 = videos.clavi(i)
    assert p2.extension == ext and [q.question for q in q2] == [q.question for q in qs]  # seeded
    assert videos.clavi(i, seed=5)[0].extension != ext or videos.clavi(i, seed=6)[0].extension != ext
    assert qs[0].question == f"does {qa._name(v.objects[e1.obj])} {qa._verb(e1)}?"
    nc = [q for q in qs if q.qtype == "E-NC"][0].question
    present = {o.color for o in v.objects} | {o.shape for o in v.objects}
    assert not present & set(nc[:-1].split()[1:4])  # C shares no colour or shape with the video
    # the seamless complement: the world re-rendered with the events exchanged
    r, _ = videos.clavi(i, method="render")
    assert r.method == "render" and r.extension == ext and np.array_equal(r.video, pair.video)
    sw = wc.swapped_video(v)
    assert (sw.events[0].obj, sw.events[1].obj) == (e2.obj, e1.obj)
    assert np.array_equal(r.complement, qa.video_frames_at(sw, np.arange(ext.out_a, ext.out_b), videos.size))
    with pytest.raises(ValueError, match="unknown CLAVI complement"):
        videos.clavi(i, method="reverse")


# ---- the task ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vilt():
    from robustlab.models import load_model

    return load_model("builtin:tiny-vilt")


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_task_reports_the_papers_metrics_and_takes_conditions(vilt, videos):
    from robustlab.tasks import get

    res = get("clavi").evaluate(vilt, videos, [None, {"visual": "gaussian_noise:3"},
                                               {"intervention": "quag:crossmodal"}], n=4)
    assert [r.n for r in res] == [4, 4, 4]
    m = res[0].metrics
    assert m["pairs"] == 4 and m["questions"] == 4 * 38
    for k in ("balanced_acc", "cacc_v", "cacc_t", "cacc_v_control", "cacc_v_complement", "cacc_t_control",
              "cacc_t_complement", "yes_rate"):
        assert 0.0 <= m[k] <= 1.0
    assert sum(v["n"] for v in m["fine"].values()) == 4 * 38
    assert res[0].extra["method"] == "swap" and res[1].conditions["visual"]["name"] == "gaussian_noise"
    assert res[2].conditions["intervention"]["name"] == "quag:crossmodal"
    again = get("clavi").evaluate(vilt, videos, n=4)[0]
    assert again.metrics == m  # deterministic
    r = get("clavi").evaluate(vilt, videos, n=2, method="render")[0]
    assert r.extra["method"] == "render" and r.n == 2


def test_task_refuses_datasets_without_pairs(vilt):
    from robustlab.datasets import build
    from robustlab.tasks import get

    with pytest.raises(ValueError, match="runs on videos"):
        get("clavi").evaluate(vilt, build("builtin", n=2))


def test_clavi_one_on_an_uploaded_video_with_typed_intervals(vilt, videos):
    from robustlab.tasks.clavi import clavi_one

    frames = videos.visual(0)
    out = clavi_one(vilt, frames, (0.2, 1.4), (2.0, 3.2), ["opening a door", "closing a door", "washing a car"],
                    fps=8.0, seconds=True, seed=3)
    assert out["pair"].a == (1, 12) and out["pair"].b == (16, 26)
    assert len(out["table"]) == 19 and out["metrics"]["questions"] == 38
    assert all(r["pred_v"] in vilt.answers and r["pred_c"] in vilt.answers for r in out["table"])
    with pytest.raises(cl.ClaviError, match="three action phrases"):
        clavi_one(vilt, frames, (1, 5), (8, 12), ["a", "", "c"])


# ---- the CLI: task options ---------------------------------------------------------------------------------
def test_cli_eval_takes_task_options_and_refuses_unknown_ones(capsys):
    import json

    from robustlab.cli import main

    assert main(["eval", "clavi", "--model", "builtin:tiny-vilt", "--n", "12", "--option", "method=render",
                 "--option", "seed=3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["task"] == "clavi" and out["extra"]["method"] == "render" and out["extra"]["pair_seed"] == 3
    assert out["metrics"]["pairs"] == out["n"] > 0
    for bad, says in ((["--option", "foo=1"], "task clavi has no option foo (its options: method, seed)"),
                      (["--option", "method=xx"], "CLAVI method 'xx'"),
                      (["--option", "method"], "use KEY=VALUE")):
        assert main(["eval", "clavi", "--model", "builtin:tiny-vilt", "--n", "4", *bad]) == 2
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err
    assert main(["tasks", "peeling", "--options"]) == 0
    listed = capsys.readouterr().out
    assert "--option wide=" in listed and "--option compat=" in listed
