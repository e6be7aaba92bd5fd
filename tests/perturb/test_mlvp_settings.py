"""MLVP (Zhang et al.) query-shift settings: the ``mlvp`` text variants at the paper's one level per family, the
similarity gate (MLVP keeps the last attempt, as its code; Qiu's paper drops the sample), and the mixed conditions
of App. D.2 (Tables 17-18)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from robustlab.perturb import get_perturbation, perturb, regenerate
from robustlab.perturb.condition import (
    Condition, Mix, check, dropped_reason, mix_plan, mix_pool, mixed_severities, perturb_many, random_types,
)
from robustlab.perturb.text import catalogue
from robustlab.perturb.text import resources as R

CAP = "A man in a red shirt is riding a brown horse along the sandy beach at sunset"
CHAR = {"ocr", "char_insert", "char_substitute", "char_swap", "char_delete"}
WORD = {"synonym_replacement", "word_insertion", "word_swap", "word_deletion", "insert_punctuation"}
STYLES = {"formal", "casual", "passive", "active"}


# ------------------------------------------------------------------------------ the paper's levels
def test_mlvp_variants_run_the_papers_level_at_every_severity():
    rows = catalogue("MLVP")
    assert len(rows) == 15 and {r["variant"] for r in rows} == {"mlvp"}
    assert {r["name"] for r in rows} == CHAR | WORD | STYLES | {"back_translation"}
    for r in rows:
        assert r["severities"] == [1, 2, 3, 4, 5], r
        spec = get_perturbation(r["name"])
        for s in range(1, 6):
            p = spec.params(s, "mlvp")
            if r["name"] in CHAR:  # MLVP severity 7: ratio 0.05 x 7, ungated (do_text_perturbation.py)
                assert p["aug_word_p"] == 0.35 and p["mlvp_severity"] == 7 and not p.get("gate"), (r, s)
            elif r["name"] in WORD:  # MLVP severity 2: ratio 0.05 x 2, gated, the last attempt kept (issue 48:
                # the MLVP paper says nothing about removal; its code keeps the last attempt)
                assert p["level"] == 0.10 and p["mlvp_severity"] == 2, (r, s)
                assert (p["gate"], p["gate_threshold"], p["gate_max_tries"]) == (True, 0.9, 100), (r, s)
                assert p["gate_on_failure"].startswith("keep last") and "paper does not say" in p["gate_on_failure"]
            else:  # sentence level 1; the style transfers gated (last attempt kept), back-translation not
                assert p["mlvp_severity"] == 1 and p["level_scheme"].startswith("single"), (r, s)
                assert bool(p.get("gate")) == (r["name"] in STYLES), (r, s)
                if r["name"] in STYLES:
                    assert p["gate_on_failure"].startswith("keep last") and p["gate_threshold"] == 0.9
            assert p == spec.params(1, "mlvp")  # one level: the same parameters at every severity
    # the released code's own scale stays available: ratio 0.05 x severity, last attempt kept
    code = get_perturbation("word_swap")
    assert [code.params(s, "mlvp_code")["level"] for s in range(1, 6)] == [0.05, 0.10, 0.15, 0.20, 0.25]
    assert code.params(2, "mlvp_code")["gate_on_failure"].startswith("keep last")


def test_mlvp_char_variant_equals_qiu_severity_5_output():
    # the char mlvp variant is nlpaug with aug_word_p 0.35: the same draw as qiu_nlpaug's severity 5
    for name in sorted(CHAR):
        a = perturb(CAP, name, 2, seed=5, variant="mlvp")
        b = perturb(CAP, name, 5, seed=5)
        assert a.output == b.output and a.output != CAP, name
        assert regenerate(json.loads(json.dumps(a.record)), CAP) == a.output


# ------------------------------------------------------------------------------ the gate drops (Qiu's paper)
def _fake_encoder(fail_for: set):
    """Sentence embeddings where every re-ordering of a caption in ``fail_for`` has cosine 0 to it, anything else 1."""
    bags = {tuple(sorted(t.split())) for t in fail_for}

    def encode(texts):
        return np.array([[0.0, 1.0] if t not in fail_for and tuple(sorted(t.split())) in bags else [1.0, 0.0]
                         for t in texts], np.float32)
    return encode


def test_a_sample_no_attempt_passes_is_dropped_and_recorded(monkeypatch):
    monkeypatch.setattr(R, "encode_sentences", _fake_encoder({CAP}))
    res = perturb(CAP, "word_swap", 4, seed=3, variant="qiu_gated")  # Qiu et al. App. 5.3: removed
    gate = res.record["details"]["gate"]
    assert gate["passed"] is False and gate["dropped"] is True and gate["attempts"] == 100
    why = dropped_reason(res.record)
    assert why and "no attempt of 100" in why and "0.9" in why
    rec = json.loads(json.dumps(res.record))
    assert regenerate(rec, CAP) == res.output  # the dropped sample still regenerates bit for bit
    assert dropped_reason(perturb(CAP, "word_swap", 4, seed=3, variant="qiu_gated").record) == why
    assert "Qiu" in why
    # the released codes' behaviour, and MLVP's (its paper does not say): the last attempt kept, flagged, not dropped
    for variant, sev in (("qiu_gated_code", 4), ("mlvp_code", 2), ("mlvp", 4)):
        kept = perturb(CAP, "word_swap", sev, seed=3, variant=variant)
        assert kept.record["details"]["gate"]["passed"] is False and dropped_reason(kept.record) is None, variant
    # a caption that passes is not dropped
    other = "Two young girls are playing soccer in a green park"
    assert dropped_reason(perturb(other, "word_swap", 4, seed=3, variant="qiu_gated").record) is None
    assert dropped_reason(None) is None


# ------------------------------------------------------------------------------ mixed conditions
TEXTS = [f"{c} number {i}" for i, c in enumerate(["a dog runs on the grass", "two people cook dinner",
                                                    "a red car drives fast down the road"] * 9)]  # 27 texts


def test_mixed_severities_reproducible_regenerable_and_drawn_from_1_to_5():
    cond = mixed_severities("char_swap", seed=7)
    assert cond.label() == "mlvp:mixed-severity char_swap s1-5" and cond.severity == 5
    outs, recs = perturb_many(TEXTS, cond, "text")
    outs2, recs2 = perturb_many(TEXTS, cond, "text")
    assert outs == outs2 and recs == recs2
    sevs = [r["severity"] for r in recs]
    assert set(sevs) <= {1, 2, 3, 4, 5} and len(set(sevs)) >= 4  # 27 draws from 5 levels
    plan = mix_plan(cond, len(TEXTS))
    for j, (t, o, r) in enumerate(zip(TEXTS, outs, recs)):
        assert r["name"] == "char_swap" and r["seed"] == 7 + j and r["severity"] == plan[j]["severity"]
        assert r["mix"] == {"label": cond.label(), "index": j, "of": len(TEXTS), "corrupted": True}
        assert regenerate(json.loads(json.dumps(r)), t) == o
        # the same item under the plain condition at the drawn severity is the same text
        assert perturb(t, "char_swap", r["severity"], seed=7 + j).output == o
    assert len({tuple(p["severity"] for p in mix_plan(mixed_severities("char_swap", seed=s), 200))
                for s in (0, 1)}) == 2  # the seed changes the draws
    sev200 = [p["severity"] for p in mix_plan(cond, 200)]
    assert set(sev200) == {1, 2, 3, 4, 5}


@pytest.mark.parametrize("p", [0.2, 0.4, 0.6, 0.8])
def test_random_types_corrupt_exactly_round_p_n(p):
    pool = ["char_swap", "char_delete", "word_swap/mlvp_code"]
    for n in (1, 5, 7, 10, 27, 113):
        plan = mix_plan(random_types(p, pool, severity=3, seed=2), n)
        assert sum(d["severity"] > 0 for d in plan) == int(np.floor(p * n + 0.5)), (p, n)
    cond = random_types(p, pool, severity=3, seed=2)
    assert cond.label() == f"mlvp:random-types {round(100 * p):d}% s3"
    outs, recs = perturb_many(TEXTS, cond, "text")
    hit = [r for r in recs if r["mix"]["corrupted"]]
    assert len(hit) == int(np.floor(p * len(TEXTS) + 0.5))
    for t, o, r in zip(TEXTS, outs, recs):
        assert (r["name"] + ("/" + r["variant"] if r["name"] == "word_swap" else "")) in pool
        if r["mix"]["corrupted"]:
            assert r["severity"] == 3
        else:  # left clean: the drawn type's severity-0 pass-through record
            assert r["severity"] == 0 and o == t
        assert regenerate(json.loads(json.dumps(r)), t) == o
    assert (outs, recs) == perturb_many(TEXTS, cond, "text")
    # one item alone (a page's query), told how many items the whole list has, is the same item
    j = 11
    one, rec1 = perturb_many([TEXTS[j]], cond, "text", offset=j, total=len(TEXTS))
    assert one[0] == outs[j] and rec1[0] == recs[j]
    with pytest.raises(ValueError, match="needs the list's size"):  # never a silently different selection
        perturb_many([TEXTS[j]], cond, "text", offset=j)


def test_random_types_with_mixed_severities_and_the_mlvp_pool():
    pool = mix_pool("mlvp", "text")
    assert "word_swap/mlvp" in pool and "ocr/mlvp" in pool and "keyboard" not in pool
    assert all(get_perturbation(t.split("/")[0]).available for t in pool)
    vpool = mix_pool("mlvp", "video")
    assert all(t.startswith("mlvp_") for t in vpool) and len(vpool) >= 10
    cond = random_types(0.6, ["char_swap", "char_insert"], seed=1, severities=(1, 2, 3, 4, 5))
    plan = mix_plan(cond, 300)
    hit = [d for d in plan if d["severity"]]
    assert len(hit) == 180 and {d["severity"] for d in hit} == {1, 2, 3, 4, 5}
    assert {d["name"] for d in hit} == {"char_swap", "char_insert"}
    assert cond.label() == "mlvp:random-types 60% s1-5"


def test_mixed_condition_json_is_backward_compatible_and_checked():
    old = {"name": "char_swap", "severity": 3, "seed": 4}
    c = Condition.from_dict(old)
    assert c.mix is None and c.to_dict() == old and c.label() == "char_swap s3"
    for m in (mixed_severities("char_swap", (2, 4), seed=1, variant="mlvp"), random_types(0.4, ["ocr/mlvp"], 5)):
        d = json.loads(json.dumps(m.to_dict()))
        assert "mix" in d and Condition.from_dict(d) == m and Condition.from_dict(d).key() == m.key()
        assert m.key() != Condition(m.name, m.severity, m.seed, m.variant).key()
    with pytest.raises(ValueError, match="unknown perturbation"):
        check(random_types(0.4, ["char_swap", "no_such_op"]), "text")
    with pytest.raises(ValueError, match="image perturbation"):
        check(random_types(0.4, ["gaussian_noise"]), "text")
    with pytest.raises(ValueError, match="in 0..1"):
        Mix(fraction=1.5)
    with pytest.raises(ValueError, match="1..5"):
        Mix(severities=(0, 6))
