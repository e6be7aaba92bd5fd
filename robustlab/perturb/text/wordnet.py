"""A small reader for Princeton WordNet 3.0 database files (Debian's ``wordnet-base`` -> /usr/share/wordnet).

Why not NLTK's ``WordNetCorpusReader``: it needs a ``lexnames`` file that Debian does not ship and, since NLTK
3.9, only opens files under ``nltk.data.path`` (its path sandbox), so using it would mean editing global NLTK
state. What the perturbations need is small: the lemma index, the lemma names of a synset, and NLTK's
``morphy`` (exception lists + detachment rules) so that ``synsets("apples")`` finds "apple" exactly as NLTK does.
This module reimplements those three pieces on the WordNet file format (wndb(5WN)); it is checked against
NLTK's behaviour in tests/perturb/test_perturb_text_catalogue.py where NLTK is installed.

Location: ``$ROBUSTLAB_WORDNET`` if set, else /usr/share/wordnet (install: ``apt-get install wordnet-base``).
"""
from __future__ import annotations

import functools
import os
import re
import threading
from pathlib import Path

POS_LIST = ("n", "v", "a", "r")  # NLTK's order: NOUN, VERB, ADJ, ADV
_FILE = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# NLTK 3.10 WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS
_SUBST = {
    "n": [("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}
_MARKER = re.compile(r"\([a-z]+\)$")  # adjective syntactic markers in data.adj: "(a)", "(p)", "(ip)"
PENN_TO_WN = {"N": "n", "V": "v", "J": "a", "R": "r"}


def wordnet_dir() -> Path:
    return Path(os.environ.get("ROBUSTLAB_WORDNET") or "/usr/share/wordnet")


def missing_reason() -> str:
    """'' if WordNet 3.0 is readable, else a one-line reason."""
    d = wordnet_dir()
    need = [f"{k}.{p}" for p in _FILE.values() for k in ("index", "data")]
    if not all((d / f).is_file() for f in need):
        where = "the folder $ROBUSTLAB_WORDNET names" if os.environ.get("ROBUSTLAB_WORDNET") else str(d)
        return (f"needs WordNet 3.0 database files in {where} (apt-get install wordnet-base, or set "
                "ROBUSTLAB_WORDNET to a WordNet 3.0 dict/ folder)")
    return ""


class WordNet:
    """Lemma index, synset lemma names and NLTK-compatible morphy over the WordNet 3.0 files in ``root``."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root else wordnet_dir()
        self._index: dict[str, dict[str, tuple[int, ...]]] = {}
        self._exc: dict[str, dict[str, tuple[str, ...]]] = {}
        self._data_cache: dict[tuple[str, int], tuple[str, ...]] = {}
        self._files: dict[str, object] = {}
        self._lock = threading.Lock()
        for pos, suffix in _FILE.items():
            idx: dict[str, tuple[int, ...]] = {}
            with open(self.root / f"index.{suffix}", encoding="utf-8") as fp:
                for line in fp:
                    if line.startswith(" "):
                        continue
                    parts = line.split()
                    n_syn, n_ptr = int(parts[2]), int(parts[3])
                    start = 4 + n_ptr + 2
                    idx[parts[0]] = tuple(int(o) for o in parts[start:start + n_syn])
            self._index[pos] = idx
            exc: dict[str, tuple[str, ...]] = {}
            path = self.root / f"{suffix}.exc"
            if path.is_file():
                with open(path, encoding="utf-8") as fp:
                    for line in fp:
                        parts = line.split()
                        if len(parts) >= 2:
                            exc[parts[0]] = tuple(parts[1:])
            self._exc[pos] = exc

    def version(self) -> str:
        with open(self.root / "data.adj", encoding="utf-8") as fp:
            head = fp.read(4000)
        m = re.search(r"WordNet (\d+\.\d+)", head)
        return m.group(1) if m else "unknown"

    # ------------------------------------------------------------------ lookups
    def has(self, lemma: str, pos: str) -> bool:
        return lemma in self._index[pos]

    def all_lemma_names(self, pos: str) -> list[str]:
        """Sorted lemma names of one part of speech (index order is already sorted; sorted() makes it explicit)."""
        return sorted(self._index[pos])

    def morphy(self, form: str, pos: str) -> list[str]:
        """NLTK 3.10 ``_morphy``: exception list, else one round of detachment rules; keep forms in the index."""
        if form in self._exc[pos]:
            forms = list(self._exc[pos][form])
        else:
            forms = [form[: -len(old)] + new for old, new in _SUBST[pos] if form.endswith(old)]
        out, seen = [], set()
        for f in [form] + forms:
            if f in self._index[pos] and f not in seen:
                out.append(f)
                seen.add(f)
        return out

    def synset_offsets(self, word: str, pos: str | None = None) -> list[tuple[str, int]]:
        """(pos, offset) of every synset of ``word`` (NLTK ``synsets``: lower-cased, morphy per pos)."""
        word = word.lower()
        out = []
        for p in (POS_LIST if pos is None else (pos,)):
            for form in self.morphy(word, p):
                out.extend((p, o) for o in self._index[p].get(form, ()))
        return out

    def lemma_names(self, pos: str, offset: int) -> tuple[str, ...]:
        """The synset's lemma names as in the data file (case kept, '_' for spaces, markers removed)."""
        key = (pos, offset)
        got = self._data_cache.get(key)
        if got is not None:
            return got
        with self._lock:
            fp = self._files.get(pos)
            if fp is None:
                fp = self._files[pos] = open(self.root / f"data.{_FILE[pos]}", "rb")
            fp.seek(offset)
            line = fp.readline().decode("utf-8")
        parts = line.split()
        n = int(parts[3], 16)
        names = tuple(_MARKER.sub("", parts[4 + 2 * i]) for i in range(n))
        self._data_cache[key] = names
        return names

    def synonyms(self, word: str, pos: str | None = None) -> list[list[str]]:
        """Lemma names per synset of ``word`` (in NLTK's synset order)."""
        return [list(self.lemma_names(p, o)) for p, o in self.synset_offsets(word, pos)]


@functools.lru_cache(maxsize=2)
def _load(root: str) -> WordNet:
    return WordNet(root)


def get_wordnet() -> WordNet:
    """The process-wide reader (index files parsed once, ~1 s)."""
    reason = missing_reason()
    if reason:
        raise RuntimeError(reason)
    return _load(str(wordnet_dir()))
