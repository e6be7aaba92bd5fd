"""The video tasks besides retrieval (itm, order-reversal, clavi) give MLVP's content shifts the dataset's
main-object boxes (issue 48, item 8): mlvp_occlusion occludes the object where the built-in event videos know it,
on the frames each task's clip is made of (the video, its time reversal, CLAVI's V and V′); event insertion keeps
the synthetic corpus (no donor pool: these models need not have a video encoder)."""
import numpy as np
import pytest

import robustlab as rl
from robustlab.perturb import get_perturbation, perturb
from robustlab.perturb.condition import Condition
from robustlab.tasks import get

pytest.importorskip("cv2")
SEVERITY, SEED = 3, 7


@pytest.fixture(scope="module")
def videos():
    return rl.datasets.build("builtin-videos", split="test", n=6, cache=False)


class Spy:
    """A model that answers anything and keeps every clip it was given."""

    def __init__(self):
        self.seen = []

    def itm_score(self, v, t):
        self.seen.append(np.asarray(v))
        return 0.5

    def vqa(self, v, q):
        self.seen.append(np.asarray(v))
        return "yes", {"yes": 1.0}


def occluded(clip, i, boxes=None):
    """mlvp_occlusion of ``clip`` as item ``i`` of a condition seeded SEED: on ``boxes`` (one per frame), or the
    table's centred box when None."""
    params = dict(get_perturbation("mlvp_occlusion").params(SEVERITY))
    if boxes is not None:
        params.update(box="object", boxes=boxes)
    return perturb(clip, "mlvp_occlusion", SEVERITY, seed=SEED + i, params=params).output


def clips_of(seen):
    """The distinct clips in the order first given (the tasks give one clip for several texts)."""
    out = []
    for v in seen:
        if not out or not (out[-1].shape == v.shape and np.array_equal(out[-1], v)):
            out.append(v)
    return out


@pytest.mark.parametrize("task", ["itm", "vqa"])
def test_each_video_is_occluded_on_its_main_object(task, videos):
    spy = Spy()
    get(task).evaluate(spy, videos, [{"visual": Condition("mlvp_occlusion", SEVERITY, SEED)}])
    got = clips_of(spy.seen)
    assert len(got) == len(videos)
    for i, v in enumerate(got):
        clip = videos.visual(i)
        assert np.array_equal(v, occluded(clip, i, videos.main_object_boxes(i)))
        assert not np.array_equal(v, occluded(clip, i))  # not the centred fallback


def test_order_reversal_occludes_the_reversed_member_on_the_reversed_boxes(videos):
    spy = Spy()
    get("order-reversal").evaluate(spy, videos, [{"visual": Condition("mlvp_occlusion", SEVERITY, SEED)}])
    got = clips_of(spy.seen)
    pairs = [i for i in range(len(videos)) if videos.clavi_pair(i) is not None]
    assert pairs and len(got) == 2 * len(pairs)
    for k, i in enumerate(pairs):
        clip, boxes = videos.visual(i), videos.main_object_boxes(i)
        assert np.array_equal(got[2 * k], occluded(clip, i, boxes))
        assert np.array_equal(got[2 * k + 1], occluded(clip[::-1].copy(), i, boxes[::-1]))


def test_clavi_occludes_v_and_its_complement_on_the_frames_they_are_cut_from(videos):
    spy = Spy()
    get("clavi").evaluate(spy, videos, [{"visual": Condition("mlvp_occlusion", SEVERITY, SEED)}])
    got = clips_of(spy.seen)
    pairs = [i for i in range(len(videos)) if videos.clavi(i) is not None]
    assert pairs and len(got) == 2 * len(pairs)
    for k, i in enumerate(pairs):
        pair, _ = videos.clavi(i)
        e, boxes = pair.extension, videos.main_object_boxes(i)
        order_c = [*range(e.in_b, e.out_b), *range(e.in_a, e.in_b), *range(e.out_a, e.in_a)]
        assert np.array_equal(got[2 * k], occluded(pair.video, i, boxes[e.out_a:e.out_b]))
        assert np.array_equal(got[2 * k + 1], occluded(pair.complement, i, [boxes[j] for j in order_c]))
    # render: V′ is drawn anew, so neither member gets boxes (both the centred box, alike)
    spy = Spy()
    get("clavi").evaluate(spy, videos, [{"visual": Condition("mlvp_occlusion", SEVERITY, SEED)}], method="render")
    got = clips_of(spy.seen)
    for k, i in enumerate(pairs):
        pair, _ = videos.clavi(i, method="render")
        assert np.array_equal(got[2 * k], occluded(pair.video, i))
        assert np.array_equal(got[2 * k + 1], occluded(pair.complement, i))


def test_event_insertion_in_these_tasks_is_the_synthetic_corpus_as_before(videos):
    spy = Spy()
    get("itm").evaluate(spy, videos, [{"visual": Condition("mlvp_event_insertion", SEVERITY, SEED)}], n=2)
    got = clips_of(spy.seen)
    for i, v in enumerate(got):
        r = perturb(videos.visual(i), "mlvp_event_insertion", SEVERITY, seed=SEED + i)
        assert np.array_equal(v, r.output) and r.record["params"]["corpus"] == "synthetic (no donor pool given)"
