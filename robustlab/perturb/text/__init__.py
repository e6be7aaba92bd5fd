"""Text perturbations. Importing this package registers them; nlpaug, spaCy, WordNet, torch and hub models load
on first use.

The catalogue (digest §2 and §8 T01-T55; seeds_methods §3.3 T1):

* ``char``: the 6 character-level ops of Qiu et al. [P2] (nlpaug; also MLVP's char shifts), with Schiappa et
  al.'s [P1] TextFlint Keyboard/Ocr as variant ``schiappa_textflint``;
* ``textflint_ops``: the rest of [P1]'s TextFlint perturbations, reimplemented (SpellErr, Typos, Punct,
  PrefixSwap, AppendIrr, AddAdv, JJ/NN swaps, SynWordNet, SynWordEmbd, Tense, Neg);
* ``bias``: [P1] GenderSwap, AllMale, AllFemale, GenderNeutral; ``drop``: [P1] DropText (8) and Positional (4);
* ``eda``: [P2]/MLVP word level (SR, WI, WS, WD, IP) with the similarity gate as variants;
* ``sentence``: back-translation, Styleformer (formal, casual, passive, active) and MLM -- hub weights, listed
  unavailable with the reason until they are in the local Hugging Face cache.

See :func:`catalogue` for the paper-to-robustlab map and :func:`refresh_availability` to re-check resources.
"""
from robustlab.perturb.text import char  # noqa: F401  (registration side effects)
from robustlab.perturb.text import textflint_ops, bias, drop, eda, sentence  # noqa: F401,E402
from robustlab.perturb.text.catalogue import CATALOGUE  # noqa: E402
# ``catalogue`` is the module, callable as its function of the same name (so that ``import
# robustlab.perturb.text.catalogue as C`` works too; issue 46)
from robustlab.perturb.text import catalogue  # noqa: E402


def refresh_availability() -> None:
    """Re-check WordNet, MiniLM and the hub weights of the text perturbations (cheap: file checks only)."""
    textflint_ops.refresh_availability()
    eda.refresh_availability()
    sentence.refresh_availability()


__all__ = ["CATALOGUE", "catalogue", "refresh_availability"]
