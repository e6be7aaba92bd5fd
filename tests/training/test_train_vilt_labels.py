"""tiny-vilt's training supervision read off the world's structure: per-token labels, pool targets, reversed videos."""
import numpy as np
import pytest

from robustlab.datasets.synthetic import qa, world
from robustlab.training.tiny_vilt import (COLOR_ID, DIR_ID, KIND_ID, POS_ID, SHAPE_ID, SIZE_ID, image_token_labels,
                                  reversed_view, video_token_labels)


def test_image_token_labels_cover_each_object_at_its_centre():
    for i in range(30):
        sc = world.sample_scene(5, i)
        lab = image_token_labels(sc, 8)
        assert lab.shape == (64, 5)
        for k, o in enumerate(sc.objects):
            c = int(o.cy * 8) * 8 + int(o.cx * 8)
            assert tuple(lab[c]) == (COLOR_ID[o.color], SHAPE_ID[o.shape], SIZE_ID[o.size], k, POS_ID[tuple(o.cell)])
            n = (lab[:, 3] == k).sum()
            assert (1 <= n <= 2) if o.size == "small" else (2 <= n <= 9)
        empty = lab[:, 3] < 0
        assert (lab[empty, :3] == 0).all() and (lab[empty, 4] == 0).all()


def _moving_video():
    for i in range(200):
        v = world.sample_video(9, i)
        e = v.events[0]
        if e.kind == "moves" and v.events[1].obj != e.obj:
            return v
    pytest.skip("no suitable video")  # pragma: no cover


def test_video_token_labels_mark_changes_with_kind_and_direction():
    v = _moving_video()
    e = v.events[0]
    idx = qa.frame_indices(v.n_frames, 8)
    lab, target = video_token_labels(v, idx, 4)
    assert lab.shape == (128, 6) and target.shape == (len(v.objects), 128)
    mine = (lab[:, 3] == e.obj) & (lab[:, 2] == 1)
    assert mine.any()
    assert (lab[mine, 4] == KIND_ID["moves"]).all() and (lab[mine, 5] == DIR_ID[e.direction]).all()
    frames = np.flatnonzero(mine) // 16
    assert frames.max() <= 4  # the first event happens in the first half of the video
    assert target[e.obj][mine].all() and (np.flatnonzero(target[e.obj]) // 16).max() <= 4
    unchanged = [k for k in range(len(v.objects)) if k not in (e.obj, v.events[1].obj)]
    for k in unchanged:  # an object that never changes: the pool target is its token in every frame
        assert target[k].sum() == 8 and sorted(np.flatnonzero(target[k]) // 16) == list(range(8))


def test_reversed_view_inverts_events_and_labels_follow_the_frames():
    v = _moving_video()
    r = reversed_view(v)
    T = v.n_frames
    e1, e2 = v.events
    f1, f2 = r.events
    assert (f1.obj, f2.obj) == (e2.obj, e1.obj)
    assert f2.kind == "moves" and f2.direction == world.OPPOSITE[e1.direction]
    assert (f2.start, f2.end) == (T - 1 - e1.end, T - 1 - e1.start)
    assert r.caption == v.reversed_caption and r.reversed_caption == v.caption
    # the reversed clip's sampled frames (latest first): the moving object now goes the other way, late
    asc = (T - 1 - qa.frame_indices(T, 8))[::-1]
    lab, _ = video_token_labels(v, asc[::-1].copy(), 4)
    mine = (lab[:, 3] == e1.obj) & (lab[:, 2] == 1)
    assert (lab[mine, 5] == DIR_ID[world.OPPOSITE[e1.direction]]).all()
    assert (np.flatnonzero(mine) // 16).min() >= 4
    # an order question on the reversed view gets the flipped answer, as in the CLAVI pair
    q = qa.order_question(v, np.random.default_rng(1))
    q_r = qa.order_question(r, np.random.default_rng(1))
    if q is not None and q_r is not None and q.question == q_r.question:
        assert q.answer != q_r.answer


def test_questions_name_their_target_object():
    rng = np.random.default_rng(0)
    for i in range(40):
        sc = world.sample_scene(3, i)
        for qt in ("color", "shape", "position"):
            q = qa.image_question(sc, rng, qt)
            if q.qtype == qt:
                o = sc.objects[q.target]
                assert q.answer == {"color": o.color, "shape": o.shape, "position": o.position}[qt]
        v = world.sample_video(3, i)
        q = qa.video_question(v, rng, "direction")
        if q.qtype == "direction":
            assert any(e.obj == q.target and e.direction == q.answer for e in v.events)
        q = qa.video_question(v, rng, "first")
        if q.qtype == "first":
            assert v.objects[q.target].color == q.answer


def test_relation_flip_swaps_the_word_and_the_truth():
    rng = np.random.default_rng(1)
    seen = set()
    for i in range(60):
        v = world.sample_video(4, i)
        e1, e2 = v.events
        for qt in ("order", "event_order", "first", "event", "direction"):
            q = qa.video_question(v, rng, qt)
            f = qa.relation_flip(v, q)
            if q.qtype in ("event", "direction"):
                assert f is None  # no relation word to swap
                continue
            seen.add(q.qtype)
            a, b = q.question.split(" "), f.question.split(" ")
            diff = [(x, y) for x, y in zip(a, b) if x != y]
            assert len(a) == len(b) and len(diff) == 1  # the two differ in the relation word only
            assert diff[0] in (("before", "after"), ("after", "before"), ("first?", "last?"), ("last?", "first?"))
            if q.qtype == "first":  # the other event's object answers, and is the new target
                assert {q.target, f.target} == {e1.obj, e2.obj} and f.answer == v.objects[f.target].color
            else:
                assert {q.answer, f.answer} == {"yes", "no"} and f.target == q.target
            back = qa.relation_flip(v, f)
            assert (back.question, back.answer, back.target) == (q.question, q.answer, q.target)
    assert seen == {"order", "event_order", "first"}


def test_video_examples_bring_their_counterfactual_partners():
    from robustlab.training.tiny_vilt import _video_examples

    videos = [world.sample_video(6, i) for i in range(40)]
    targets = [np.zeros((3, 128), bool) for _ in videos]
    for v, t in zip(videos, targets):
        for k in range(len(v.objects)):
            t[k, k] = True  # object k's pool target: token k (enough to check which target each example gets)
    idx = np.arange(40)
    texts, task, ans, _, itm, pool, rows = _video_examples(videos, targets, idx, np.random.default_rng(0), pairs=True)
    assert len(texts) == len(task) == len(ans) == len(itm) == len(pool) == len(rows) > 40
    assert sorted(set(rows.tolist())) == list(range(40))  # every video once, partners on the same video
    inv = {a: i for i, a in enumerate(qa.ANSWERS)}
    pairs = [(j, j + 1) for j in range(len(rows) - 1) if rows[j] == rows[j + 1]]
    assert pairs
    for j, k in pairs:
        assert task[j] == task[k] == 0
        diff = [(x, y) for x, y in zip(texts[j].split(" "), texts[k].split(" ")) if x != y]
        assert len(diff) == 1 and diff[0][0].strip("?") in ("before", "after", "first", "last", "beginning", "end")
        if diff[0][0].strip("?") in ("before", "after", "beginning", "end"):  # yes/no: the partner's is the other
            assert {int(ans[j]), int(ans[k])} == {inv["yes"], inv["no"]}
        else:  # which changes first/last: a colour each, pooled on the object that answers
            assert {qa.ANSWERS[int(ans[j])], qa.ANSWERS[int(ans[k])]} <= set(world.COLORS)
            assert pool[j].any() and pool[k].any()
    assert ((task == 2) == (ans == -100)).all()  # ITM examples carry no answer
    _, task1, *_rest, rows1 = _video_examples(videos, targets, idx, np.random.default_rng(0))  # joint training
    assert len(rows1) == 40 and (rows1 == idx).all()
