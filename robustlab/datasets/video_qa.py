"""Video question answering on local copies: MSRVTT-QA, ActivityNet-QA and NeXT-QA (the QUAG paper's Table 1).

    build("msrvtt-qa", root="~/data/msrvtt", split="test")          # 72,821 questions on 2,990 videos
    build("activitynet-qa", root="~/data/activitynet", split="test")  # 8,000 questions on 800 videos
    build("next-qa", root="~/data/nextqa", split="val")              # 4,996 five-way multiple-choice questions

An item is a video, in the order its first question appears, with all its questions (:class:`~robustlab.datasets.
base.QA`: the question, the answer, a type for per-type accuracy, and the ids in ``meta``); the ``vqa`` task asks
every one. Answers and questions are whitespace-normalised; the task compares answers lower-cased.

- **MSRVTT-QA** (Xu et al., ACM MM 2017): ``{train,val,test}_qa.json``, a list of ``{"question", "answer",
  "video_id": 7010, "id", "category_id"}``; the videos are MSR-VTT's ``video<video_id>.mp4`` (``videos/all/``,
  ``videos/``, ``video/`` or anywhere under the folder). Type: ``color`` when the question says "color", else its
  first word when it is what / who / how / where / when (Just Ask's five-plus-one types), else ``other``.
- **ActivityNet-QA** (Yu et al., AAAI 2019; https://github.com/MILVLG/activitynet-qa, ``dataset/``):
  ``{split}_q.json`` (``{"video_name", "question", "question_id"}``) joined with ``{split}_a.json``
  (``{"answer", "type", "question_id"}``) on ``question_id``; type 0–8 is motion, spatial, temporal, yes/no,
  color, object, location, number, other. Videos: ``v_<video_name>.mp4`` (or ``.mkv`` / ``.webm``, or without
  ``v_``) under the folder.
- **NeXT-QA** (Xiao et al., CVPR 2021; https://github.com/doc-doc/NExT-QA): the multiple-choice
  ``{train,val,test}.csv`` (``video, frame_count, width, height, question, answer, qid, type, a0..a4``;
  ``answer`` is the index of the right option) and ``map_vid_vidorID.json`` (``video -> "<dir>/<video>"``: the
  file ``NExTVideo/<dir>/<video>.mp4``; without the map, ``<video>.mp4`` is looked for anywhere under the folder).
  A question's answer is **the text of its right option**; the five options are in ``QA.meta["choices"]`` and
  the right one's index in ``meta["answer_index"]``, so the ``vqa`` task scores it as the paper does, a five-way
  choice (chance 20 %; how a model's answer picks an option: :mod:`robustlab.tasks.vqa`). Type:
  the question's group — ``causal`` (CW, CH), ``temporal`` (TN, TC, TP) or ``descriptive`` (DL, DC, DO) — with
  the code itself in ``meta["type"]``.
"""
from __future__ import annotations

from pathlib import Path

from robustlab.datasets._local import find_file, need, need_int, read_csv, read_json
from robustlab.datasets._videos import VideoFileDataset, clean
from robustlab.datasets.activitynet import video_names
from robustlab.datasets.base import QA, DatasetError
from robustlab.datasets.registry import register_dataset
from robustlab.io.confined import is_file, shown_path, visible

SPLITS = ("test", "val", "train")


class VideoQADataset(VideoFileDataset):
    """Videos with their questions: ``_group`` turns one row per question into one record per video."""

    @staticmethod
    def _group(rows: list[tuple[str, dict, QA]]) -> list[dict]:
        """``(video id, its record's other fields, one question)`` rows -> one record per video, in the order of
        their first question."""
        out: list[dict] = []
        at: dict[str, int] = {}
        for vid, fields, qa in rows:
            if vid not in at:
                at[vid] = len(out)
                out.append({"id": vid, **fields, "questions": []})
            out[at[vid]]["questions"].append(qa)
        return out

    def describe(self) -> dict:
        return {**super().describe(), "questions": sum(len(r["questions"]) for r in self.records)}


# ---- MSRVTT-QA ---------------------------------------------------------------------------------------------
MSRVTT_QA_DIRS = ("", "MSRVTT-QA", "msrvtt_qa", "annotations")
MSRVTT_QA_GET = "it is in MSRVTT-QA (https://github.com/xudejing/video-question-answering)"
MSRVTT_QA_FORMAT = "a list of {question, answer, video_id, id}"
MSRVTT_VIDEOS_GET = ("the videos are MSR-VTT's MSRVTT.zip, e.g. from https://www.robots.ox.ac.uk/~maxbain/"
                     "frozen-in-time/data/MSRVTT.zip; or pass skip_missing=True")
WH_WORDS = ("what", "who", "how", "where", "when")


def msrvtt_qa_type(question: str) -> str:
    """Just Ask's MSRVTT-QA question type: ``color`` when the question says "color", else its first word when it is
    a wh-word (what, who, how, where, when), else ``other``."""
    q = question.lower()
    if "color" in q:
        return "color"
    first = q.split(" ", 1)[0]
    return first if first in WH_WORDS else "other"


@register_dataset("msrvtt-qa", kind="video", tasks=("vqa",), splits=SPLITS,
                  description="MSRVTT-QA open-ended video question answering (per-type accuracy: what, who, how, "
                              "where, when, color)",
                  needs="{train,val,test}_qa.json from MSRVTT-QA and MSR-VTT's videos as video<video_id>.mp4 "
                        "(videos/all/, videos/ or anywhere under the folder)",
                  markers=tuple(f"{d}/{s}_qa.json".lstrip("/") for d in MSRVTT_QA_DIRS for s in SPLITS),
                  paper="Xu et al., Video Question Answering via Gradually Refined Attention (ACM MM 2017); used by "
                        "QUAG (Rawal et al., 2024, Table 1)")
class MSRVTTQA(VideoQADataset):
    videos_get = MSRVTT_VIDEOS_GET
    videos_expected = "video<video_id>.mp4"

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        self.ann_file = find_file(self.root, (f"{split}_qa.json",), MSRVTT_QA_DIRS, ann_file, who=who,
                                  get=MSRVTT_QA_GET)
        data = read_json(self.ann_file, who)
        where = self.ann_file.name
        if not isinstance(data, list):
            raise DatasetError(f"{who}: {shown_path(self.ann_file)!r} is a {type(data).__name__}, not a list "
                               f"(expected {MSRVTT_QA_FORMAT})")
        rows = []
        for k, r in enumerate(data):
            at = f"{where}[{k}]"
            v = str(need(r, "video_id", at, who, MSRVTT_QA_FORMAT)).strip()
            vid = f"video{v}" if v.isdigit() else v  # 7010 (the release) or "video7010"
            q = clean(need(r, "question", at, who, MSRVTT_QA_FORMAT))
            a = clean(need(r, "answer", at, who, MSRVTT_QA_FORMAT))
            meta = {"id": r.get("id", k), **({"category_id": r["category_id"]} if "category_id" in r else {})}
            files = [self.root / d / f"{vid}.mp4" for d in ("videos/all", "videos", "video")]
            rows.append((vid, {"names": [vid], "files": files}, QA(q, a, msrvtt_qa_type(q), meta)))
        return self._group(rows)


# ---- ActivityNet-QA ----------------------------------------------------------------------------------------
ANET_QA_DIRS = ("", "dataset", "activitynet-qa", "annotations")
ANET_QA_GET = "it is in https://github.com/MILVLG/activitynet-qa (dataset/)"
ANET_Q_FORMAT = "{split}_q.json: a list of {video_name, question, question_id}"
ANET_A_FORMAT = "{split}_a.json: a list of {answer, type, question_id}"
ANET_QA_TYPES = ("motion", "spatial", "temporal", "yes/no", "color", "object", "location", "number", "other")
ANET_VIDEOS_GET = "the ActivityNet videos (http://activity-net.org/download.html), or pass skip_missing=True"


@register_dataset("activitynet-qa", kind="video", tasks=("vqa",), splits=SPLITS,
                  description="ActivityNet-QA open-ended video question answering (per-type accuracy: motion, "
                              "spatial, temporal, yes/no, color, object, location, number, other)",
                  needs="{split}_q.json and {split}_a.json from MILVLG/activitynet-qa (dataset/) and the videos as "
                        "v_<video_name>.mp4 (or .mkv / .webm) under the folder",
                  markers=tuple(f"{d}/{s}_q.json".lstrip("/") for d in ANET_QA_DIRS for s in SPLITS),
                  paper="Yu et al., ActivityNet-QA (AAAI 2019); used by QUAG (Rawal et al., 2024, Table 1)")
class ActivityNetQA(VideoQADataset):
    videos_get = ANET_VIDEOS_GET
    videos_expected = "v_<video_name>.mp4 / .mkv / .webm"

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        self.ann_file = find_file(self.root, (f"{split}_q.json",), ANET_QA_DIRS, ann_file, who=who, get=ANET_QA_GET)
        self.answers_file = self.ann_file.with_name(f"{split}_a.json")  # the release keeps them side by side
        if not is_file(self.answers_file) or not visible(self.answers_file):
            raise DatasetError(f"{who}: missing {shown_path(self.answers_file)!r} beside {self.ann_file.name}; "
                               f"{ANET_QA_GET}")
        questions, answers = self._list(self.ann_file), self._list(self.answers_file)
        by_id: dict[str, dict] = {}
        for k, a in enumerate(answers):
            at = f"{self.answers_file.name}[{k}]"
            qid = str(need(a, "question_id", at, who, ANET_A_FORMAT))
            t = need_int(a, "type", at, who, ANET_A_FORMAT)
            if not 0 <= t < len(ANET_QA_TYPES):
                raise DatasetError(f"{who}: {at}['type'] is {t}, not 0..{len(ANET_QA_TYPES) - 1} "
                                   f"({', '.join(ANET_QA_TYPES)})")
            by_id[qid] = {"answer": clean(need(a, "answer", at, who, ANET_A_FORMAT)), "type": ANET_QA_TYPES[t]}
        rows = []
        for k, q in enumerate(questions):
            at = f"{self.ann_file.name}[{k}]"
            qid = str(need(q, "question_id", at, who, ANET_Q_FORMAT))
            name = str(need(q, "video_name", at, who, ANET_Q_FORMAT)).strip()
            if qid not in by_id:
                raise DatasetError(f"{who}: question {qid!r} of {self.ann_file.name} has no answer in "
                                   f"{self.answers_file.name}")
            a = by_id[qid]
            qa = QA(clean(need(q, "question", at, who, ANET_Q_FORMAT)), a["answer"], a["type"], {"question_id": qid})
            rows.append((name, {"names": video_names(name)}, qa))
        return self._group(rows)

    def _list(self, path: Path) -> list:
        data = read_json(path, self.name)
        if not isinstance(data, list):
            raise DatasetError(f"{self.name}: {shown_path(path)!r} is a {type(data).__name__}, not a list "
                               f"(expected {ANET_Q_FORMAT if path.name.endswith('_q.json') else ANET_A_FORMAT})")
        return data


# ---- NeXT-QA -----------------------------------------------------------------------------------------------
NEXT_QA_DIRS = ("", "nextqa", "dataset/nextqa", "annotations")
NEXT_QA_GET = "it is in https://github.com/doc-doc/NExT-QA (dataset/nextqa/)"
NEXT_QA_MAP = "map_vid_vidorID.json"
NEXT_QA_COLUMNS = ("video", "question", "answer", "qid", "type", "a0", "a1", "a2", "a3", "a4")
NEXT_QA_GROUPS = {"C": "causal", "T": "temporal", "D": "descriptive"}
NEXT_VIDEOS_GET = "NExTVideo from https://github.com/doc-doc/NExT-QA, or pass skip_missing=True"


@register_dataset("next-qa", kind="video", tasks=("vqa",), splits=("val", "test", "train"),
                  description="NeXT-QA five-way multiple-choice video QA (the options in meta, scored as a "
                              "choice by the vqa task; per-type accuracy: causal, temporal, descriptive)",
                  needs="{train,val,test}.csv (video, question, answer, qid, type, a0..a4) and map_vid_vidorID.json "
                        "from doc-doc/NExT-QA, and the videos as NExTVideo/<dir>/<video>.mp4",
                  markers=tuple(f"{d}/{NEXT_QA_MAP}".lstrip("/") for d in NEXT_QA_DIRS),
                  paper="Xiao et al., NExT-QA (CVPR 2021); used by QUAG (Rawal et al., 2024, Table 1)")
class NextQA(VideoQADataset):
    videos_get = NEXT_VIDEOS_GET
    videos_expected = "NExTVideo/<dir>/<video>.mp4"

    def _records(self, split: str, ann_file) -> list[dict]:
        who = self.name
        self.ann_file = find_file(self.root, (f"{split}.csv",), NEXT_QA_DIRS, ann_file, who=who, get=NEXT_QA_GET)
        mapped = self.ann_file.parent / NEXT_QA_MAP
        self.map_file = mapped if is_file(mapped) and visible(mapped) else None
        vidor = read_json(mapped, who) if self.map_file else {}
        if not isinstance(vidor, dict):
            raise DatasetError(f"{who}: {shown_path(mapped)!r} is not {{video: \"<dir>/<video>\"}}")
        rows = []
        for ln, r in enumerate(read_csv(self.ann_file, NEXT_QA_COLUMNS, who), start=2):
            at = f"{shown_path(self.ann_file)!r} line {ln}"
            vid = (r.get("video") or "").strip()
            choices = [clean(r.get(f"a{j}") or "") for j in range(5)]
            try:
                right = int((r.get("answer") or "").strip())
            except ValueError:
                right = -1
            if not vid or not 0 <= right < 5 or not choices[right]:
                raise DatasetError(f"{who}: {at}: expected a video, and an answer 0..4 naming a non-empty option "
                                   f"(got video {vid!r}, answer {r.get('answer')!r})")
            code = (r.get("type") or "").strip()
            meta = {"qid": (r.get("qid") or "").strip(), "type": code, "choices": choices, "answer_index": right}
            rel_path = str(vidor.get(vid, "")).strip()
            files = [self.root / d / f"{rel_path}.mp4" for d in ("NExTVideo", "videos", "")] if rel_path else []
            qa = QA(clean(r.get("question") or ""), choices[right], NEXT_QA_GROUPS.get(code[:1], code or "all"), meta)
            rows.append((vid, {"names": [vid], "files": files, "meta": {"vidorID": rel_path} if rel_path else {}},
                         qa))
        return self._group(rows)


__all__ = ["MSRVTTQA", "ActivityNetQA", "NextQA", "VideoQADataset", "msrvtt_qa_type", "ANET_QA_TYPES",
           "NEXT_QA_GROUPS", "SPLITS"]
