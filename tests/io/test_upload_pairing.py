"""Issue 24, "Uploads pair by name": captions go to the file they belong to, never to a neighbour.

One rule (``robustlab.io.files.pair_captions``) for the dashboard's uploads (``ingest_uploads``), captions attached
to a gallery (``set_captions``) and a folder's captions file (``from_folder``):

* captions that name their files (CSV/TSV file column, JSON, ``name.png, caption`` lines) go by name;
* plain lines go by position over the files as given (a refused file takes its own caption with it), and only when
  there are exactly as many lines as files: else one line asks for named captions and nothing is added;
* every message names the file by its name, never an object's repr (``<_io.BytesIO object at 0x…>``).
"""
import io
import json

import numpy as np
import pytest
from PIL import Image, ImageDraw

from robustlab.datasets import build
from robustlab.datasets.base import DatasetError
from robustlab.datasets.uploads import (
    IMAGE_SUFFIXES,
    VIDEO_SUFFIXES,
    ingest_uploads,
    set_captions,
)
from robustlab.io.files import (
    MEDIA_SUFFIXES,
    InputError,
    load_image,
    pair_captions,
    parse_captions,
)

FAKE = b"this is not a picture, just some text in a file called fake_photo.png\n"
RED = "a large red circle on a gray background"
COUNTS = "when the counts differ"


def png(color=(200, 30, 30), size=48, circle=True) -> bytes:
    im = Image.new("RGB", (size, size), (128, 128, 128))
    if circle:
        ImageDraw.Draw(im).ellipse((6, 6, size - 6, size - 6), fill=color)
    b = io.BytesIO()
    im.save(b, format="PNG")
    return b.getvalue()


def lines_of(rep) -> list[str]:
    return rep.errors + rep.warnings


def no_repr(messages):
    for m in messages:
        assert "object at 0x" not in m and "BytesIO" not in m and "<none>" not in m, m
        assert "\n" not in m, m


# ---- the reviewer's reproduction --------------------------------------------------------------------------------
def test_rejected_upload_keeps_captions_on_their_files():
    """Text bytes called fake_photo.png and a real red_circle.png, with typed captions "a fake" / "a large red circle
    on a gray background": red_circle.png gets its own caption, the error names fake_photo.png, and no message
    shows an object's repr or claims extra captions were ignored."""
    rep = ingest_uploads([("fake_photo.png", FAKE), ("red_circle.png", png())],
                         caption_lines=f"a fake\n{RED}")
    g = rep.gallery
    assert rep.added == 1 and g.names == ["red_circle.png"] and g.captions == [RED]
    assert len(rep.errors) == 1 and rep.errors[0].startswith("fake_photo.png: not an image robustlab can read")
    no_repr(lines_of(rep))
    assert not any("extra captions" in w or "ignored" in w for w in rep.warnings), rep.warnings
    assert rep.warnings == []  # every file given had its own caption


def test_rejected_upload_keeps_captions_on_their_files_in_the_dashboard(monkeypatch):
    """The same through the real "My uploads" form (AppTest drives st.file_uploader), with a third file refused
    before decoding (over the size limit): every caption stays on its own file."""
    from streamlit.testing.v1 import AppTest

    from robustlab.io import files

    monkeypatch.setattr(files, "MAX_UPLOAD_BYTES", 20_000)
    at = AppTest.from_file("../../app.py", default_timeout=300)
    at.session_state["dataset"] = "upload"
    at.session_state["emb_method"] = "pca"
    at.run()
    assert not at.exception, at.exception
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * 30_000
    blue = png((30, 30, 200))
    at.file_uploader(key="up_images").set_value([("fake_photo.png", FAKE, "image/png"),
                                                 ("huge.png", big, "image/png"),
                                                 ("red_circle.png", png(), "image/png"),
                                                 ("blue_circle.png", blue, "image/png")])
    at.text_area(key="up_lines").input(f"a fake\na huge one\n{RED}\na blue circle")
    at.button[0].click().run()
    assert not at.exception, at.exception
    g = at.session_state["upload_gallery"]
    assert g.names == ["red_circle.png", "blue_circle.png"] and g.captions == [RED, "a blue circle"]
    errs = [e.value for e in at.error]
    assert [e.split(":")[0] for e in errs] == ["huge.png", "fake_photo.png"], errs
    shown = errs + [w.value for w in at.warning] + [s.value for s in at.success]
    no_repr(shown)
    assert not any("ignored" in m for m in shown), shown
    assert any(s.value == "Added 2 image(s)." for s in at.success)

    # counts that differ: one line asking for named captions, and the gallery stays as it was
    at.file_uploader(key="up_images").set_value([("green.png", png((30, 200, 30)), "image/png")])
    at.text_area(key="up_lines").input("one\ntwo")
    at.button[0].click().run()
    assert not at.exception, at.exception
    errs = [e.value for e in at.error]
    assert errs == [("typed captions: 2 captions for 1 file: name each caption's file (a CSV `file,caption`, JSON "
                    "{file: caption} or lines `file.png, caption`) when the counts differ; nothing was added")], errs
    assert at.session_state["upload_gallery"].names == ["red_circle.png", "blue_circle.png"]

    # named lines: any order, any count
    at.file_uploader(key="up_images").set_value([("green.png", png((30, 200, 30)), "image/png")])
    at.text_area(key="up_lines").input("ghost.png, nobody\ngreen.png, a green circle")
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    g = at.session_state["upload_gallery"]
    assert (g.names[-1] == "green.png" and g.captions[-1] == "a green circle"
            and g.captions[:2] == [RED, "a blue circle"])
    assert [w.value for w in at.warning] == [("typed captions: 1 caption names a file not among the files given, "
                                             "ignored: ghost.png")]


def test_load_errors_name_the_file_never_a_stream():
    with pytest.raises(InputError) as e:
        load_image(FAKE, "fake_photo.png")
    assert str(e.value).startswith("fake_photo.png: ") and "object at" not in str(e.value)
    rep = ingest_uploads([("fake_clip.mp4", FAKE)], kind="video")
    assert rep.errors[0].startswith("fake_clip.mp4: not a video robustlab can read")
    no_repr(rep.errors)


# ---- plain lines: by position over the files given, only when the counts are equal ---------------------------------
@pytest.mark.parametrize("text, n", [("one\ntwo\nthree", 3), ("just one", 1)])
def test_counts_that_differ_add_nothing(text, n):
    first = ingest_uploads([("a.png", png())], caption_lines="the first")
    rep = ingest_uploads([("b.png", png((0, 200, 0))), ("c.png", png((0, 0, 200)))], caption_lines=text,
                         existing=first.gallery)
    assert rep.added == 0 and rep.gallery is first.gallery and rep.gallery.captions == ["the first"]
    assert rep.errors == [(f"typed captions: {n} caption{'s' if n > 1 else ''} for 2 files: name each caption's file "
                          f"(a CSV `file,caption`, JSON {{file: caption}} or lines `file.png, caption`) {COUNTS}; "
                          "nothing was added")]
    assert rep.warnings == []


def test_counts_are_over_the_files_given_before_any_rejection():
    """Three files, one refused (undecodable) in the middle: three lines pair, two would not."""
    files = [("a.png", png()), ("junk.png", b"nope"), ("c.png", png((0, 0, 200)))]
    rep = ingest_uploads(files, caption_lines="A\nJUNK\nC")
    assert rep.gallery.names == ["a.png", "c.png"] and rep.gallery.captions == ["A", "C"]
    rep = ingest_uploads(files, caption_lines="A\nC")  # the old behaviour would have paired these by luck
    assert rep.added == 0 and rep.gallery is None and len(rep.errors) == 1 and COUNTS in rep.errors[0]


def test_files_refused_before_the_call_are_counted_through_given():
    """The dashboard refuses files over the size limit (and files of the other kind) before ``ingest_uploads``:
    ``given`` names every file, so a refused file takes its own caption with it."""
    rep = ingest_uploads([("b.png", png()), ("d.png", png((0, 0, 200)))], caption_lines="A\nB\nC\nD",
                         given=["a.png", "b.png", "c.mp4", "d.png"])
    assert rep.gallery.names == ["b.png", "d.png"] and rep.gallery.captions == ["B", "D"]
    rep = ingest_uploads([("b.png", png())], caption_lines="A\nB", given=["big.png", "b.png", "c.png"])
    assert rep.added == 0 and "2 captions for 3 files" in rep.errors[0]
    with pytest.raises(ValueError, match="given must name every file"):
        ingest_uploads([("x.png", png())], caption_lines="X", given=["y.png"])


# ---- named captions ------------------------------------------------------------------------------------------------
def test_csv_pairs_by_name_with_a_rejected_file():
    csv = f'file,caption\nred_circle.png,"{RED}"\nfake_photo.png,a fake\n'.encode()
    rep = ingest_uploads([("fake_photo.png", FAKE), ("red_circle.png", png()), ("gray.png", png(circle=False))],
                         caption_file=("captions.csv", csv))
    assert rep.gallery.names == ["red_circle.png", "gray.png"] and rep.gallery.captions == [RED, None]
    assert len(rep.errors) == 1 and rep.errors[0].startswith("fake_photo.png: ")
    # the gray square has no caption: a distractor, said in one line; fake_photo.png is given, so not "unknown"
    assert rep.warnings == ["1 item(s) without a caption are used as distractors only: gray.png"]
    no_repr(lines_of(rep))


def test_json_pairs_by_name_with_a_rejected_file():
    js = json.dumps({"red_circle": RED, "fake_photo.png": "a fake", "photos/blue.png": "a blue circle"}).encode()
    rep = ingest_uploads([("blue.png", png((0, 0, 200))), ("fake_photo.png", FAKE), ("red_circle.png", png())],
                         caption_file=("captions.json", js))
    assert rep.gallery.names == ["blue.png", "red_circle.png"] and rep.gallery.captions == ["a blue circle", RED]
    assert [e.split(":")[0] for e in rep.errors] == ["fake_photo.png"] and rep.warnings == []


def test_typed_named_lines_tab_or_comma():
    assert parse_captions(f"red_circle.png\t{RED}\nfake_photo.png, a fake, really", "typed captions") == [
        ("red_circle.png", RED), ("fake_photo.png", "a fake, really")]
    assert parse_captions("file,caption\nx.png,an x\n", "typed captions") == [("x.png", "an x")]
    # a caption that merely contains a comma stays a plain line
    assert parse_captions("a dog, running\na cat", "typed captions") == [(None, "a dog, running"), (None, "a cat")]
    rep = ingest_uploads([("fake_photo.png", FAKE), ("red_circle.png", png())],
                         caption_lines=f"red_circle.png, {RED}")  # one named line for two files: fine
    assert rep.gallery.captions == [RED] and rep.warnings == []


def test_captions_naming_files_not_uploaded_are_one_warning():
    csv = b"file,caption\na.png,an a\nghost.png,a ghost\nother.jpg,another\nghost.png,again\n"
    rep = ingest_uploads([("a.png", png())], caption_file=("c.csv", csv))
    assert rep.gallery.captions == ["an a"] and not rep.errors
    assert rep.warnings == ["c.csv: 2 captions name files not among the files given, ignored: ghost.png, other.jpg"]


def test_names_are_not_guessed_across_extensions():
    # "a.png" never names a.jpg; "a" names both a.png and a.jpg: not guessed
    p = pair_captions(["a.jpg"], [("a.png", "x")])
    assert p.captions == [None] and "not among" in p.warnings[0]
    p = pair_captions(["a.png", "a.jpg", "b.png"], [("a", "x"), ("b", "y")], "c.csv")
    assert p.captions == [None, None, "y"]
    assert p.warnings == [("c.csv: 1 caption names more than one file, ignored (give the full file name): "
                          "'a' (a.png or a.jpg)")]


def test_several_captions_for_one_file_and_unnamed_ones_among_named():
    p = pair_captions(["a.png", "b.png"], [("a.png", "one"), ("a.png", "two"), (None, "loose"), ("b.png", "b")], "c")
    assert p.captions == ["one", "b"]
    assert p.warnings == ["c: 1 file has more than one caption; the first of each is used: a.png",
                          "c: 1 caption without a file name ignored (the others name their files): 'loose'"]


def test_duplicate_names_in_one_upload():
    red, blue = png(), png((0, 0, 200))
    rep = ingest_uploads([("a.png", red), ("b.png", png(circle=False)), ("a.png", blue)],
                         caption_lines="the red one\nthe gray one\nthe blue one")
    assert rep.gallery.names == ["a.png", "b.png"] and rep.gallery.captions == ["the red one", "the gray one"]
    assert np.array_equal(rep.gallery.items_[0], load_image(red))
    assert rep.errors == [("a.png: 2 files of this name in one upload; the first was used, the other not added "
                          "(rename it to add it)")]
    csv = b"file,caption\na.png,an a\n"
    rep = ingest_uploads([("a.png", red)] * 3, caption_file=("c.csv", csv))
    assert rep.added == 1 and rep.gallery.captions == ["an a"]
    assert rep.errors == [("a.png: 3 files of this name in one upload; the first was used, the others not added "
                          "(rename them to add them)")]


def test_no_captions_at_all_is_distractors_as_before():
    rep = ingest_uploads([("a.png", png())])
    assert rep.gallery.captions == [None]
    assert rep.warnings == ["no captions given: the new items are distractors only until captions are added"]


# ---- set_captions and from_folder: the same rules --------------------------------------------------------------------
def _gallery():
    rep = ingest_uploads([("a.png", png()), ("b.png", png((0, 200, 0))), ("c.png", png((0, 0, 200)))])
    assert rep.gallery.captions == [None, None, None]
    return rep.gallery


def test_set_captions_plain_lines_only_when_counts_match():
    g = _gallery()
    rep = set_captions(g, caption_lines="A\nB")
    assert rep.gallery is g and rep.errors == [
        ("typed captions: 2 captions for 3 gallery items: name each caption's file (a CSV `file,caption`, JSON "
        "{file: caption} or lines `file.png, caption`) when the counts differ; no caption was changed")]
    rep = set_captions(g, caption_lines="A\nB\nC")
    assert rep.gallery.captions == ["A", "B", "C"] and not rep.errors and not rep.warnings


def test_set_captions_by_name_keeps_the_others():
    g = set_captions(_gallery(), caption_lines="A\nB\nC").gallery
    rep = set_captions(g, caption_file=("c.json", json.dumps({"c.png": "new C", "zzz.png": "?"}).encode()))
    assert rep.gallery.captions == ["A", "B", "new C"]
    assert rep.warnings == ["c.json: 1 caption names a file not among the gallery's items, ignored: zzz.png"]
    rep = set_captions(g, caption_lines="b.png, new B")
    assert rep.gallery.captions == ["A", "new B", "C"] and not rep.warnings


def _folder(tmp_path, names, captions=None, capname="captions.txt"):
    colors = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200), "white": (250, 250, 250)}
    for n in names:
        (tmp_path / n).write_bytes(FAKE if n.startswith("fake") else png(colors.get(n.split(".")[0], (9, 9, 9))))
    if captions is not None:
        (tmp_path / capname).write_text(captions)
    return tmp_path


def test_folder_plain_lines_in_sorted_order_only_when_counts_match(tmp_path):
    root = _folder(tmp_path, ["red.png", "blue.png", "fake_photo.png", "green.png"],
                   "a blue circle\na fake\na green circle\na red circle\n")  # sorted: blue, fake, green, red
    g = build("upload", root=root)
    assert g.names == ["blue.png", "green.png", "red.png"]
    assert g.captions == ["a blue circle", "a green circle", "a red circle"]
    assert len(g.load_errors) == 1 and g.load_errors[0].startswith("fake_photo.png: ")
    no_repr(g.load_errors)
    g = build("upload", root=root, n=2)  # the first 2 files; the captions still pair over all 4
    assert g.names == ["blue.png"] and g.captions == ["a blue circle"]
    (root / "captions.txt").write_text("a blue circle\na green circle\na red circle\n")
    with pytest.raises(DatasetError) as e:
        build("upload", root=root)
    assert str(e.value) == ("upload: captions.txt: 3 captions for 4 image files: name each caption's file (a CSV "
                            "`file,caption`, JSON {file: caption} or lines `file.png, caption`) when the counts differ")


def test_folder_named_captions(tmp_path):
    root = _folder(tmp_path, ["red.png", "blue.png", "fake_photo.png"],
                   "file,caption\nred.png,a red circle\nfake_photo.png,a fake\nmissing.png,gone\n", "captions.csv")
    g = build("upload", root=root)
    assert g.names == ["blue.png", "red.png"] and g.captions == [None, "a red circle"]
    (root / "captions.csv").unlink()
    (root / "captions.txt").write_text("red.png, a red circle\nblue.png\ta blue circle\n")
    g = build("upload", root=root)
    assert g.captions == ["a blue circle", "a red circle"]


def test_media_suffixes_agree_with_the_upload_kinds():
    assert set(MEDIA_SUFFIXES) == set(IMAGE_SUFFIXES + VIDEO_SUFFIXES)
