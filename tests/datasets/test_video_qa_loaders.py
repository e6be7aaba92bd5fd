"""The video-QA loaders (MSRVTT-QA, ActivityNet-QA, NeXT-QA), each on a tiny fixture written in its real format:
questions grouped by video, answers, types, splits, decoded frames, every one-line failure, discovery by markers and
a VQA run end to end. (A protocol naming each is in tests/datasets/test_video_loaders.py.)"""
import csv
import json

import numpy as np
import pytest
from test_datasets_loaders import frame_index, raises, video
from test_video_loaders import confusion_check

from robustlab.datasets import DatasetError, build
from robustlab.datasets.registry import discover
from robustlab.datasets.video_qa import msrvtt_qa_type


# ---- MSRVTT-QA ---------------------------------------------------------------------------------------------
@pytest.fixture
def msrvtt_qa_root(tmp_path):
    root = tmp_path / "msrvtt"
    qa = [{"answer": "dog", "category_id": 0, "id": 0, "question": "what is  running?", "video_id": 7010},
          {"answer": "red", "category_id": 2, "id": 1, "question": "what color is the car?", "video_id": 7011},
          {"answer": "man", "category_id": 4, "id": 2, "question": "who is talking?", "video_id": 7010},
          {"answer": "yes", "category_id": 0, "id": 3, "question": "is it raining?", "video_id": "video7011"}]
    (root / "MSRVTT-QA").mkdir(parents=True)
    (root / "MSRVTT-QA" / "test_qa.json").write_text(json.dumps(qa))
    (root / "MSRVTT-QA" / "val_qa.json").write_text(json.dumps(qa[:1]))
    video(root / "videos" / "all" / "video7010.mp4", n=9, size=(24, 32))
    video(root / "videos" / "all" / "video7011.mp4", n=6)
    return root


def test_msrvtt_qa_questions_by_video(msrvtt_qa_root):
    ds = build("msrvtt-qa", root=msrvtt_qa_root)
    assert ds.split == "test" and len(ds) == 2 and ds.tasks == ("vqa",) and ds.texts() == []
    qs = ds.item(0).questions
    assert ds.item(0).id == "video7010" and ds.item(0).meta["path"] == "videos/all/video7010.mp4"
    assert [(q.question, q.answer, q.qtype) for q in qs] == [("what is running?", "dog", "what"),
                                                             ("who is talking?", "man", "who")]
    assert qs[1].meta == {"id": 2, "category_id": 4}
    assert [(q.question, q.qtype) for q in ds.item(1).questions] == [("what color is the car?", "color"),
                                                                     ("is it raining?", "other")]
    v = ds.visual(0)
    assert v.shape == (12, 24, 32, 3) and v.dtype == np.uint8
    assert [frame_index(f) for f in v] == list(np.linspace(0, 8, 12).round().astype(int))
    assert ds.describe()["questions"] == 4 and len(build("msrvtt-qa", root=msrvtt_qa_root, split="val")) == 1
    assert [msrvtt_qa_type(q) for q in ("how do they cook?", "where is he?", "when does it end?", "whose colors?",
                                        "does it")] == ["how", "where", "when", "color", "other"]


def test_msrvtt_qa_failures(msrvtt_qa_root, tmp_path):
    raises(r"msrvtt-qa has no split 'full-test'", "msrvtt-qa", root=msrvtt_qa_root, split="full-test")
    assert "xudejing" in raises(r"missing .*train_qa\.json", "msrvtt-qa", root=msrvtt_qa_root, split="train")
    ann = msrvtt_qa_root / "MSRVTT-QA" / "test_qa.json"
    ann.write_text(json.dumps([{"question": "what?", "video_id": 1}]))
    raises(r"test_qa\.json\[0\] has no field 'answer'; it has question, video_id \(expected a list of \{question, "
           r"answer, video_id, id\}\)", "msrvtt-qa", root=msrvtt_qa_root)
    ann.write_text(json.dumps({"question": "what?"}))
    raises(r"test_qa\.json' is a dict, not a list", "msrvtt-qa", root=msrvtt_qa_root)
    ann.write_text(json.dumps([{"question": "what?", "answer": "x", "video_id": 9}]))
    with pytest.raises(DatasetError, match=r"video 'video9' is missing: no video<video_id>\.mp4 .*MSRVTT\.zip"):
        build("msrvtt-qa", root=msrvtt_qa_root).visual(0)
    raises(r"none of the 1 videos of split 'test'", "msrvtt-qa", root=msrvtt_qa_root, skip_missing=True)


# ---- ActivityNet-QA ----------------------------------------------------------------------------------------
@pytest.fixture
def anet_qa_root(tmp_path):
    root = tmp_path / "anetqa"
    qs = [{"video_name": "JDg--pjY5gg", "question": "what does the person in white do",
           "question_id": "v_JDg--pjY5gg_0"},
          {"video_name": "JDg--pjY5gg", "question": "is the person  outdoors", "question_id": "v_JDg--pjY5gg_1"},
          {"video_name": "tT9bH4ZSwzU", "question": "what color is the ball", "question_id": "v_tT9bH4ZSwzU_0"}]
    ans = [{"answer": "yes", "type": 3, "question_id": "v_JDg--pjY5gg_1"},
           {"answer": "shoot", "type": 0, "question_id": "v_JDg--pjY5gg_0"},
           {"answer": "white", "type": "4", "question_id": "v_tT9bH4ZSwzU_0"}]
    (root / "dataset").mkdir(parents=True)
    (root / "dataset" / "test_q.json").write_text(json.dumps(qs))
    (root / "dataset" / "test_a.json").write_text(json.dumps(ans))
    video(root / "videos" / "v_JDg--pjY5gg.mp4", n=8)
    video(root / "videos" / "tT9bH4ZSwzU.mkv", n=5)  # without v_ and in .mkv: found too
    return root


def test_activitynet_qa_joins_questions_and_answers(anet_qa_root):
    ds = build("activitynet-qa", root=anet_qa_root)
    assert len(ds) == 2 and [ds.item(i).id for i in range(2)] == ["JDg--pjY5gg", "tT9bH4ZSwzU"]
    assert [(q.question, q.answer, q.qtype) for q in ds.item(0).questions] == [
        ("what does the person in white do", "shoot", "motion"), ("is the person outdoors", "yes", "yes/no")]
    assert ds.item(1).questions[0].qtype == "color" and ds.item(1).questions[0].meta == {"question_id":
                                                                                         "v_tT9bH4ZSwzU_0"}
    assert ds.item(1).meta["path"] == "videos/tT9bH4ZSwzU.mkv"
    assert [frame_index(f) for f in build("activitynet-qa", root=anet_qa_root, num_frames=None).visual(1)] == \
        list(range(5))
    assert ds.describe()["questions"] == 3


def test_activitynet_qa_failures(anet_qa_root):
    d = anet_qa_root / "dataset"
    assert "MILVLG/activitynet-qa" in raises(r"missing .*val_q\.json", "activitynet-qa", root=anet_qa_root,
                                             split="val")
    (d / "val_q.json").write_text("[]")
    raises(r"missing .*val_a\.json' beside val_q\.json", "activitynet-qa", root=anet_qa_root, split="val")
    answers = json.loads((d / "test_a.json").read_text())
    (d / "test_a.json").write_text(json.dumps(answers[:2]))
    raises(r"question 'v_tT9bH4ZSwzU_0' of test_q\.json has no answer in test_a\.json", "activitynet-qa",
           root=anet_qa_root)
    (d / "test_a.json").write_text(json.dumps([dict(answers[0], type=9)]))
    raises(r"test_a\.json\[0\]\['type'\] is 9, not 0\.\.8 \(motion, spatial, temporal, yes/no", "activitynet-qa",
           root=anet_qa_root)
    (d / "test_a.json").write_text(json.dumps([dict(answers[0], type="x")]))
    raises(r"test_a\.json\[0\]\['type'\] is 'x', not an integer id", "activitynet-qa", root=anet_qa_root)
    (d / "test_a.json").write_text(json.dumps({"answer": "yes"}))
    raises(r"test_a\.json' is a dict, not a list \(expected \{split\}_a\.json", "activitynet-qa", root=anet_qa_root)


# ---- NeXT-QA -----------------------------------------------------------------------------------------------
NEXT_COLUMNS = ["video", "frame_count", "width", "height", "question", "answer", "qid", "type",
                "a0", "a1", "a2", "a3", "a4"]


def next_csv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(NEXT_COLUMNS)
        w.writerows(rows)


@pytest.fixture
def next_root(tmp_path):
    root = tmp_path / "nextqa"
    ann = root / "dataset" / "nextqa"
    next_csv(ann / "val.csv", [
        [4010069381, 1228, 640, 480, "why did the boy pick up one present", 2, 6, "CW", "to show", "for fun",
         "to open it", "dance", "sleep"],
        [4010069381, 1228, 640, 480, "what did the boy do after  opening", 0, 7, "TN", "smile", "run", "eat", "cry",
         "sit"],
        [8868123, 300, 320, 240, "how many people are there", 4, 1, "DC", "one", "two", "three", "four", "five"]])
    (ann / "map_vid_vidorID.json").write_text(json.dumps({"4010069381": "1027/4010069381", "8868123": "0001/8868123"}))
    video(root / "NExTVideo" / "1027" / "4010069381.mp4", n=10)
    video(root / "NExTVideo" / "0001" / "8868123.mp4", n=6)
    return root


def test_next_qa_multiple_choice_as_open_questions(next_root):
    ds = build("next-qa", root=next_root)
    assert ds.split == "val" and len(ds) == 2 and ds.item(0).id == "4010069381"
    q0, q1 = ds.item(0).questions
    assert (q0.question, q0.answer, q0.qtype) == ("why did the boy pick up one present", "to open it", "causal")
    assert q0.meta == {"qid": "6", "type": "CW", "choices": ["to show", "for fun", "to open it", "dance", "sleep"],
                       "answer_index": 2}
    assert (q1.question, q1.answer, q1.qtype) == ("what did the boy do after opening", "smile", "temporal")
    assert [(q.answer, q.qtype) for q in ds.item(1).questions] == [("five", "descriptive")]
    assert ds.item(0).meta == {"vidorID": "1027/4010069381", "path": "NExTVideo/1027/4010069381.mp4"}
    assert [frame_index(f) for f in build("next-qa", root=next_root, num_frames=5).visual(0)] == [0, 2, 4, 7, 9]
    (next_root / "dataset" / "nextqa" / "map_vid_vidorID.json").unlink()  # without the map: found by name
    flat = build("next-qa", root=next_root)
    assert flat.item(1).meta == {"path": "NExTVideo/0001/8868123.mp4"} and flat.visual(1).shape[0] == 12


def test_next_qa_failures(next_root):
    ann = next_root / "dataset" / "nextqa"
    assert "doc-doc/NExT-QA" in raises(r"missing .*test\.csv", "next-qa", root=next_root, split="test")
    next_csv(ann / "val.csv", [[1, 1, 1, 1, "q", 5, 1, "CW", "a", "b", "c", "d", "e"]])
    raises(r"val\.csv' line 2: expected a video, and an answer 0\.\.4 naming a non-empty option \(got video '1', "
           r"answer '5'\)", "next-qa", root=next_root)
    next_csv(ann / "val.csv", [[1, 1, 1, 1, "q", 1, 1, "CW", "a", "", "c", "d", "e"]])
    raises(r"answer 0\.\.4 naming a non-empty option", "next-qa", root=next_root)
    (ann / "val.csv").write_text("video,question,answer\n1,q,0\n")
    raises(r"val\.csv' has no column 'qid', 'type', 'a0', 'a1', 'a2', 'a3', 'a4'", "next-qa", root=next_root)
    next_csv(ann / "val.csv", [[4010069381, 1, 1, 1, "q", 0, 1, "CW", "a", "b", "c", "d", "e"]])
    (ann / "map_vid_vidorID.json").write_text("[1]")
    raises(r"map_vid_vidorID\.json' is not \{video: \"<dir>/<video>\"\}", "next-qa", root=next_root)
    (ann / "map_vid_vidorID.json").write_text(json.dumps({"4010069381": "9999/4010069381"}))
    (next_root / "NExTVideo" / "1027" / "4010069381.mp4").unlink()
    with pytest.raises(DatasetError, match=r"video '4010069381' is missing: no NExTVideo/<dir>/<video>\.mp4"):
        build("next-qa", root=next_root).visual(0)
    video(next_root.parent / "outside" / "4010069381.mp4", n=4)  # a map entry never leads out of the folder
    for escape in ("../../outside/4010069381", str(next_root.parent / "outside" / "4010069381")):
        (ann / "map_vid_vidorID.json").write_text(json.dumps({"4010069381": escape}))
        with pytest.raises(DatasetError, match=r"video '4010069381' is missing"):
            build("next-qa", root=next_root).visual(0)


def test_type_confusion_in_the_qa_annotations(msrvtt_qa_root, anet_qa_root, next_root):
    assert confusion_check("msrvtt-qa", msrvtt_qa_root, msrvtt_qa_root / "MSRVTT-QA" / "test_qa.json",
                           num_frames=2) > 150
    for f in ("test_q.json", "test_a.json"):
        assert confusion_check("activitynet-qa", anet_qa_root, anet_qa_root / "dataset" / f, num_frames=2) > 80
    assert confusion_check("next-qa", next_root, next_root / "dataset" / "nextqa" / "map_vid_vidorID.json",
                           num_frames=2) > 15


# ---- discovery and a VQA run -------------------------------------------------------------------------------
def test_the_folder_picker_discovers_each(msrvtt_qa_root, anet_qa_root, next_root, tmp_path):
    found = {(d["name"], d["rel"]) for d in discover([tmp_path], depth=3)}
    assert {("msrvtt-qa", "msrvtt/MSRVTT-QA"), ("activitynet-qa", "anetqa/dataset"),
            ("next-qa", "nextqa/dataset/nextqa")} <= found


def test_vqa_runs_on_each(msrvtt_qa_root, anet_qa_root, next_root):
    import robustlab as rl
    from robustlab.models import load_model

    model = load_model("builtin:tiny-vilt", device="cpu")
    for name, root, n_q, types in (("msrvtt-qa", msrvtt_qa_root, 4, {"what", "who", "color", "other"}),
                                   ("activitynet-qa", anet_qa_root, 3, {"motion", "yes/no", "color"}),
                                   ("next-qa", next_root, 3, {"causal", "temporal", "descriptive"})):
        ds = rl.datasets.build(name, root=root, num_frames=4)
        clean, noisy = rl.tasks.get("vqa").evaluate(model, ds, [None, {"visual": "jumble:3"}])
        assert clean.dataset == name and clean.extra["questions"] == n_q and len(clean.extra["answers"]) == n_q, name
        assert set(clean.metrics["per_type"]) == types and 0 <= clean.metrics["acc"] <= 1, name
        assert sum(v["n"] for v in noisy.metrics["per_type"].values()) == n_q, name
