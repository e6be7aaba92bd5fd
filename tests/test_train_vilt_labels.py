"""tiny-vilt's training supervision read off the world's structure: per-token labels, pool targets, reversed videos."""
import numpy as np
import pytest

from robustlab.data import qa, world
from robustlab.train_vilt import (COLOR_ID, DIR_ID, KIND_ID, POS_ID, SHAPE_ID, SIZE_ID, image_token_labels,
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
