"""Loaders of local copies of standard datasets, each on a tiny fixture written in the real format: lengths, texts,
positives, boxes, questions, decoded visuals, clip cutting, and every one-line failure."""
import csv
import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from robustlab.datasets import DatasetError, build, list_datasets

LOCAL = ("coco", "flickr30k", "msrvtt", "youcook2", "refcoco", "refcoco+", "refcocog", "snli-ve", "nlvr2")


# ---- fixture writers ---------------------------------------------------------------------------------------
def image(path: Path, value: int, size=(16, 20)) -> Path:
    """A flat image of gray ``value`` (h×w = ``size``); JPEG or PNG by suffix."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((*size, 3), value, np.uint8)).save(path)
    return path


def video(path: Path, n: int = 8, fps: float = 8.0, size=(16, 16)) -> Path:
    """A video whose frame k is flat gray 20 + 4k (so a decoded frame tells its index)."""
    from robustlab.io.media import write_video

    path.parent.mkdir(parents=True, exist_ok=True)
    frames = np.stack([np.full((*size, 3), 20 + 4 * k, np.uint8) for k in range(n)])
    return write_video(frames, path, fps=fps)


def frame_index(frame: np.ndarray) -> int:
    return int(round((float(frame.mean()) - 20) / 4))


def jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def raises(match: str, *a, **kw) -> str:
    with pytest.raises(DatasetError, match=match) as e:
        build(*a, **kw)
    msg = str(e.value)
    assert "\n" not in msg, msg  # one line
    return msg


def test_every_loader_is_registered_with_needs_and_paper():
    entries = {e["name"]: e for e in list_datasets()}
    for name in LOCAL:
        e = entries[name]
        assert e["needs_root"] and e["needs"] and e["paper"], name
    assert {e["name"] for e in list_datasets(task="grounding")} >= {"refcoco", "refcoco+", "refcocog"}
    assert {e["name"] for e in list_datasets(kind="video")} >= {"msrvtt", "youcook2"}
    msg = raises("reads a local copy", "coco")
    assert "dataset_coco.json" in msg


# ---- COCO / Flickr30K (Karpathy) ----------------------------------------------------------------------------
def karpathy_image(fname, split, caps, **extra):
    return {"filename": fname, "split": split, "sentences": [{"raw": c + " ", "tokens": c.split()} for c in caps],
            **extra}


@pytest.fixture
def coco_root(tmp_path):
    root = tmp_path / "coco"
    imgs = [karpathy_image("COCO_val2014_000000000001.jpg", "test", [f"a cat {k}" for k in range(6)],
                           filepath="val2014", cocoid=1),
            karpathy_image("COCO_val2014_000000000002.jpg", "test", [f"a dog {k}" for k in range(5)],
                           filepath="val2014", cocoid=2),
            karpathy_image("COCO_val2014_000000000003.jpg", "val", ["a bird"] * 5, filepath="val2014", cocoid=3),
            karpathy_image("COCO_train2014_000000000004.jpg", "train", ["a car"] * 5, filepath="train2014",
                           cocoid=4),
            karpathy_image("COCO_train2014_000000000005.jpg", "restval", ["a bus"] * 5, filepath="train2014",
                           cocoid=5)]
    root.mkdir()
    (root / "dataset_coco.json").write_text(json.dumps({"dataset": "coco", "images": imgs}))
    for v, im in enumerate(imgs):
        image(root / im["filepath"] / im["filename"], 40 * (v + 1))
    return root


def test_coco_karpathy_test_split(coco_root):
    ds = build("coco", root=coco_root, split="test")
    assert len(ds) == 2 and ds.kind == "image" and ds.positives == "item"
    texts = ds.texts()
    assert len(texts) == 10 and texts[0] == "a cat 0" and texts[5] == "a dog 0"  # 5 per image, whitespace cleaned
    assert ds.text_positives() == [[0]] * 5 + [[1]] * 5
    assert ds.visual_positives() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    v = ds.visual(1)
    assert v.shape == (16, 20, 3) and v.dtype == np.uint8 and abs(int(v.mean()) - 80) <= 2
    it = ds.item(0)
    assert it.id == "1" and it.meta["path"] == "val2014/COCO_val2014_000000000001.jpg"
    assert ds.item_source(0)["path"] == it.meta["path"]
    d = ds.describe()
    assert d["n"] == 2 and d["texts"] == 10 and d["dataset"] == "coco"
    assert len(build("coco", root=coco_root, split="test", captions_per_image=None).texts()) == 11
    assert len(build("coco", root=coco_root, split="test", n=1)) == 1
    assert len(build("coco", root=coco_root, split="train")) == 2  # train + restval
    assert [ds.item(0).id for ds in [build("coco", root=coco_root, split="restval")]] == ["5"]
    assert build("coco", root=coco_root, split="train").visual(1).mean() == pytest.approx(200, abs=2)


def test_coco_failures(coco_root, tmp_path):
    raises(r"does not exist", "coco", root=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    msg = raises(r"missing .*dataset_coco\.json", "coco", root=tmp_path / "empty")
    assert "caption_datasets.zip" in msg
    raises(r"has no split 'dev'; splits: test, val, train, restval", "coco", root=coco_root, split="dev")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "dataset_coco.json").write_text(json.dumps({"images": [{"filename": "x.jpg", "split": "test"}]}))
    raises(r"images\[0\] has no field 'sentences'", "coco", root=bad)
    (bad / "dataset_coco.json").write_text(json.dumps({"annotations": []}))
    raises(r"dataset_coco\.json has no field 'images'", "coco", root=bad)
    (bad / "dataset_coco.json").write_text("{not json")
    raises(r"not valid JSON", "coco", root=bad)
    raises(r"n must be a positive integer", "coco", root=coco_root, n=0)
    raises(r"coco takes no option bogus \(its options: ann_file, captions_per_image, n\)", "coco", root=coco_root,
           bogus=1)
    ds = build("coco", root=coco_root)
    (coco_root / "val2014" / "COCO_val2014_000000000002.jpg").unlink()
    with pytest.raises(DatasetError, match=r"COCO_val2014_000000000002\.jpg' is missing .*cocodataset"):
        ds.visual(1)


def test_flickr30k_images_folder_or_root(tmp_path):
    for layout in ("flickr30k-images", ""):
        root = tmp_path / f"f{layout}"
        imgs = [karpathy_image(f"{k}.jpg", s, [f"person {k} {j}" for j in range(5)], imgid=k)
                for k, s in enumerate(["test", "test", "test", "train", "val"])]
        root.mkdir()
        (root / "dataset_flickr30k.json").write_text(json.dumps({"dataset": "flickr30k", "images": imgs}))
        for k, im in enumerate(imgs):
            image((root / layout / im["filename"]) if layout else root / im["filename"], 30 + 10 * k, (12, 10))
        ds = build("flickr30k", root=root)
        assert ds.split == "test" and len(ds) == 3 and len(ds.texts()) == 15
        assert ds.text_positives()[7] == [1] and ds.visual_positives()[2] == [10, 11, 12, 13, 14]
        assert ds.visual(2).shape == (12, 10, 3) and ds.visual(2).mean() == pytest.approx(50, abs=2)
        assert ds.item(2).id == "2" and ds.item(2).meta["filename"] == "2.jpg"
        assert len(build("flickr30k", root=root, split="train")) == 1
    raises(r"no split 'restval'", "flickr30k", root=root, split="restval")
    (root / "0.jpg").unlink()
    with pytest.raises(DatasetError, match=r"0\.jpg' is missing .*Flickr30K"):
        build("flickr30k", root=root).visual(0)


# ---- MSR-VTT -----------------------------------------------------------------------------------------------
@pytest.fixture
def msrvtt_root(tmp_path):
    root = tmp_path / "msrvtt"
    rows = [("ret0", "msr7", "video7", "a girl puts a sweater on a dog"), ("ret1", "msr8", "video8", "a man cooks"),
            ("ret2", "msr9", "video9", "cars race  on a track")]
    root.mkdir()
    with open(root / "MSRVTT_JSFUSION_test.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "vid_key", "video_id", "sentence"])
        w.writerows(rows)
    data = {"videos": [{"video_id": f"video{k}", "split": s, "id": k}
                       for k, s in enumerate(["train", "test", "validate", "test", "train"])],
            "sentences": [{"video_id": f"video{k % 5}", "caption": f"caption {j} of video {k % 5}", "sen_id": j}
                          for j, k in enumerate(range(15))]}
    (root / "MSRVTT_data.json").write_text(json.dumps(data))
    for k in (1, 3, 7, 8, 9):
        video(root / "videos" / f"video{k}.mp4", n=8 + k % 3, size=(24, 32))
    return root


def test_msrvtt_1ka_test(msrvtt_root):
    ds = build("msrvtt", root=msrvtt_root, split="test")
    assert len(ds) == 3 and ds.kind == "video" and ds.positives == "item"
    assert ds.texts() == ["a girl puts a sweater on a dog", "a man cooks", "cars race on a track"]
    assert ds.text_positives() == [[0], [1], [2]] and ds.item(0).id == "video7"
    v = ds.visual(0)  # 9 frames in the file, 12 sampled uniformly (repeats)
    assert v.shape == (12, 24, 32, 3) and v.dtype == np.uint8
    assert [frame_index(f) for f in v] == list(np.linspace(0, 8, 12).round().astype(int))
    small = build("msrvtt", root=msrvtt_root, num_frames=4, max_side=16).visual(1)
    assert small.shape == (4, 12, 16, 3)
    from robustlab.io.media import read_video  # the same frames as the project's reader

    assert np.array_equal(small, read_video(msrvtt_root / "videos" / "video8.mp4", num_frames=4, max_side=16).frames)
    by_time = build("msrvtt", root=msrvtt_root, fps=4.0).visual(1)  # 10 frames at 8 fps, one every 0.25 s
    assert [frame_index(f) for f in by_time] == [0, 2, 4, 6, 8]
    assert [frame_index(f) for f in build("msrvtt", root=msrvtt_root, num_frames=None, max_frames=5).visual(1)] \
        == [0, 2, 4, 7, 9]
    assert ds.describe()["texts"] == 3 and ds.item_source(0)["path"] == "videos/video7.mp4"


def test_msrvtt_frame_source_reads_only_the_frames_asked_for(msrvtt_root):
    ds = build("msrvtt", root=msrvtt_root, split="test")
    src = ds.frame_source(0)  # video7.mp4: 9 frames
    assert src.n_frames == 9 and len(src.keyframes) >= 1
    every = src.read(np.arange(9))
    assert [frame_index(f) for f in every] == list(range(9))
    for idx in ([4], [8, 0, 3, 3], [1, 2, 7]):
        assert np.array_equal(src.read(idx), every[idx])  # any order, repeats: the same frames as a full read
    assert np.array_equal(ds.visual(0), every[np.linspace(0, 8, 12).round().astype(int)])
    with pytest.raises(DatasetError, match=r"frame indices must be in 0\.\.8"):
        src.read([9])


def test_msrvtt_official_splits_and_flat_videos(msrvtt_root):
    for p in (msrvtt_root / "videos").iterdir():
        p.rename(msrvtt_root / p.name)  # <root>/<video_id>.mp4 works too
    ds = build("msrvtt", root=msrvtt_root, split="full-test")
    assert [ds.item(i).id for i in range(len(ds))] == ["video1", "video3"]
    assert ds.texts()[:3] == ["caption 1 of video 1", "caption 6 of video 1", "caption 11 of video 1"]
    assert len(ds.texts()) == 6 and ds.text_positives()[3] == [1] and len(ds.visual_positives()[1]) == 3
    assert ds.visual(1).shape == (12, 24, 32, 3)
    assert len(build("msrvtt", root=msrvtt_root, split="train")) == 2
    assert len(build("msrvtt", root=msrvtt_root, split="val")) == 1


def test_msrvtt_failures(msrvtt_root, tmp_path):
    raises(r"has no split 'test-1k'; splits: test, full-test, train, val", "msrvtt", root=msrvtt_root,
           split="test-1k")
    (tmp_path / "e").mkdir()
    msg = raises(r"missing .*MSRVTT_JSFUSION_test\.csv", "msrvtt", root=tmp_path / "e")
    assert "CLIP4Clip" in msg
    raises(r"missing .*MSRVTT_data\.json", "msrvtt", root=tmp_path / "e", split="val")
    text = (msrvtt_root / "MSRVTT_JSFUSION_test.csv").read_text().replace("video_id", "video")
    (msrvtt_root / "MSRVTT_JSFUSION_test.csv").write_text(text)
    raises(r"has no column 'video_id' \(columns: key, vid_key, video, sentence", "msrvtt", root=msrvtt_root)
    (msrvtt_root / "MSRVTT_data.json").write_text(json.dumps({"videos": [{"video_id": "video1"}], "sentences": []}))
    raises(r"videos\[0\] has no field 'split'", "msrvtt", root=msrvtt_root, split="full-test")
    raises(r"num_frames=80 is over max_frames=64", "msrvtt", root=msrvtt_root, split="full-test", num_frames=80)


def test_msrvtt_missing_video(msrvtt_root):
    (msrvtt_root / "videos" / "video8.mp4").unlink()
    ds = build("msrvtt", root=msrvtt_root)
    with pytest.raises(DatasetError, match=r"video8\.mp4' is missing .*MSRVTT\.zip"):
        ds.visual(1)
    kept = build("msrvtt", root=msrvtt_root, skip_missing=True)
    assert [kept.item(i).id for i in range(len(kept))] == ["video7", "video9"]
    assert kept.describe()["missing_videos_skipped"] == 1
    (msrvtt_root / "videos" / "video9.mp4").write_bytes(b"not a video")
    with pytest.raises(DatasetError, match=r"video9\.mp4' is not a video"):
        ds.visual(2)


# ---- YouCook2 ----------------------------------------------------------------------------------------------
@pytest.fixture
def youcook_root(tmp_path):
    root = tmp_path / "yc2"
    db = {"vidA": {"subset": "validation", "recipe_type": "113", "duration": 5.0,
                   "annotations": [{"id": 0, "segment": [1, 3], "sentence": "spread butter"},
                                   {"id": 1, "segment": [3.5, 5], "sentence": "add  ham"}]},
          "vidB": {"subset": "validation", "recipe_type": "201", "duration": 2.0,
                   "annotations": [{"id": 0, "segment": [0, 1], "sentence": "boil water"}]},
          "vidC": {"subset": "training", "recipe_type": "201", "duration": 2.0,
                   "annotations": [{"id": 0, "segment": [0, 2], "sentence": "cut onions"}]},
          "vidGone": {"subset": "validation", "recipe_type": "201", "duration": 9.0,
                      "annotations": [{"id": 0, "segment": [0, 2], "sentence": "fry"}]}}
    (root / "annotations").mkdir(parents=True)
    (root / "annotations" / "youcookii_annotations_trainval.json").write_text(json.dumps({"database": db}))
    video(root / "raw_videos" / "validation" / "113" / "vidA.mp4", n=50, fps=10)
    video(root / "raw_videos" / "validation" / "201" / "vidB.mkv", n=20, fps=10)
    video(root / "vidC.webm", n=10, fps=5)
    return root


def test_youcook2_segments_cut_when_read(youcook_root):
    ds = build("youcook2", root=youcook_root, split="val", num_frames=None)
    assert len(ds) == 4 and ds.kind == "video" and ds.positives == "item"
    assert ds.texts() == ["spread butter", "add ham", "boil water", "fry"]
    assert ds.text_positives() == [[0], [1], [2], [3]]
    it = ds.item(0)
    assert it.id == "vidA_0" and (it.meta["start"], it.meta["end"]) == (1.0, 3.0)
    assert it.meta["path"] == "raw_videos/validation/113/vidA.mp4"
    clip = ds.visual(0)  # [1, 3) s at 10 fps: frames 10..29, nothing else decoded into the clip
    assert clip.shape == (20, 16, 16, 3) and clip.dtype == np.uint8
    assert [frame_index(f) for f in clip] == list(range(10, 30))
    tail = ds.visual(1)  # [3.5, 5): frames 35..49
    assert [frame_index(f) for f in tail] == list(range(35, 50))
    assert [frame_index(f) for f in ds.visual(2)] == list(range(10))  # .mkv in another folder
    src = ds.item_source(1)
    assert src["start"] == 3.5 and src["end"] == 5.0
    d = ds.describe()
    assert d["n"] == 4 and d["texts"] == 4 and d["videos_found"] == 3
    uni = build("youcook2", root=youcook_root)  # 12 frames uniformly over the segment
    assert [frame_index(f) for f in uni.visual(0)] == list(10 + np.linspace(0, 19, 12).round().astype(int))
    by_time = build("youcook2", root=youcook_root, fps=2)
    assert [frame_index(f) for f in by_time.visual(0)] == [10, 15, 20, 25]
    train = build("youcook2", root=youcook_root, split="train", num_frames=None)
    assert len(train) == 1 and train.visual(0).shape[0] == 10  # .webm, the whole [0, 2) s at 5 fps
    assert len(build("youcook2", root=youcook_root, n=2)) == 2


def test_youcook2_failures(youcook_root, tmp_path):
    ds = build("youcook2", root=youcook_root)
    with pytest.raises(DatasetError, match=r"video 'vidGone' is missing: no vidGone\.mp4 / \.mkv / \.webm"):
        ds.visual(3)
    kept = build("youcook2", root=youcook_root, skip_missing=True)
    assert len(kept) == 3 and kept.describe()["missing_videos_skipped"] == 1
    raises(r"has no split 'test'; splits: val, train", "youcook2", root=youcook_root, split="test")
    (tmp_path / "e").mkdir()
    msg = raises(r"missing .*youcookii_annotations_trainval\.json", "youcook2", root=tmp_path / "e")
    assert "youcook2.eecs.umich.edu" in msg
    ann = youcook_root / "annotations" / "youcookii_annotations_trainval.json"
    ann.write_text(json.dumps({"database": {"vidA": {"subset": "validation",
                                                     "annotations": [{"id": 0, "sentence": "x"}]}}}))
    raises(r"annotations\[0\] has no field 'segment'", "youcook2", root=youcook_root)
    ann.write_text(json.dumps({"videos": {}}))
    raises(r"has no field 'database'", "youcook2", root=youcook_root)
    ann.write_text(json.dumps({"database": {"vidA": {"subset": "validation",
                                                     "annotations": [{"segment": [7, 9], "sentence": "late"}]}}}))
    with pytest.raises(DatasetError, match=r"vidA\.mp4' has no frames between 7 and 9 s \(it lasts 5\.0 s\)"):
        build("youcook2", root=youcook_root).visual(0)


# ---- RefCOCO / RefCOCO+ / RefCOCOg -------------------------------------------------------------------------
def refer_files(folder: Path):
    instances = {"images": [{"id": 1, "file_name": "COCO_train2014_000000000001.jpg", "height": 40, "width": 60},
                            {"id": 2, "file_name": "COCO_train2014_000000000002.jpg", "height": 40, "width": 60}],
                 "annotations": [{"id": 10, "image_id": 1, "bbox": [1, 2, 10, 20], "category_id": 1},
                                 {"id": 11, "image_id": 1, "bbox": [30.5, 5, 20, 10], "category_id": 3},
                                 {"id": 20, "image_id": 2, "bbox": [0, 0, 5, 5], "category_id": 1}],
                 "categories": [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}]}
    refs = [{"ref_id": 0, "ann_id": 10, "image_id": 1, "split": "val", "category_id": 1,
             "sentences": [{"sent": "man on the left", "sent_id": 0}, {"sent": "left guy", "sent_id": 1}]},
            {"ref_id": 1, "ann_id": 11, "image_id": 1, "split": "val", "category_id": 3,
             "sentences": [{"sent": "red car", "sent_id": 2}]},
            {"ref_id": 2, "ann_id": 20, "image_id": 2, "split": "testA", "category_id": 1,
             "sentences": [{"sent": "woman", "sent_id": 3}]}]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "instances.json").write_text(json.dumps(instances))
    return refs


def refer_images(images: Path):
    for k in (1, 2):
        image(images / f"COCO_train2014_{k:012d}.jpg", 50 * k, (40, 60))


def test_refcoco_items_refs_and_boxes(tmp_path):
    root = tmp_path / "refer"
    refs = refer_files(root / "refcoco")
    (root / "refcoco" / "refs(unc).json").write_text(json.dumps(refs))
    refer_images(root / "images" / "mscoco" / "images" / "train2014")
    ds = build("refcoco", root=root, split="val")
    assert len(ds) == 1 and ds.tasks == ("grounding",) and ds.texts() == []
    it = ds.item(0)
    assert it.id == "1" and [r.expression for r in it.refs] == ["man on the left", "left guy", "red car"]
    assert it.refs[0].box == (1.0, 2.0, 11.0, 22.0) and it.refs[2].box == (30.5, 5.0, 50.5, 15.0)
    assert it.refs[2].meta == {"ref_id": 1, "ann_id": 11, "category_id": 3, "sent_id": 2}
    v = ds.visual(0)
    assert v.shape == (40, 60, 3) and v.dtype == np.uint8 and abs(int(v.mean()) - 50) <= 3
    d = ds.describe()
    assert d["n"] == 1 and d["expressions"] == 3 and d["objects"] == 2
    testa = build("refcoco", root=root, split="testA")
    assert len(testa) == 1 and testa.item(0).refs[0].box == (0.0, 0.0, 5.0, 5.0)
    raises(r"refcoco has no split 'test'; splits: val, testA, testB, train", "refcoco", root=root, split="test")
    raises(r"no ref in split 'testB'", "refcoco", root=root, split="testB")


def test_refcoco_pickle_refused_unless_trusted(tmp_path):
    root = tmp_path / "refer"
    refs = refer_files(root / "refcoco")
    refer_images(root / "train2014")
    with open(root / "refcoco" / "refs(unc).p", "wb") as f:
        pickle.dump(refs, f, protocol=2)
    msg = raises(r"refs\(unc\)\.p' is a Python pickle", "refcoco", root=root)
    assert "trust_pickle=True" in msg and "--trust-pickle" in msg and "json.dump" in msg
    raises(r"is a Python pickle", "refcoco", root=root, trust_pickle="yes")
    ds = build("refcoco", root=root, trust_pickle=True)
    assert len(ds) == 1 and len(ds.item(0).refs) == 3 and ds.visual(0).shape == (40, 60, 3)


class _Boom:
    """Unpickling this touches a file: it must never happen without trust_pickle."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_refcoco_pickle_is_never_opened_by_default(tmp_path):
    root = tmp_path / "refer"
    refer_files(root / "refcoco")
    marker = tmp_path / "pwned"
    with open(root / "refcoco" / "refs(unc).p", "wb") as f:
        pickle.dump([_Boom(str(marker))], f)
    raises(r"is a Python pickle", "refcoco", root=root)
    assert not marker.exists()


def test_refcoco_plus_from_parquet_and_refcocog(tmp_path, monkeypatch):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    root = tmp_path / "flat"
    refs = refer_files(root)  # instances.json in the folder itself
    pd.DataFrame(refs).to_parquet(root / "refs(unc).parquet")
    refer_images(root / "train2014")
    ds = build("refcoco+", root=root, split="val")
    assert len(ds) == 1 and [r.expression for r in ds.item(0).refs] == ["man on the left", "left guy", "red car"]
    assert ds.item(0).refs[1].box == (1.0, 2.0, 11.0, 22.0) and ds.item(0).refs[1].meta["sent_id"] == 1
    monkeypatch.setitem(sys.modules, "pandas", None)
    raises(r"needs pandas and pyarrow", "refcoco+", root=root)
    monkeypatch.undo()
    # refcocog: umd splits; plain-string sentences are accepted too
    g = [dict(r, split={"val": "val", "testA": "test"}[r["split"]], sentences=[s["sent"] for s in r["sentences"]])
         for r in refs]
    (root / "refs(umd).json").write_text(json.dumps(g))
    assert len(build("refcocog", root=root, split="test")) == 1
    assert len(build("refcocog", root=root, split="val").item(0).refs) == 3
    raises(r"no split 'testA'; splits: val, test, train", "refcocog", root=root, split="testA")
    raises(r"has no split_by 'unc'; choose umd, google", "refcocog", root=root, split_by="unc")
    raises(r"refcocog \(google\) has no split 'test'", "refcocog", root=root, split="test", split_by="google")
    raises(r"missing .*refs\(google\)\.json", "refcocog", root=root, split_by="google")


def test_refcoco_failures(tmp_path):
    root = tmp_path / "refer"
    refs = refer_files(root / "refcoco")
    msg = raises(r"missing .*refcoco/refs\(unc\)\.json", "refcoco", root=root)
    assert "lichengunc/refer" in msg
    (root / "refcoco" / "refs(unc).json").write_text(json.dumps([{k: v for k, v in r.items() if k != "ann_id"}
                                                                  for r in refs]))
    raises(r"refs\(unc\)\.json\[0\] has no field 'ann_id'", "refcoco", root=root)
    (root / "refcoco" / "refs(unc).json").write_text(json.dumps([dict(refs[0], image_id=[1])]))
    raises(r"refs\(unc\)\.json\[0\]\['image_id'\] is \[1\], not an integer id", "refcoco", root=root)
    (root / "refcoco" / "refs(unc).json").write_text(json.dumps(refs))
    ds = build("refcoco", root=root)
    with pytest.raises(DatasetError, match=r"COCO_train2014_000000000001\.jpg' is missing .*train2014\.zip"):
        ds.visual(0)
    (root / "refcoco" / "instances.json").unlink()
    raises(r"missing .*refcoco/instances\.json", "refcoco", root=root)
    (root / "refcoco" / "instances.json").write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}],
                                                                 "annotations": [{"id": 10, "image_id": 1}]}))
    raises(r"annotations\[0\] has no field 'bbox'", "refcoco", root=root)
    (root / "refcoco" / "instances.json").write_text(json.dumps({"images": [], "annotations": []}))
    raises(r"image_id 1 of refs\(unc\)\.json is not in instances\.json images", "refcoco", root=root)


# ---- SNLI-VE -----------------------------------------------------------------------------------------------
def test_snli_ve(tmp_path):
    root = tmp_path / "snli"
    rows = [{"Flikr30kID": "100.jpg", "Flickr30K_ID": "100", "sentence1": "two dogs run", "sentence2": "animals move",
             "gold_label": "entailment", "pairID": "100.jpg#0r1e"},
            {"Flikr30kID": "100.jpg", "sentence2": "the dogs sleep", "gold_label": "contradiction", "pairID": "p2"},
            {"Flickr30K_ID": "200", "sentence2": "a man  waits", "gold_label": "neutral", "pairID": "p3"},
            {"Flikr30kID": "200.jpg", "sentence2": "?", "gold_label": "-", "pairID": "p4"}]
    jsonl(root / "snli_ve_test.jsonl", rows)
    image(root / "flickr30k-images" / "100.jpg", 90, (10, 14))
    image(root / "flickr30k-images" / "200.jpg", 150, (10, 14))
    ds = build("snli-ve", root=root)
    assert ds.split == "test" and len(ds) == 2 and ds.tasks == ("entailment",) and ds.texts() == []
    qs = ds.item(0).questions
    assert [(q.question, q.answer, q.qtype) for q in qs] == [("animals move", "entailment", "entailment"),
                                                             ("the dogs sleep", "contradiction", "entailment")]
    assert qs[0].meta == {"pair_id": "100.jpg#0r1e", "premise": "two dogs run"}
    assert ds.item(1).id == "200" and ds.item(1).questions[0].question == "a man waits"
    v = ds.visual(1)
    assert v.shape == (10, 14, 3) and v.dtype == np.uint8 and abs(int(v.mean()) - 150) <= 2
    d = ds.describe()
    assert d["pairs"] == 3 and d["skipped_no_label"] == 1 and d["entailment"] == 1
    assert len(build("snli-ve", root=root, n=1)) == 1
    raises(r"no split 'val'; splits: test, dev, train", "snli-ve", root=root, split="val")
    msg = raises(r"missing .*snli_ve_dev\.jsonl", "snli-ve", root=root, split="dev")
    assert "necla-ml/SNLI-VE" in msg
    jsonl(root / "snli_ve_dev.jsonl", [{"Flikr30kID": "100.jpg", "gold_label": "neutral"}])
    raises(r"snli_ve_dev\.jsonl line 1 has no field 'sentence2'", "snli-ve", root=root, split="dev")
    jsonl(root / "snli_ve_dev.jsonl", [{"Flikr30kID": "100.jpg", "sentence2": "x", "gold_label": "maybe"}])
    raises(r"gold_label 'maybe' is not one of entailment, neutral, contradiction", "snli-ve", root=root, split="dev")
    jsonl(root / "snli_ve_dev.jsonl", [{"image": "100.jpg", "sentence2": "x", "gold_label": "neutral"}])
    raises(r"has no field 'Flikr30kID' / 'Flickr30K_ID'", "snli-ve", root=root, split="dev")
    (root / "snli_ve_dev.jsonl").write_text("[1, 2]\n")
    raises(r"line 1 is a list, not an object", "snli-ve", root=root, split="dev")
    (root / "flickr30k-images" / "200.jpg").unlink()
    with pytest.raises(DatasetError, match=r"200\.jpg' is missing"):
        ds.visual(1)


# ---- NLVR2 -------------------------------------------------------------------------------------------------
def test_nlvr2_pairs_side_by_side(tmp_path):
    root = tmp_path / "nlvr2"
    jsonl(root / "dev.json", [
        {"identifier": "dev-1-0-0", "sentence": "There are two dogs.", "label": "True"},
        {"identifier": "dev-1-0-1", "sentence": "There is one  dog.", "label": "False"},
        {"identifier": "dev-2-3-0", "sentence": "A bird flies.", "label": True}])
    image(root / "dev" / "dev-1-0-img0.png", 60, (20, 30))
    image(root / "dev" / "dev-1-0-img1.png", 200, (40, 20))
    image(root / "dev" / "dev-2-3-img0.png", 10, (8, 8))
    image(root / "dev" / "dev-2-3-img1.png", 20, (8, 8))
    ds = build("nlvr2", root=root, split="dev")
    assert len(ds) == 2 and ds.tasks == ("reasoning",) and ds.texts() == []
    qs = ds.item(0).questions
    assert [(q.question, q.answer, q.qtype) for q in qs] == [("There are two dogs.", "true", "reasoning"),
                                                             ("There is one dog.", "false", "reasoning")]
    assert qs[1].meta == {"identifier": "dev-1-0-1"} and ds.item(1).questions[0].answer == "true"
    assert ds.item(0).meta["paths"] == ["dev/dev-1-0-img0.png", "dev/dev-1-0-img1.png"]
    v = ds.visual(0)  # both at the smaller height (20): 30 + 10 px wide
    assert v.shape == (20, 40, 3) and v.dtype == np.uint8
    assert abs(int(v[:, :30].mean()) - 60) <= 2 and abs(int(v[:, 30:].mean()) - 200) <= 2
    left, right = ds.visual_pair(0)
    assert left.shape == (20, 30, 3) and right.shape == (40, 20, 3)
    assert ds.pair_layout(0) == {"height": 20, "left_width": 30, "right_width": 10, "gap": 0, "width": 40}
    gapped = build("nlvr2", root=root, split="dev", gap=4, height=40)
    g = gapped.visual(0)
    assert g.shape == (40, 60 + 4 + 20, 3) and (g[:, 60:64] == 255).all()
    a, b = gapped.split_visual(0, g)
    assert a.shape == (40, 60, 3) and b.shape == (40, 20, 3)
    d = ds.describe()
    assert d["sentences"] == 3 and d["true"] == 2 and d["false"] == 1
    # train images sit in train/<directory>/
    jsonl(root / "train.json", [{"identifier": "train-5-1-0", "sentence": "s", "label": "False", "directory": 7}])
    image(root / "train" / "7" / "train-5-1-img0.png", 1, (8, 8))
    image(root / "train" / "7" / "train-5-1-img1.png", 1, (8, 8))
    assert build("nlvr2", root=root, split="train").visual(0).shape == (8, 16, 3)


def test_nlvr2_failures(tmp_path):
    root = tmp_path / "nlvr2"
    root.mkdir()
    msg = raises(r"missing .*test1\.json", "nlvr2", root=root)
    assert "lil-lab/nlvr" in msg
    raises(r"no split 'test2'; splits: test1, dev, train", "nlvr2", root=root, split="test2")
    jsonl(root / "test1.json", [{"identifier": "test1-0-0-0", "sentence": "s", "label": "maybe"}])
    raises(r"label 'maybe' is not True or False", "nlvr2", root=root)
    jsonl(root / "test1.json", [{"id": "test1-0-0-0", "sentence": "s", "label": "True"}])
    raises(r"line 1 has no field 'identifier'", "nlvr2", root=root)
    jsonl(root / "test1.json", [{"identifier": "test1-0-0-0", "sentence": "s", "label": "True"}])
    ds = build("nlvr2", root=root)
    with pytest.raises(DatasetError, match=r"test1-0-0-img0\.png' is missing .*on request"):
        ds.visual(0)
    raises(r"gap must be an integer >= 0", "nlvr2", root=root, gap=-1)


# ---- every loader through its task, end to end (rl.datasets.build -> rl.tasks.get(...).evaluate) --------------
@pytest.fixture(scope="module")
def vilt_heads():
    pytest.importorskip("transformers")
    from transformers import ViltConfig

    from robustlab.models.hf_fusion import HFViltModel

    cfg = ViltConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=64,
                     patch_size=16, max_position_embeddings=40, vocab_size=300)
    return {h: HFViltModel.from_config(cfg, head=h, device="cpu") for h in ("ve", "nlvr2")}


def test_tasks_run_on_the_loaders(coco_root, msrvtt_root, tmp_path, tiny_clip, vilt_heads):
    import robustlab as rl
    from robustlab.models import load_model

    # COCO: 5 captions per image (the 6th of image 1 dropped), every caption a query, both directions
    ds = rl.datasets.build("coco", root=coco_root, split="test")
    clean, noisy = rl.tasks.get("retrieval").evaluate(tiny_clip, ds, [None, {"visual": "gaussian_noise:2"}])
    assert clean.n == 2 and clean.extra["texts"] == 10 and set(clean.metrics) == {"t2i", "i2t"}
    assert clean.dataset == "coco" and clean.split == "test" and clean.dataset_params["root"] == str(coco_root)
    assert noisy.conditions["visual"]["name"] == "gaussian_noise"
    # MSRVTT 1k-A layout: text→video with a video model, and a temporal perturbation
    mv = rl.datasets.build("msrvtt", root=msrvtt_root, split="test")
    r = rl.tasks.get("retrieval").evaluate(load_model("builtin:tiny-clip-video-meanp", device="cpu"), mv,
                                           {"visual": "jumble:3"})[0]
    assert r.n == 3 and set(r.metrics) == {"t2v", "v2t"} and 0 <= r.metrics["t2v"]["R@1"] <= 1
    # RefCOCO: every expression grounded once by the built-in fusion model
    root = tmp_path / "refer"
    (root / "refcoco").mkdir(parents=True)
    refs = refer_files(root / "refcoco")
    (root / "refcoco" / "refs(unc).json").write_text(json.dumps(refs))
    refer_images(root / "images" / "mscoco" / "images" / "train2014")
    g = rl.tasks.get("grounding").evaluate(load_model("builtin:tiny-vilt", device="cpu"),
                                           rl.datasets.build("refcoco", root=root, split="val"), {"text": "keyboard:1"})
    assert g[0].extra["expressions"] == 3 and 0 <= g[0].metrics["mean_iou"] <= 1
    # SNLI-VE and NLVR2 through hub fusion heads (random-init: plumbing only)
    sroot = tmp_path / "snli"
    jsonl(sroot / "snli_ve_test.jsonl", [{"Flikr30kID": "100.jpg", "sentence2": "animals move",
                                          "gold_label": "entailment"},
                                         {"Flikr30kID": "100.jpg", "sentence2": "dogs sleep",
                                          "gold_label": "contradiction"}])
    image(sroot / "flickr30k-images" / "100.jpg", 90, (32, 40))
    e = rl.tasks.get("entailment").evaluate(vilt_heads["ve"], rl.datasets.build("snli-ve", root=sroot))[0]
    assert e.extra["hypotheses"] == 2 and sum(v["n"] for v in e.metrics["per_label"].values()) == 2
    nroot = tmp_path / "nlvr2"
    jsonl(nroot / "dev.json", [{"identifier": "dev-1-0-0", "sentence": "two dogs", "label": "True"},
                               {"identifier": "dev-1-0-1", "sentence": "one dog", "label": "False"}])
    image(nroot / "dev" / "dev-1-0-img0.png", 60, (32, 40))
    image(nroot / "dev" / "dev-1-0-img1.png", 200, (40, 32))
    nl = rl.datasets.build("nlvr2", root=nroot, split="dev")
    rr = rl.tasks.get("reasoning").evaluate(vilt_heads["nlvr2"], nl, {"visual": "gaussian_noise:1"})[0]
    assert rr.extra["statements"] == 2 and rr.metrics["acc_true"] is not None and rr.metrics["acc_false"] is not None
    # the wrong task for a dataset is one line
    with pytest.raises(ValueError, match="dataset nlvr2 has nothing for retrieval"):
        rl.tasks.get("retrieval").evaluate(tiny_clip, nl)


def test_cli_eval_on_a_local_dataset(coco_root, capsys):
    from robustlab.cli import main

    assert main(["eval", "retrieval", "--dataset", "coco", "--root", str(coco_root), "--split", "test",
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["dataset"] == "coco" and res["n"] == 2
    assert main(["eval", "retrieval", "--dataset", "coco", "--root", str(coco_root / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert "nope" in err and "\n" not in err
    assert main(["hubness", "--dataset", "coco", "--root", str(coco_root), "--k", "1", "--direction", "i2t",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gallery"] == "captions"
