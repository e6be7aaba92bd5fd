"""Multiple-choice VQA (NeXT-QA): how a model's answer picks an option (a stub model whose answers and scores are
known), the one-line refusals, and a NeXT-QA-format folder scored as a five-way choice on tiny-vilt end to end."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets"))  # the loaders' fixture helpers
from test_datasets_loaders import video  # noqa: E402
from test_video_qa_loaders import next_csv  # noqa: E402

import robustlab as rl  # noqa: E402
from robustlab.datasets import QA, InMemoryDataset  # noqa: E402
from robustlab.tasks.vqa import PICKS, choices_of, judge, pick  # noqa: E402

OPTIONS = ["to show", "for fun", "to open it", "dance", "sleep"]


# ---- the pick ------------------------------------------------------------------------------------------------
def test_pick_by_the_model_scores_first():
    # the highest-scoring option among those the model scored, even when its own top answer is none of them
    assert pick("red", {"red": .6, "Dance!": .3, "sleep": .1}, OPTIONS) == (3, "scores")
    assert pick("dance", {"to show": .2, "sleep": .5}, OPTIONS) == (4, "scores")
    assert pick("x", {"for fun": .4, "dance": .4}, OPTIONS) == (1, "scores")  # a tie: the first option
    # scores that name no option (or are not finite) leave the answer text to decide
    assert pick("The dance.", {"red": .9, "sleep": float("nan")}, OPTIONS) == (3, "match")


def test_pick_by_the_answer_text():
    assert pick("to open it", None, OPTIONS) == (2, "match")
    assert pick("  To Open It ", {}, OPTIONS) == (2, "match")
    assert pick("open it", {}, OPTIONS) == (2, "overlap")  # word F1 0.8 against 'to open it', 0 the others
    assert pick("just for fun", {}, OPTIONS) == (1, "overlap")
    assert pick("to", {}, OPTIONS) == (0, "overlap")  # F1 .67 against 'to show', .5 against 'to open it'
    assert pick("red", {}, OPTIONS) == (-1, "none")  # no word in common: no guess
    assert pick("it", {}, ["do it", "see it", "no"]) == (-1, "none")  # a tie for the best overlap: no guess
    assert pick("a", {}, ["a cat", "the dog"]) == (-1, "none")  # articles are not words


def test_judge_and_choices_of():
    qa = QA("why did the boy pick up one present", "to open it", "causal",
            {"choices": OPTIONS, "answer_index": 2})
    assert choices_of(qa) == OPTIONS and choices_of(QA("q", "a")) is None
    assert judge(qa, "open it") == (1, "to open it", "overlap")
    assert judge(qa, "dance", {"dance": 1.0}) == (0, "dance", "scores")
    assert judge(qa, "red") == (0, "red", "none")  # no option picked: the model's own answer is kept
    assert judge(qa, "open it", choices="open") == (0, "open it", "open")
    assert judge(qa, "To open it ", choices="open") == (1, "To open it ", "open")
    assert judge(QA("what color", "Red"), "red ", {"blue": 1.0}) == (1, "red ", "open")
    for meta, why in (({"choices": OPTIONS}, r"answer_index'\] is None, not an index into its 5 choices"),
                      ({"choices": OPTIONS, "answer_index": 5}, r"is 5, not an index into its 5 choices \(0\.\.4\)"),
                      ({"choices": OPTIONS, "answer_index": True}, r"is True, not an index"),
                      ({"choices": "abc", "answer_index": 0}, r"choices'\] is not a list of two or more option")):
        with pytest.raises(ValueError, match=why):
            choices_of(QA("q", "a", "", meta))


class StubVQA:
    """Answers each question with a fixed (answer, scores) pair: what the task makes of them is known."""
    model_id = "stub-vqa"
    random_init = False

    def __init__(self, replies: dict):
        self.replies = replies
        self.asked: list[str] = []

    def vqa(self, image, question):
        self.asked.append(question)
        return self.replies[question]


def _stub_dataset():
    img = np.zeros((8, 8, 3), np.uint8)
    mc = {"choices": ["one", "two", "three"]}
    questions = [[QA("q1", "two", "count", {**mc, "answer_index": 1}),        # scores pick 'two': right
                  QA("q2", "three", "count", {**mc, "answer_index": 2})],     # answer 'one': match, wrong
                 [QA("q3", "one", "count", {**mc, "answer_index": 0})],       # 'one more' overlaps 'one': right
                 [QA("q4", "two", "other", {**mc, "answer_index": 1})]]       # 'red': none, wrong
    return InMemoryDataset([img] * 3, [None] * 3, questions=questions, name="stub-mc"), questions


REPLIES = {"q1": ("1", {"1": .7, "two": .2, "three": .1}), "q2": ("one", {"yes": .9}),
           "q3": ("one more", {}), "q4": ("red", {"red": .8, "blue": .2})}


def test_the_task_scores_multiple_choice_with_a_stub_model():
    ds, _ = _stub_dataset()
    model = StubVQA(REPLIES)
    mc, = rl.tasks.get("vqa").evaluate(model, ds)
    assert model.asked == ["q1", "q2", "q3", "q4"]
    assert mc.extra["scoring"] == "multiple-choice"
    assert mc.extra["correct"] == [1, 0, 1, 0] and mc.extra["answers"] == ["two", "one", "one", "red"]
    assert mc.extra["picks"] == {"scores": 1, "match": 1, "overlap": 1, "none": 1} and set(PICKS) == set(
        mc.extra["picks"])
    assert mc.metrics["acc"] == 0.5 and mc.metrics["chance_acc"] == pytest.approx(1 / 3)
    assert mc.metrics["per_type"] == {"count": {"acc": 2 / 3, "n": 3}, "other": {"acc": 0.0, "n": 1}}
    # the same answers scored as open questions: only exact answers count (q2's 'one' is not 'three')
    op, = rl.tasks.get("vqa").evaluate(StubVQA(REPLIES), ds, choices="open")
    assert op.extra["scoring"] == "open" and "picks" not in op.extra and "chance_acc" not in op.metrics
    assert op.extra["correct"] == [0, 0, 0, 0] and op.extra["answers"] == ["1", "one", "one more", "red"]


def test_mixed_questions_and_refusals():
    ds, questions = _stub_dataset()
    questions[1][0] = QA("q3", "one more", "open")  # an open question among multiple-choice ones
    mixed, = rl.tasks.get("vqa").evaluate(StubVQA(REPLIES), ds)
    assert mixed.extra["scoring"] == "mixed" and mixed.extra["correct"] == [1, 0, 1, 0]
    assert mixed.extra["picks"] == {"scores": 1, "match": 1, "overlap": 0, "none": 1}
    assert "chance_acc" not in mixed.metrics
    with pytest.raises(ValueError, match=r"^task vqa option choices='paper': auto or open$"):
        rl.tasks.get("vqa").evaluate(StubVQA(REPLIES), ds, choices="paper")
    with pytest.raises(ValueError, match=r"task vqa has no option choice \(its options: choices\)"):
        rl.tasks.get("vqa").check_options({"choice": "open"})
    questions[0][0] = QA("q1", "two", "count", {"choices": ["one", "two"], "answer_index": 7})
    model = StubVQA(REPLIES)
    with pytest.raises(ValueError, match=r"question 'q1': meta\['answer_index'\] is 7, not an index"):
        rl.tasks.get("vqa").evaluate(model, ds)
    assert model.asked == []  # refused before the model ran


# ---- NeXT-QA end to end on tiny-vilt -------------------------------------------------------------------------
COLORS = ["red", "blue", "green", "yellow", "purple"]  # options in tiny-vilt's answer vocabulary: picked by score


@pytest.fixture
def next_mc_root(tmp_path):
    root = tmp_path / "nextqa"
    ann = root / "dataset" / "nextqa"
    next_csv(ann / "val.csv", [
        [101, 10, 32, 24, "what color is the shape", 1, 0, "DO", *COLORS],
        [101, 10, 32, 24, "why did the boy pick up one present", 2, 1, "CW", *OPTIONS],
        [202, 6, 32, 24, "what color is the ball at the end", 0, 2, "TN", *COLORS],
        [202, 6, 32, 24, "how many shapes are there", 3, 3, "DC", "1", "2", "3", "4", "5"]])
    video(root / "NExTVideo" / "101.mp4", n=10)
    video(root / "NExTVideo" / "202.mp4", n=6)
    return root


def test_next_qa_scored_as_five_way_choice_on_tiny_vilt(next_mc_root):
    from robustlab.models import load_model

    model = load_model("builtin:tiny-vilt", device="cpu")
    ds = rl.datasets.build("next-qa", root=next_mc_root, num_frames=4)
    qs = [(i, q) for i in range(len(ds)) for q in ds.item(i).questions]
    assert len(qs) == 4
    task = rl.tasks.get("vqa")
    clean, noisy = task.evaluate(model, ds, [None, {"text": "keyboard:2"}])
    assert clean.dataset == "next-qa" and clean.extra["scoring"] == noisy.extra["scoring"] == "multiple-choice"
    assert clean.metrics["chance_acc"] == pytest.approx(0.2)
    assert set(clean.metrics["per_type"]) == {"descriptive", "causal", "temporal"}
    # what the task picked is what the model's own scores say: the best-scored option when the model scored any
    replies = model.vqa_batch([ds.visual(i) for i, _ in qs], [q.question for _, q in qs])
    want, picks = [], []
    for (answer, scores), (_, q) in zip(replies, qs):
        choices = q.meta["choices"]
        scored = [j for j, c in enumerate(choices) if c in scores]
        j = max(scored, key=lambda j: (scores[choices[j]], -j)) if scored else pick(answer, scores, choices)[0]
        want.append(choices[j] if j >= 0 else answer)
        picks.append(int(j == q.meta["answer_index"]))
    assert clean.extra["answers"] == want and clean.extra["correct"] == picks
    assert all(a in COLORS for a in (want[0], want[2])) and want[3] in ("1", "2", "3", "4")
    assert clean.extra["picks"]["scores"] == 3  # three questions have options tiny-vilt can say
    assert clean.metrics["acc"] == pytest.approx(np.mean(picks))
    assert sum(v["n"] for v in noisy.metrics["per_type"].values()) == 4
    assert noisy.extra["picks"]["scores"] == 3  # a perturbed question: the options are not perturbed
    # the open scoring of the same run: the right option's text against tiny-vilt's answer, exactly
    op, = task.evaluate(model, ds, choices="open")
    assert op.extra["scoring"] == "open" and op.extra["answers"] == [a for a, _ in replies]
    assert op.extra["correct"] == [int(a == q.answer) for (a, _), (_, q) in zip(replies, qs)]
