"""Model-backed text perturbations: back-translation, Styleformer (formal, casual, passive, active) and masked-LM
suggestion. Their weights live on the Hugging Face hub and cannot be fetched offline, so each one is listed with
``available=False`` and the reason until its weights are in the local Hugging Face cache; the loading code is the
real one (``from_pretrained(<local snapshot>, local_files_only=True)``, ``trust_remote_code`` off) and nothing is
ever faked. :func:`refresh_availability` re-checks the cache (e.g. after ``huggingface-cli download``).

* ``back_translation``: EN -> DE -> EN with ``facebook/wmt19-en-de`` and ``facebook/wmt19-de-en`` -- the models of
  [P2] (nlpaug ``BackTranslationAug``), MLVP and [P1] (TextFlint ``BackTrans``); generation as nlpaug's
  ``MtTransformers`` (``generate(max_length=300)`` with the checkpoints' own beam settings), deterministic.
* ``formal`` / ``casual`` / ``passive`` / ``active``: Styleformer styles 0/1/2/3 (prithivida/*_styletransfer T5
  models): prefix "transfer Casual to Formal: " etc., sampling (top-k 50, top-p .95, max length 32); styles 0/1
  draw 5 candidates and keep the best one whose adequacy score (prithivida/parrot_adequacy_on_BART, entailment
  vs contradiction) is >= 0.95, else nothing -- then the original is kept ([C1], [C2]). Sampling is seeded from
  the call's generator under ``torch.random.fork_rng`` (torch's global RNG is restored).
* ``mlm_suggestion`` ([P1] MLM, TextFlint ``MLMSuggestion``): ``bert-base-uncased``; each legal word is masked
  in turn and replaced by one of the top-5 whole-word predictions that differ from it; trans_p 0.2 (scaled
  with severity like the other TextFlint word substitutions, paper value at severity 3).

Sentence-level perturbations have a single level in every paper: severities 1-5 all run that one level (the
parameters say so: ``level_scheme``). The ``gated`` variants add the Qiu/MLVP similarity gate ([C2] and MLVP gate
the style transfers, neither gates back-translation), keeping the last attempt as the released code does; the
``mlvp`` variants are MLVP's benchmark setting (its sentence level 1): the style transfers gated with the sample
dropped when no attempt passes (the paper), back-translation ungated (``do_text_perturbation.py``).
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from robustlab.perturb.registry import _REGISTRY, register
from robustlab.perturb.text import resources as R
from robustlab.perturb.text._common import (
    C1, MLVP, MLVP_CODE, P1, P2, STOP_WORDS, TEXTFLINT, is_punct, py_rng, replace_spans, scaled_p, single_level,
    tokens_with_spans, trans_count,
)
from robustlab.perturb.text.gate import GATE_PARAMS, MLVP_GATE_PARAMS, QIU_GATE_PARAMS, gated

BT_MODELS = ("facebook/wmt19-en-de", "facebook/wmt19-de-en")
ADEQUACY = "prithivida/parrot_adequacy_on_BART"
STYLES = {  # name: (style id, model, prefix, uses the adequacy filter, [C1] key, [P1] type)
    "formal": (0, "prithivida/informal_to_formal_styletransfer", "transfer Casual to Formal: ", True,
               "casual_to_formal"),
    "casual": (1, "prithivida/formal_to_informal_styletransfer", "transfer Formal to Casual: ", True,
               "formal_to_casual"),
    "passive": (2, "prithivida/active_to_passive_styletransfer", "transfer Active to Passive: ", False,
                "active_to_passive"),
    "active": (3, "prithivida/passive_to_active_styletransfer", "transfer Passive to Active: ", False,
               "passive_to_active"),
}
MLM_MODEL = "bert-base-uncased"
_LOCK = threading.RLock()


def _device():
    return "cpu"  # deterministic; a CUDA path would need its own determinism settings


def _load_local(repo: str, auto_class: str):
    """Tokenizer + model of ``repo`` from the local Hugging Face cache only (never downloads, no remote code)."""
    import transformers

    snap = R.hf_snapshot(repo)
    if snap is None:
        raise RuntimeError(R.hf_weights_reason(repo))
    tok = transformers.AutoTokenizer.from_pretrained(str(snap), local_files_only=True, trust_remote_code=False)
    model = getattr(transformers, auto_class).from_pretrained(str(snap), local_files_only=True,
                                                              trust_remote_code=False)
    return tok, model.eval().to(_device())


@functools.lru_cache(maxsize=8)
def _seq2seq(repo: str):
    return _load_local(repo, "AutoModelForSeq2SeqLM")


@functools.lru_cache(maxsize=2)
def _classifier(repo: str):
    return _load_local(repo, "AutoModelForSequenceClassification")


@functools.lru_cache(maxsize=2)
def _masked_lm(repo: str):
    return _load_local(repo, "AutoModelForMaskedLM")


# ------------------------------------------------------------------------------------- back-translation
def translate(texts: list[str], repo: str, max_length: int = 300) -> list[str]:
    import torch

    tok, model = _seq2seq(repo)
    with _LOCK, torch.no_grad():
        batch = tok(texts, padding=True, return_tensors="pt").to(_device())
        ids = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             max_length=max_length)
    return [t.strip() for t in tok.batch_decode(ids, skip_special_tokens=True)]


_SENT_TAGS = ("p1", "p2", "mlvp", "sentence", "hub_weights")


@register("back_translation", modality="text", category="sentence",
          source=f"{P2} Table 8 (nlpaug BackTranslationAug); {MLVP} ({MLVP_CODE}); {P1} BackTrans ({TEXTFLINT}); "
                 "models facebook/wmt19-en-de + facebook/wmt19-de-en",
          severity_table=single_level({"from_model": BT_MODELS[0], "to_model": BT_MODELS[1], "max_length": 300}),
          variants={"mlvp": single_level({"from_model": BT_MODELS[0], "to_model": BT_MODELS[1], "max_length": 300,
                                          "mlvp_severity": 1}, "MLVP's sentence level 1, ungated as its code")},
          variant_notes={"wmt19": "nlpaug BackTranslationAug's models and generation ([P1], [P2], MLVP)",
                         "mlvp": "MLVP's t2v benchmark setting (sentence level 1, ungated): the same translation"},
          default_variant="wmt19", tags=_SENT_TAGS + ("p1:SwapText", "type:Machine"),
          check=lambda: R.hf_weights_reason(*BT_MODELS),
          description="Back-translation [P2 sentence level; P1 SwapText, Machine]: translate to German and back "
                      "with FAIR's WMT19 models. Single level (severities 1-5 run the same translation).")
def back_translation(text: str, params: dict, rng: np.random.Generator) -> str:
    de = translate([text], params["from_model"], params["max_length"])[0]
    return translate([de], params["to_model"], params["max_length"])[0]


# ----------------------------------------------------------------------------------------- Styleformer
def adequacy_scores(src: str, cands: list[str]) -> list[float]:
    import torch

    tok, model = _classifier(ADEQUACY)
    out = []
    with _LOCK, torch.no_grad():
        for c in cands:
            x = tok.encode(src, c, return_tensors="pt", truncation="only_first").to(_device())
            logits = model(x)[0]
            probs = logits[:, [0, 2]].softmax(dim=1)
            out.append(float(probs[0, 1]))
    return out


def styleformer_transfer(text: str, name: str, seed: int, quality_filter: float = 0.95,
                         max_candidates: int = 5) -> str | None:
    """Styleformer ``transfer`` for one style, with torch sampling seeded by ``seed`` (global RNG restored)."""
    import torch

    _sid, repo, prefix, filtered, _ = STYLES[name]
    tok, model = _seq2seq(repo)
    ids = tok.encode(prefix + text, return_tensors="pt").to(_device())
    with _LOCK, torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        preds = model.generate(ids, do_sample=True, max_length=32, top_k=50, top_p=0.95, early_stopping=True,
                               num_return_sequences=max_candidates if filtered else 1)
    decoded = [tok.decode(p, skip_special_tokens=True).strip() for p in preds]
    if not filtered:
        return decoded[0]
    cands = sorted(set(decoded))  # Styleformer: a set (unordered); sorted for determinism
    scored = [(c, s) for c, s in zip(cands, adequacy_scores(text, cands)) if s >= quality_filter]
    if not scored:
        return None
    return sorted(scored, key=lambda cs: -cs[1])[0][0]


def _style_op(name: str):
    sid, repo, prefix, filtered, c1_key = STYLES[name]
    base = {"style": sid, "model": repo, "prefix": prefix.strip(), "sampling": "top_k=50, top_p=0.95, max_length=32",
            "on_none": "keep the original ([C1], [C2])"}
    if filtered:
        base.update(adequacy_model=ADEQUACY, quality_filter=0.95, max_candidates=5)
    tables = {"styleformer": single_level(dict(base)), "gated": single_level({**base, **QIU_GATE_PARAMS}),
              "gated_code": single_level({**base, **GATE_PARAMS}),
              "mlvp": single_level({**base, **MLVP_GATE_PARAMS, "mlvp_severity": 1},
                                   "MLVP's sentence level 1; gated, the last attempt kept when none passes")}
    in_p1 = name != "active"

    @register(name, modality="text", category="sentence",
              source=f"{P2} Table 8 (Styleformer style={sid}); {MLVP} ({MLVP_CODE})"
                     + (f"; {P1} TextStyle ({C1} key '{c1_key}')" if in_p1 else "") + "; Styleformer (Damodaran)",
              variants=tables, default_variant="styleformer", check=lambda: _style_reason(name),
              variant_notes={"styleformer": "Styleformer as [P1]/[P2] ran it, ungated (default)",
                             "gated": "with Qiu's similarity gate, dropped when no attempt passes (the paper)",
                             "gated_code": "with the similarity gate, the last attempt kept ([C2] and MLVP's code)",
                             "mlvp": "MLVP's t2v benchmark: gated, the last attempt kept when none passes (the "
                                     "code; the paper does not say)"},
              tags=_SENT_TAGS[1:] + (("p1", "p1:TextStyle", "type:Natural") if in_p1 else ()),
              description=f"{name.capitalize()} [P2 sentence level" + ("; P1 TextStyle, Natural" if in_p1 else "")
                          + f"]: Styleformer '{prefix.strip()[9:-1]}' transfer. Single level.")
    def fn(text: str, params: dict, rng: np.random.Generator) -> str:
        def make(r, k=0):
            out = styleformer_transfer(text, name, r.randrange(2 ** 63))
            return out if out else text

        if params.get("gate"):
            return gated(text, make, rng, params)
        return make(py_rng(rng))

    fn.__name__ = fn.__qualname__ = name
    return fn


formal = _style_op("formal")
casual = _style_op("casual")
passive = _style_op("passive")
active = _style_op("active")


# ------------------------------------------------------------------------------------- masked-LM swap
def mlm_candidates(text: str, spans, indices, top_k: int = 5) -> dict[int, list[str]]:
    import torch

    tok, model = _masked_lm(MLM_MODEL)
    out = {}
    with _LOCK, torch.no_grad():
        for i in indices:
            _, s, e = spans[i]
            masked = text[:s] + tok.mask_token + text[e:]
            enc = tok(masked, return_tensors="pt", truncation=True).to(_device())
            pos = (enc["input_ids"][0] == tok.mask_token_id).nonzero()
            if len(pos) == 0:
                continue
            logits = model(**enc).logits[0, int(pos[0])]
            order = torch.argsort(logits, descending=True, stable=True)[:50].tolist()
            word = spans[i][0].lower()
            cands = []
            for t in order:
                w = tok.convert_ids_to_tokens(t)
                if w.startswith("##") or not w.isalpha() or w.lower() == word:
                    continue
                cands.append(w)
                if len(cands) >= top_k:
                    break
            out[i] = cands
    return out


@register("mlm_suggestion", modality="text", category="word",
          source=f"{P1} §3.2 SwapText MLM; {C1}; {TEXTFLINT} UT MLMSuggestion; model bert-base-uncased",
          severity_table=scaled_p(0.2, trans_min=1, trans_max=10, model=MLM_MODEL, top_k=5),
          default_variant="schiappa_textflint", tags=("p1", "p1:SwapText", "type:Machine", "hub_weights"),
          check=lambda: R.hf_weights_reason(MLM_MODEL),
          description="MLM [P1 SwapText, Machine]: mask words and replace them by a top-5 bert-base-uncased "
                      "prediction; trans_p = 0.2 x s/3.")
def mlm_suggestion(text: str, params: dict, rng: np.random.Generator) -> str:
    spans = tokens_with_spans(text)
    legal = [i for i, (t, _, _) in enumerate(spans) if not is_punct(t) and t.lower() not in STOP_WORDS]
    if not legal:
        return text
    cands = {i: c for i, c in mlm_candidates(text, spans, legal, params["top_k"]).items() if c}
    if not cands:
        return text
    n = min(trans_count(params["trans_p"], len(spans), params["trans_min"], params["trans_max"]), len(cands))
    r = py_rng(rng)
    chosen = sorted(r.sample(sorted(cands), n))
    return replace_spans(text, {i: r.choice(cands[i]) for i in chosen}, spans)


# --------------------------------------------------------------------------------------- availability
def _style_reason(name: str) -> str:
    _sid, repo, _p, filtered, _k = STYLES[name]
    return R.hf_weights_reason(repo, *((ADEQUACY,) if filtered else ()))


def refresh_availability() -> dict[str, str]:
    """Re-check the local Hugging Face cache; returns {name: reason} ('' = available)."""
    return {n: _REGISTRY[n].refresh().reason for n in ("back_translation", *STYLES, "mlm_suggestion")}
