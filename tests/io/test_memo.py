"""robustlab.io.memo: what an object holds, and a memo bounded in bytes (issue 44, finding 2)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from robustlab.io.memo import ByteLRU, nbytes_of

MB = 1 << 20


def test_nbytes_counts_each_buffer_once_and_walks_objects():
    a = np.zeros((1000, 1000), np.float32)
    assert 4_000_000 <= nbytes_of(a) < 4_001_000
    assert nbytes_of([a, a, a[:10], a.T]) < 4_002_000  # views and repeats of one buffer: counted once
    net = torch.nn.Sequential(torch.nn.Linear(1000, 1000), torch.nn.Linear(1000, 10))
    params = sum(p.numel() * 4 for p in net.parameters())
    assert params <= nbytes_of(net) < params + 10_000

    class Holder:
        def __init__(self):
            self.model = net
            self.gallery = [np.ones((64, 64, 3), np.uint8) for _ in range(100)]
            self.memo = {"clean": torch.zeros(100, 512)}
            self.log = __import__("logging").getLogger("x")  # shared objects are not counted
            self.np = np

    h = Holder()
    want = params + 100 * 64 * 64 * 3 + 100 * 512 * 4
    assert want <= nbytes_of(h) < want * 1.05


def test_lru_keeps_the_budget_evicts_the_least_recently_used_and_never_keeps_a_huge_entry():
    evicted = []
    lru = ByteLRU(10 * MB, on_evict=lambda k, n: evicted.append(k))
    assert lru.max_entry == 10 * MB // 4
    for k in "abcd":
        lru.put(k, np.zeros(2 * MB, np.uint8))
    assert lru.get("a") is not None  # a is now the most recently used
    lru.put("e", np.zeros(2 * MB, np.uint8))  # 10 MB + headers: over the budget, b goes
    assert evicted == ["b"] and set(lru.keys()) == {"a", "c", "d", "e"} and lru.nbytes <= lru.budget
    assert lru.put("huge", np.zeros(3 * MB, np.uint8)) is False and "huge" not in lru
    assert set(lru.keys()) == {"a", "c", "d", "e"}  # one huge request flushes nobody
    assert lru.stats["refused"] == 1


def test_a_growing_entry_is_measured_again_and_the_others_make_room():
    lru = ByteLRU(40 * MB)  # entries up to 10 MB
    grows = {"x": np.zeros(MB, np.uint8)}
    lru.put("bench", grows)
    for k in ("a", "b", "c", "d"):
        lru.put(k, np.zeros(8 * MB, np.uint8))
    assert lru.nbytes > 33 * MB and len(lru) == 5
    grows["y"] = np.zeros(8 * MB, np.uint8)  # the bench memoised a condition: 41 MB in all
    assert lru.remeasure("bench") > 9 * MB
    assert "bench" in lru and "a" not in lru and lru.nbytes <= lru.budget  # the oldest other entry made room
    grows["z"] = np.zeros(2 * MB, np.uint8)  # now larger than a quarter: dropped, as a huge entry is
    lru.remeasure("bench")
    assert "bench" not in lru and set(lru.keys()) == {"b", "c", "d"}


def test_get_or_compute_computes_once_across_threads():
    lru = ByteLRU(10 * MB)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.2)
        return np.ones(10)

    out = []
    threads = [threading.Thread(target=lambda: out.append(lru.get_or_compute("k", compute))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(out) == 8 and all(o is out[0] for o in out)
    with pytest.raises(ZeroDivisionError):
        lru.get_or_compute("bad", lambda: 1 / 0)
    assert "bad" not in lru  # a failure is not kept: the next call tries again
