"""Issue 23 in a real browser: a viewer reaches only the folders the operator allows.

The server runs with one data root holding a dataset, a symlink to a folder outside it and a dataset whose
captions file is a symlink to a planted secret. A viewer sees only the datasets inside the root in the picker;
typing the symlink, a path climbing out, an absolute path outside and a missing path gives the same one line;
the planted secret never appears in the page, whatever is tried.
"""
import numpy as np
import pytest
from PIL import Image

from browser_helpers import choose_radio, open_app, settle
from conftest import run_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SECRET = "TOP-SECRET-CAPTION-4242"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("sec")
    root, outside = base / "data", base / "outside"
    for d in (root / "shapes", root / "linked", outside):
        d.mkdir(parents=True)
    for i in range(3):
        for d in (root / "shapes", root / "linked", outside):
            Image.fromarray(np.full((32, 32, 3), 60 * i, np.uint8)).save(d / f"img{i}.png")
    (root / "shapes" / "captions.txt").write_text("a dark square\na grey square\na light square\n")
    (outside / "captions.txt").write_text(f"{SECRET}\n" * 3)
    (root / "leak").symlink_to(outside, target_is_directory=True)
    (root / "linked" / "captions.txt").symlink_to(outside / "captions.txt")
    return root, outside


@pytest.fixture(scope="module")
def roots_server(tmp_path_factory, tree):
    yield from run_server(tmp_path_factory, env={"ROBUSTLAB_DATA_ROOTS": str(tree[0])})


def _select(page, key: str, option: str):
    settle(page)
    page.locator(f".st-key-{key}").click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def _type(page, key: str, text: str):
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")
    settle(page)


def test_only_the_roots_are_reachable_and_outside_reads_like_missing(roots_server, browser, tree):
    root, outside = tree
    page = open_app(browser, roots_server, 1400, 1600, 180_000)
    sidebar = page.locator('[data-testid="stSidebar"]')
    choose_radio(page, "Local folder", scope=sidebar)
    pick = page.locator(".st-key-folder_pick")
    pick.wait_for()
    pick.click()
    options = [o.strip() for o in page.get_by_role("option").all_inner_texts()]
    page.keyboard.press("Escape")
    assert options == [f"upload · {root.name}/linked", f"upload · {root.name}/shapes",
                       "another folder under a data root…"], options  # no "leak": it resolves outside the root

    # a dataset whose captions file points outside: its images are shown, the secret never
    _select(page, "folder_pick", f"upload · {root.name}/linked")
    page.get_by_text("no image in the dataset has a caption").wait_for()  # its captions file reads as missing
    assert SECRET not in page.content()

    # typed folders: a symlink out, climbing out, absolute outside, missing -> one and the same line
    _select(page, "folder_pick", "another folder under a data root…")
    lines = {}
    for typed in ("leak", "../outside", str(outside), "no/such/folder"):
        _type(page, "folder_sub", typed)
        err = page.locator('[data-testid="stAlertContentError"]').filter(has_text="may open")
        err.first.wait_for()
        text = err.first.inner_text()
        lines[typed] = text.replace(typed, "<typed>")
        html = page.content()
        assert SECRET not in html and "img0.png" not in html, typed
    assert len(set(lines.values())) == 1, lines
    assert page.locator('[data-testid="stException"]').count() == 0

    # and a folder inside the root, typed, works
    _select(page, "folder_fmt", "upload")
    _type(page, "folder_sub", "shapes")
    page.get_by_text("Ground-truth rank, clean").first.wait_for()
    assert SECRET not in page.content()
