"""The video-retrieval loaders of the papers' other datasets (MSVD, DiDeMo, ActivityNet Captions, LSMDC), each on a
tiny fixture written in its real format: items, captions and paragraphs, splits, decoded frames, every one-line
failure, discovery by markers, a retrieval run end to end, and a protocol that names each dataset (with the video-QA
sets of tests/datasets/test_video_qa_loaders.py)."""
import copy
import json

import numpy as np
import pytest
from test_datasets_loaders import frame_index, raises, video
from test_fuzz_loaders import CONFUSION_VALUES, _paths

from robustlab.datasets import DatasetError, build, list_datasets
from robustlab.datasets.registry import discover

RETRIEVAL = ("msvd", "didemo", "activitynet", "lsmdc")
QA_SETS = ("msrvtt-qa", "activitynet-qa", "next-qa")


def test_registered_with_needs_markers_and_paper():
    entries = {e["name"]: e for e in list_datasets()}
    for name in RETRIEVAL + QA_SETS:
        e = entries[name]
        assert e["kind"] == "video" and e["needs_root"] and e["needs"] and e["paper"] and e["markers"], name
        assert "\n" not in e["needs"], name
    assert {e["name"] for e in list_datasets(task="retrieval", kind="video")} >= set(RETRIEVAL)
    assert not {e["name"] for e in list_datasets(task="vqa")} & set(RETRIEVAL)
    assert {e["name"] for e in list_datasets(task="vqa", kind="video")} >= set(QA_SETS)
    assert entries["activitynet"]["default_split"] == "val1" and entries["lsmdc"]["splits"][:2] == ["test", "test-999"]
    assert "HAT-VTR" in entries["activitynet"]["paper"] and "QUAG" in entries["next-qa"]["paper"]
    assert "raw-captions.pkl is a pickle, never read" in entries["msvd"]["needs"]


# ---- MSVD --------------------------------------------------------------------------------------------------
MSVD_TXT = """# Microsoft Research Video Description Corpus, English descriptions
# <clip_id> <description>
-4wsuPCjDBc_5_15 a squirrel is eating a peanut in it's shell
-4wsuPCjDBc_5_15 a chipmunk is  eating
-4wsuPCjDBc_5_15 a squirrel eats
aBc_1_10 a man plays a guitar
aBc_1_10 someone plays music
zz9_0_4 a cat jumps

zz9_0_4 the cat leaps
"""


@pytest.fixture
def msvd_root(tmp_path):
    root = tmp_path / "msvd"
    root.mkdir()
    (root / "AllVideoDescriptions.txt").write_text(MSVD_TXT)
    (root / "msvd_data").mkdir()
    (root / "msvd_data" / "test_list.txt").write_text("-4wsuPCjDBc_5_15\naBc_1_10\n")
    (root / "msvd_data" / "val_list.txt").write_text("zz9_0_4\n")
    (root / "msvd_data" / "train_list.txt").write_text("aBc_1_10\nzz9_0_4\n")
    video(root / "YouTubeClips" / "-4wsuPCjDBc_5_15.avi", n=10, size=(24, 32))
    video(root / "YouTubeClips" / "aBc_1_10.avi", n=6)
    video(root / "YouTubeClips" / "zz9_0_4.avi", n=5)
    return root


def test_msvd_splits_captions_and_clips(msvd_root):
    ds = build("msvd", root=msvd_root)
    assert ds.split == "test" and len(ds) == 2 and ds.kind == "video" and ds.positives == "item"
    assert ds.texts() == ["a squirrel is eating a peanut in it's shell", "a chipmunk is eating", "a squirrel eats",
                          "a man plays a guitar", "someone plays music"]
    assert ds.text_positives() == [[0], [0], [0], [1], [1]] and ds.visual_positives() == [[0, 1, 2], [3, 4]]
    it = ds.item(0)
    assert it.id == "-4wsuPCjDBc_5_15" and it.meta["path"] == "YouTubeClips/-4wsuPCjDBc_5_15.avi"
    v = ds.visual(0)  # 10 frames in the .avi, 12 sampled uniformly
    assert v.shape == (12, 24, 32, 3) and v.dtype == np.uint8
    assert [frame_index(f) for f in v] == list(np.linspace(0, 9, 12).round().astype(int))
    assert [frame_index(f) for f in build("msvd", root=msvd_root, num_frames=None).visual(1)] == list(range(6))
    first = build("msvd", root=msvd_root, captions_per_video=1)  # HAT-VTR's 670 pairs: the first caption each
    assert first.texts() == ["a squirrel is eating a peanut in it's shell", "a man plays a guitar"]
    assert first.id != ds.id
    assert [x.id for x in (build("msvd", root=msvd_root, split="val").item(0),)] == ["zz9_0_4"]
    assert build("msvd", root=msvd_root, split="val").texts() == ["a cat jumps", "the cat leaps"]
    assert len(build("msvd", root=msvd_root, split="train")) == 2 and len(build("msvd", root=msvd_root, n=1)) == 1
    d = ds.describe()
    assert d["n"] == 2 and d["texts"] == 5 and d["split_list"].endswith("test_list.txt")
    src = ds.frame_source(1)
    assert src.n_frames == 6 and [frame_index(f) for f in src.read([5, 0])] == [5, 0]


def test_msvd_xpool_json_captions(msvd_root):
    (msvd_root / "AllVideoDescriptions.txt").unlink()
    (msvd_root / "captions_msvd.json").write_text(json.dumps({"-4wsuPCjDBc_5_15": ["a squirrel  eats", ""],
                                                              "aBc_1_10": ["a man plays"], "zz9_0_4": ["a cat"]}))
    ds = build("msvd", root=msvd_root)
    assert ds.texts() == ["a squirrel eats", "a man plays"] and ds.ann_file.name == "captions_msvd.json"
    (msvd_root / "captions_msvd.json").write_text(json.dumps(["a list"]))
    raises(r"captions_msvd\.json' is not \{clip_id: \[caption, \.\.\.\]\}", "msvd", root=msvd_root)


def test_msvd_failures(msvd_root, tmp_path):
    raises(r"msvd has no split 'test-1k'; splits: test, val, train", "msvd", root=msvd_root, split="test-1k")
    raises(r"captions_per_video must be a positive integer or None, got 0", "msvd", root=msvd_root,
           captions_per_video=0)
    empty = tmp_path / "e"
    empty.mkdir()
    msg = raises(r"missing .*AllVideoDescriptions\.txt' \(or captions_msvd\.json\)", "msvd", root=empty)
    assert "utexas.edu" in msg
    marker = tmp_path / "pwned"
    (empty / "raw-captions.pkl").write_bytes(b"\x80\x04cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    msg = raises(r"raw-captions\.pkl' is a Python pickle, which robustlab never opens: put AllVideoDescriptions",
                 "msvd", root=empty)
    assert not marker.exists()
    (msvd_root / "msvd_data" / "test_list.txt").unlink()
    assert "CLIP4Clip" in raises(r"missing .*test_list\.txt", "msvd", root=msvd_root)
    (msvd_root / "msvd_data" / "test_list.txt").write_text("aBc_1_10\nnot_there_1_2\n")
    raises(r"test_list\.txt' line 2: clip 'not_there_1_2' has no caption in AllVideoDescriptions\.txt", "msvd",
           root=msvd_root)
    (msvd_root / "msvd_data" / "test_list.txt").write_text("aBc_1_10\n")
    (msvd_root / "AllVideoDescriptions.txt").write_text("aBc_1_10 fine\nzz9_0_4\n")
    raises(r"AllVideoDescriptions\.txt' line 2: expected '<clip_id> <caption>'", "msvd", root=msvd_root)


def test_msvd_missing_and_broken_videos(msvd_root):
    (msvd_root / "YouTubeClips" / "aBc_1_10.avi").unlink()
    ds = build("msvd", root=msvd_root)
    with pytest.raises(DatasetError, match=r"video 'aBc_1_10' is missing: no YouTubeClips/<clip_id>\.avi .*"
                                           r"YouTubeClips\.tar") as e:
        ds.visual(1)
    assert "\n" not in str(e.value)
    kept = build("msvd", root=msvd_root, skip_missing=True)
    assert [kept.item(i).id for i in range(len(kept))] == ["-4wsuPCjDBc_5_15"]
    assert kept.describe()["missing_videos_skipped"] == 1
    (msvd_root / "YouTubeClips" / "-4wsuPCjDBc_5_15.avi").write_bytes(b"not a video")
    with pytest.raises(DatasetError, match=r"-4wsuPCjDBc_5_15\.avi' is not a video"):
        ds.visual(0)
    for p in (msvd_root / "YouTubeClips").iterdir():
        p.unlink()
    raises(r"none of the 2 videos of split 'test' is under .* \(expected YouTubeClips/<clip_id>\.avi\)", "msvd",
           root=msvd_root, skip_missing=True)


# ---- DiDeMo ------------------------------------------------------------------------------------------------
def moment(video_name, desc, k):
    return {"annotation_id": k, "description": desc, "video": video_name, "times": [[0, 1], [0, 0], [1, 1]],
            "download_link": "https://example.org/x", "num_segments": 6}


@pytest.fixture
def didemo_root(tmp_path):
    root = tmp_path / "didemo"
    data = [moment("12090392@N02_13482799053_87ef417396.mov", "the dog runs", 0),
            moment("54322086@N00_2408598493_3e4e1c4a34.avi", "a girl  waves", 1),
            moment("12090392@N02_13482799053_87ef417396.mov", "dog stops", 2),
            moment("12090392@N02_13482799053_87ef417396.mov", "camera zooms", 3)]
    (root / "data").mkdir(parents=True)
    (root / "data" / "test_data.json").write_text(json.dumps(data))
    (root / "data" / "val_data.json").write_text(json.dumps([moment("99@N01_1_a.mp4", "x", 9)]))
    video(root / "videos" / "12090392@N02_13482799053_87ef417396.mov", n=16, fps=4)  # 4 s
    video(root / "videos" / "54322086@N00_2408598493_3e4e1c4a34.mp4", n=8)  # converted to mp4: found by stem
    return root


def test_didemo_paragraphs(didemo_root):
    ds = build("didemo", root=didemo_root)
    assert len(ds) == 2 and ds.split == "test"
    assert ds.texts() == ["the dog runs dog stops camera zooms", "a girl waves"]
    assert ds.text_positives() == [[0], [1]]
    it = ds.item(1)
    assert it.id == "54322086@N00_2408598493_3e4e1c4a34.avi"
    assert it.meta["path"] == "videos/54322086@N00_2408598493_3e4e1c4a34.mp4"
    assert (it.meta["start"], it.meta["end"], it.meta["descriptions"]) == (0.0, 31.0, 1)
    assert [frame_index(f) for f in build("didemo", root=didemo_root, num_frames=None).visual(0)] == list(range(16))
    assert ds.visual(1).shape == (12, 16, 16, 3)
    assert ds.describe()["descriptions"] == 4
    (didemo_root / "data" / "test_list.txt").write_text("54322086@N00_2408598493_3e4e1c4a34.avi\n")
    listed = build("didemo", root=didemo_root)
    assert [listed.item(i).id for i in range(len(listed))] == ["54322086@N00_2408598493_3e4e1c4a34.avi"]
    assert listed.describe()["split_list"].endswith("test_list.txt")
    val = build("didemo", root=didemo_root, split="val", skip_missing=False)
    with pytest.raises(DatasetError, match=r"video '99@N01_1_a\.mp4' is missing: no <video> .*LocalizingMoments"):
        val.visual(0)


def test_didemo_failures(didemo_root, tmp_path):
    (tmp_path / "e").mkdir()
    assert "LisaAnne/LocalizingMoments" in raises(r"missing .*test_data\.json", "didemo", root=tmp_path / "e")
    raises(r"didemo has no split 'val1'", "didemo", root=didemo_root, split="val1")
    ann = didemo_root / "data" / "test_data.json"
    ann.write_text(json.dumps([{"video": "a.mp4", "times": []}]))
    raises(r"test_data\.json\[0\] has no field 'description'; it has video, times \(expected a list of \{video, "
           r"description, times, \.\.\.\}\)", "didemo", root=didemo_root)
    ann.write_text(json.dumps({"videos": []}))
    raises(r"test_data\.json' is a dict, not a list", "didemo", root=didemo_root)
    ann.write_text("[")
    raises(r"test_data\.json' is not valid JSON", "didemo", root=didemo_root)
    ann.write_text("[]")
    raises(r"test_data\.json' has nothing in split 'test'", "didemo", root=didemo_root)


# ---- ActivityNet Captions ----------------------------------------------------------------------------------
@pytest.fixture
def anet_root(tmp_path):
    root = tmp_path / "anet"
    val1 = {"v_QOlSCBRmfWY": {"duration": 3.0, "timestamps": [[0.0, 1.5], [1.2, 3.0]],
                              "sentences": ["A young woman is seen standing in a room. ", " She dances."]},
            "v_ehGHCYKzyZ8": {"duration": 2.0, "timestamps": [[0, 2]], "sentences": ["A man  runs."]}}
    (root / "captions").mkdir(parents=True)
    (root / "captions" / "val_1.json").write_text(json.dumps(val1))
    (root / "captions" / "train.json").write_text(json.dumps({"v_trainOnly": {"duration": 1, "timestamps": [],
                                                                               "sentences": ["x"]}}))
    video(root / "videos" / "v_QOlSCBRmfWY.mp4", n=12)
    video(root / "videos" / "ehGHCYKzyZ8.webm", n=8)  # CLIP4Clip's naming: without v_
    return root


def test_activitynet_val1_paragraphs(anet_root):
    ds = build("activitynet", root=anet_root)
    assert ds.split == "val1" and len(ds) == 2
    assert ds.texts() == ["A young woman is seen standing in a room. She dances.", "A man runs."]
    assert ds.item(0).id == "v_QOlSCBRmfWY" and ds.item(0).meta["duration"] == 3.0
    assert ds.item(1).meta["path"] == "videos/ehGHCYKzyZ8.webm" and ds.item(1).meta["sentences"] == 1
    assert [frame_index(f) for f in build("activitynet", root=anet_root, num_frames=4).visual(0)] == [0, 4, 7, 11]
    assert ds.describe()["sentences"] == 3
    raises(r"none of the 1 videos of split 'train' is under .*v_<id>\.mp4", "activitynet", root=anet_root,
           split="train", skip_missing=True)
    assert "densevid" in raises(r"missing .*val_2\.json", "activitynet", root=anet_root, split="val2")
    (anet_root / "captions" / "val_1.json").write_text(json.dumps({"v_x": {"duration": 1, "timestamps": []}}))
    raises(r"val_1\.json\['v_x'\] has no field 'sentences'", "activitynet", root=anet_root)
    (anet_root / "captions" / "val_1.json").write_text(json.dumps([1]))
    raises(r"val_1\.json' is a list, not an object", "activitynet", root=anet_root)


# ---- LSMDC -------------------------------------------------------------------------------------------------
LSMDC_CLIPS = ("0001_American_Beauty_00.00.51.926-00.00.54.129", "1012_Unbreakable_00.05.16.065-00.05.21.941",
               "3001_21_JUMP_STREET_00.00.01.000-00.00.04.000")


def lsmdc_line(clip, sentence):
    return "\t".join([clip, "00.00.51.926", "00.00.54.129", "00.00.51.000", "00.00.55.000", sentence]) + "\n"


@pytest.fixture
def lsmdc_root(tmp_path):
    root = tmp_path / "lsmdc"
    root.mkdir()
    (root / "LSMDC16_challenge_1000_publictect.csv").write_text(
        "".join(lsmdc_line(c, s) for c, s in zip(LSMDC_CLIPS, ["Someone opens a door.", "SOMEONE  looks.",
                                                              "They run."])))
    (root / "annotations").mkdir()
    (root / "annotations" / "LSMDC16_annos_val.csv").write_text(
        lsmdc_line(LSMDC_CLIPS[0], "first") + lsmdc_line(LSMDC_CLIPS[2], "other") + lsmdc_line(LSMDC_CLIPS[0],
                                                                                              "second"))
    video(root / "avi" / "0001_American_Beauty" / f"{LSMDC_CLIPS[0]}.avi", n=6)
    video(root / "avi" / "1012_Unbreakable" / f"{LSMDC_CLIPS[1]}.avi", n=7)
    video(root / "elsewhere" / f"{LSMDC_CLIPS[2]}.mp4", n=8)  # any layout: found by the index
    return root


def test_lsmdc_test_and_val(lsmdc_root):
    ds = build("lsmdc", root=lsmdc_root)
    assert len(ds) == 3 and ds.texts() == ["Someone opens a door.", "SOMEONE looks.", "They run."]
    assert ds.item(0).meta == {"movie": "0001_American_Beauty",
                               "path": f"avi/0001_American_Beauty/{LSMDC_CLIPS[0]}.avi"}
    assert ds.item(2).meta["path"] == f"elsewhere/{LSMDC_CLIPS[2]}.mp4"
    assert [frame_index(f) for f in build("lsmdc", root=lsmdc_root, num_frames=None).visual(1)] == list(range(7))
    xpool = build("lsmdc", root=lsmdc_root, split="test-999")  # X-Pool's / HAT-VTR's test: one clip left out
    assert [xpool.item(i).id for i in range(len(xpool))] == [LSMDC_CLIPS[0], LSMDC_CLIPS[2]]
    val = build("lsmdc", root=lsmdc_root, split="val")  # a clip id repeats: one item, its sentences in order
    assert [val.item(i).id for i in range(len(val))] == [LSMDC_CLIPS[0], LSMDC_CLIPS[2]]
    assert val.texts() == ["first", "second", "other"] and val.text_positives() == [[0], [0], [1]]


def test_lsmdc_failures(lsmdc_root):
    msg = raises(r"missing .*LSMDC16_annos_training\.csv", "lsmdc", root=lsmdc_root, split="train")
    assert "describingmovies" in msg
    (lsmdc_root / "LSMDC16_challenge_1000_publictect.csv").write_text("clip\tonly three\tfields\n")
    raises(r"LSMDC16_challenge_1000_publictect\.csv' line 1 has 3 tab-separated fields, not 6", "lsmdc",
           root=lsmdc_root)
    (lsmdc_root / "LSMDC16_challenge_1000_publictect.csv").write_text(lsmdc_line("0002_Gone_00.00.01.000-00.00.02.000",
                                                                                 "x"))
    with pytest.raises(DatasetError, match=r"video '0002_Gone_00\.00\.01\.000-00\.00\.02\.000' is missing: no "
                                           r"avi/<movie>/<clip_id>\.avi"):
        build("lsmdc", root=lsmdc_root).visual(0)


# ---- under the dashboard's data roots: no server path in any message --------------------------------------------
def test_messages_under_the_data_roots_name_no_server_path(tmp_path):
    from robustlab.io.access import set_read_roots

    root, outside = (tmp_path / "data").resolve(), (tmp_path / "outside").resolve()
    ds_root = root / "lsmdc"
    (ds_root / "avi" / "0001_American_Beauty").mkdir(parents=True)
    (ds_root / "LSMDC16_challenge_1000_publictect.csv").write_text(lsmdc_line(LSMDC_CLIPS[0], "a") +
                                                                   lsmdc_line(LSMDC_CLIPS[2], "b"))
    video(outside / "secret.avi", n=4)
    (ds_root / "avi" / "0001_American_Beauty" / f"{LSMDC_CLIPS[0]}.avi").symlink_to(outside / "secret.avi")
    (root / "msvd").mkdir()
    set_read_roots([root])
    try:
        ds = build("lsmdc", root=ds_root)
        msgs = []
        for i in (0, 1):  # a clip symlinked out of the root reads as missing, as a clip that is not there
            with pytest.raises(DatasetError) as e:
                ds.visual(i)
            msgs.append(str(e.value))
        assert "is missing" in msgs[0] and "is missing" in msgs[1], msgs
        with pytest.raises(DatasetError) as e:
            build("msvd", root=root / "msvd")
        msgs.append(str(e.value))
        assert "'msvd/AllVideoDescriptions.txt'" in msgs[-1], msgs
        for m in msgs:
            assert "\n" not in m and str(root) not in m and str(outside) not in m, m
    finally:
        set_read_roots(None)


# ---- type confusion: every field of an annotation file replaced by a value of another type ----------------------
CONFUSION = CONFUSION_VALUES + ["../../../etc/passwd", "a\x00b"]


def _with(doc, path: tuple, value):
    """A copy of ``doc`` whose node at ``path`` is ``value``."""
    if not path:
        return copy.deepcopy(value)
    out = copy.copy(doc)
    out[path[0]] = _with(doc[path[0]], path[1:], value)
    return out


def confusion_check(name: str, root, ann, **kw) -> int:
    """Each node of the JSON file ``ann`` replaced in turn by each CONFUSION value: building the dataset, reading its
    items, texts and questions and its first visual either works or is one DatasetError line naming the dataset
    (never another exception, nor a TypeError re-labelled). Returns how many variants ran."""
    original = ann.read_text()
    doc = json.loads(original)
    ran = 0
    for path in list(_paths(doc))[1:]:
        for value in CONFUSION:
            ann.write_text(json.dumps(_with(doc, path, value)))
            try:
                ds = build(name, root=root, **kw)
                ds.texts(), ds.describe(), [ds.item(i) for i in range(len(ds))]
                ds.visual(0)
            except DatasetError as e:
                assert str(e).startswith(name) and "\n" not in str(e), (path, value, str(e))
                assert not isinstance(e.__cause__, TypeError), (path, value, str(e))
            ran += 1
    ann.write_text(original)
    return ran


def test_type_confusion_in_the_retrieval_annotations(msvd_root, didemo_root, anet_root):
    (msvd_root / "captions_msvd.json").write_text(json.dumps({"-4wsuPCjDBc_5_15": ["a squirrel"],
                                                              "aBc_1_10": ["a man", "guitar"]}))
    (msvd_root / "AllVideoDescriptions.txt").unlink()
    assert confusion_check("msvd", msvd_root, msvd_root / "captions_msvd.json", num_frames=2) > 30
    assert confusion_check("didemo", didemo_root, didemo_root / "data" / "test_data.json", num_frames=2) > 200
    assert confusion_check("activitynet", anet_root, anet_root / "captions" / "val_1.json", num_frames=2) > 100


# ---- discovery, a retrieval run, protocols -----------------------------------------------------------------
def test_the_folder_picker_discovers_each(msvd_root, didemo_root, anet_root, lsmdc_root, tmp_path):
    found = {(d["name"], d["rel"]) for d in discover([tmp_path])}
    assert {("msvd", "msvd"), ("didemo", "didemo/data"), ("activitynet", "anet/captions"),
            ("lsmdc", "lsmdc"), ("lsmdc", "lsmdc/annotations")} <= found
    assert not {n for n, _ in found} & {"msrvtt", "youcook2", "coco"}


def test_retrieval_runs_on_each(msvd_root, didemo_root, anet_root, lsmdc_root):
    import robustlab as rl
    from robustlab.models import load_model

    model = load_model("builtin:tiny-clip-video-meanp", device="cpu")
    for name, root, texts in (("msvd", msvd_root, 5), ("didemo", didemo_root, 2), ("activitynet", anet_root, 2),
                              ("lsmdc", lsmdc_root, 3)):
        ds = rl.datasets.build(name, root=root, num_frames=4)
        clean, noisy = rl.tasks.get("retrieval").evaluate(model, ds, [None, {"text": "keyboard:2"}])
        assert clean.dataset == name and clean.n == len(ds) and clean.extra["texts"] == texts, name
        assert set(clean.metrics) == {"t2v", "v2t"} and 0 <= clean.metrics["t2v"]["R@1"] <= 1, name
        assert noisy.conditions["text"]["name"] == "keyboard", name


PROTOCOL = """schema = 1
name = "{name}-check"
title = "a protocol on {name}"
paper = "a paper"
tasks = ["{task}"]
models = ["{model}"]

[dataset]
name = "{name}"
split = "{split}"
paper = "the paper's split"
"""


@pytest.mark.parametrize("name,split", [("msvd", "test"), ("didemo", "test"), ("activitynet", "val1"),
                                        ("lsmdc", "test-999"), ("msrvtt-qa", "test"), ("activitynet-qa", "val"),
                                        ("next-qa", "val")])
def test_a_protocol_names_each(name, split, tmp_path, capsys):
    from robustlab.bench.protocol import dry_run_lines, load_protocol
    from robustlab.cli import main

    task, model = (("retrieval", "builtin:tiny-clip-video-meanp") if name in RETRIEVAL
                   else ("vqa", "builtin:tiny-vilt"))
    f = tmp_path / f"{name}.toml"
    f.write_text(PROTOCOL.format(name=name, task=task, model=model, split=split))
    p = load_protocol(str(f))
    assert p.dataset["name"] == name
    spec = p.build_spec(dataset={"root": str(tmp_path)})
    assert spec.dataset["name"] == name and spec.dataset["split"] == split and spec.tasks == [task]
    assert f"dataset {name} split {split} root {tmp_path}" in "\n".join(dry_run_lines(spec, p))
    assert main(["bench", "--protocol", str(f), "--root", str(tmp_path), "--dry-run"]) == 0
    assert f"dataset {name} split {split}" in capsys.readouterr().out
    f.write_text(PROTOCOL.format(name=name, task=task, model=model, split="nope"))
    assert main(["bench", "--protocol", str(f), "--root", str(tmp_path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{name} has no split 'nope'" in err and "\n" not in err and "Traceback" not in err
