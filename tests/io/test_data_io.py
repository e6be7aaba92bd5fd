"""Bad input gets a clear message, never a traceback, and loses nothing."""
import io
import json
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from robustlab.datasets.synthetic.datasets import builtin_gallery
from robustlab.datasets.uploads import ingest_uploads, set_captions
from robustlab.io.files import InputError, clean_caption, load_image, match_captions, parse_captions


def png_bytes(arr, mode=None):
    b = io.BytesIO()
    Image.fromarray(arr, mode=mode).save(b, format="PNG") if mode else Image.fromarray(arr).save(b, format="PNG")
    return b.getvalue()


def bomb_png(w=30000, h=30000):
    """A tiny PNG file whose header claims w×h pixels (a decompression bomb)."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    raw = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def test_load_valid_images_of_every_kind():
    rgb = np.random.default_rng(0).integers(0, 255, (5, 7, 3), dtype=np.uint8)
    assert np.array_equal(load_image(png_bytes(rgb)), rgb)
    gray = load_image(png_bytes(np.full((4, 4), 100, np.uint8)))
    assert gray.shape == (4, 4, 3) and (gray == 100).all()
    rgba = np.zeros((3, 3, 4), np.uint8)
    rgba[..., 0] = 255
    rgba[..., 3] = 255
    assert (load_image(png_bytes(rgba))[..., 0] == 255).all()
    one = load_image(png_bytes(np.zeros((1, 1, 3), np.uint8)))
    assert one.shape == (1, 1, 3)
    im16 = Image.fromarray(np.full((4, 4), 65535, np.uint16))
    b = io.BytesIO()
    im16.save(b, format="PNG")
    out = load_image(b.getvalue())
    assert out.shape == (4, 4, 3) and out.dtype == np.uint8 and out.max() == 255


@pytest.mark.parametrize("data,needle", [
    (b"", "empty"),
    (b"this is not an image at all", "not an image"),
    (b"%PDF-1.4 fake", "not an image"),
])
def test_non_images_get_a_message(data, needle):
    with pytest.raises(InputError, match=needle):
        load_image(data, "x.png")


def test_corrupt_png_gets_a_message():
    good = png_bytes(np.random.default_rng(1).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    with pytest.raises(InputError, match="corrupt|not an image"):
        load_image(good[: len(good) // 2], "half.png")


def test_decompression_bomb_is_refused_before_decoding():
    with pytest.raises(InputError, match="megapixel limit"):
        load_image(bomb_png(), "bomb.png")


def test_captions_text_csv_json():
    assert parse_captions(b"a red circle\n\n  a blue  square \n", "c.txt") == [(None, "a red circle"),
                                                                             (None, "a blue square")]
    csv = "image,caption\nx.png,a cat\ny.png,a dog\n".encode()
    assert parse_captions(csv, "c.csv") == [("x.png", "a cat"), ("y.png", "a dog")]
    js = json.dumps([{"image": "x.png", "caption": ["one", "two"]}, {"file_name": "y.png", "text": "three"}])
    assert parse_captions(js.encode(), "c.json") == [("x.png", "one"), ("x.png", "two"), ("y.png", "three")]
    assert parse_captions(json.dumps({"a.png": "hello"}), "m.json") == [("a.png", "hello")]
    assert parse_captions(json.dumps(["p", "q"]), "l.json") == [(None, "p"), (None, "q")]


@pytest.mark.parametrize("data,name,needle", [
    ("caption\xe9".encode("latin-1"), "c.txt", "not UTF-8"),
    (b"image,label\nx.png,cat\n", "c.csv", "missing a caption column"),
    (b"image,caption\nx.png,\n", "c.csv", "empty caption"),
    (b"{not json", "c.json", "not valid JSON"),
    (b"[1, 2]", "c.json", "expected a string or an object"),
    (b"\n  \n", "c.txt", "no captions"),
    (b"[]", "c.json", "no captions"),
])
def test_bad_caption_files(data, name, needle):
    with pytest.raises(InputError, match=needle):
        parse_captions(data, name)


def test_clean_caption_rules():
    assert clean_caption("  a \n b\t c ") == "a b c"
    with pytest.raises(InputError, match="empty"):
        clean_caption("   ")
    with pytest.raises(InputError, match="must be text"):
        clean_caption(3)
    with pytest.raises(InputError, match="characters"):
        clean_caption("x" * 5000)


def test_match_by_name_or_order():
    assert match_captions(["a.png", "b.jpg"], [("b", "B"), ("a.png", "A")]) == ["A", "B"]
    assert match_captions(["a.png", "b.jpg", "c.png"], [(None, "1"), (None, "2"), (None, "3")]) == ["1", "2", "3"]
    # plain lines pair by position only when there are exactly as many as images (issue 24): none is guessed
    assert match_captions(["a.png", "b.jpg", "c.png"], [(None, "1"), (None, "2")]) == [None, None, None]


def test_ingest_keeps_good_items_and_reports_bad_ones():
    rng = np.random.default_rng(2)
    good1 = png_bytes(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
    good2 = png_bytes(rng.integers(0, 255, (9, 6, 3), dtype=np.uint8))
    rep = ingest_uploads([("a.png", good1), ("junk.png", b"nope"), ("bomb.png", bomb_png())],
                         caption_lines="first caption\nthe junk one\nthe bomb")  # one line per file given (issue 24)
    assert rep.added == 1 and len(rep.errors) == 2
    assert any("junk.png" in e for e in rep.errors) and any("bomb.png" in e for e in rep.errors)
    g = rep.gallery
    assert g.captions == ["first caption"] and g.names == ["a.png"]
    # a second upload with a broken caption file keeps everything already loaded
    rep2 = ingest_uploads([("b.png", good2)], caption_file=("c.csv", b"image,label\nb.png,x\n"), existing=g)
    assert len(rep2.errors) == 1 and rep2.gallery.names == ["a.png", "b.png"]
    assert rep2.gallery.captions == ["first caption", None]
    assert g.names == ["a.png"]  # the earlier gallery object is untouched
    # captions can be attached afterwards, by name
    rep3 = set_captions(rep2.gallery, caption_file=("c.csv", b"image,caption\nb.png,the second one\n"))
    assert rep3.gallery.captions == ["first caption", "the second one"]
    # a bad caption file leaves the gallery as it was
    rep4 = set_captions(rep3.gallery, caption_file=("c.txt", b"\xff\xfe\xfa"))
    assert rep4.errors and rep4.gallery is rep3.gallery
    # the same file twice is not added twice
    rep5 = ingest_uploads([("a.png", good1)], existing=rep3.gallery)
    assert rep5.added == 0 and rep5.warnings


def test_builtin_gallery_is_cached_and_identical(tmp_path):
    g1 = builtin_gallery(12, cache_dir=tmp_path)
    assert not list(tmp_path.glob("*.npz"))  # lazy: nothing is rendered until a visual is asked for
    g1.images
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1
    g2 = builtin_gallery(12, cache_dir=tmp_path)
    assert all(np.array_equal(a, b) for a, b in zip(g1.images, g2.images))
    assert g1.captions == g2.captions and len(g1) == 12
    files[0].write_bytes(b"garbage")  # a corrupt cache file is regenerated, not fatal
    g3 = builtin_gallery(12, cache_dir=tmp_path)
    assert all(np.array_equal(a, b) for a, b in zip(g1.images, g3.images))


def test_png_signature_with_garbage_is_a_clean_message():
    with pytest.raises(InputError) as e:
        load_image(b"\x89PNG\r\n\x1a\n garbage after the signature", "sig.png")
    assert "sig.png" in str(e.value) and "UnboundLocalError" not in str(e.value)
