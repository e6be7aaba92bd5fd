"""``robustlab quag-sim`` (QUAG's simulation study, Rawal et al. §3 / Fig. 2) and ``robustlab clavi-distance``
(CLAVI's complement-pair attention distance, App. B.7 / Table 16): thin over
:mod:`robustlab.diagnostics.quag_simulation` and :mod:`robustlab.diagnostics.clavi_distance`."""
from __future__ import annotations

import json

from robustlab.cli import inputs
from robustlab.cli.common import counting_bar, err, split
from robustlab.diagnostics import clavi_distance as cd
from robustlab.diagnostics import quag_simulation as qs
from robustlab.diagnostics.clavi import ClaviError
from robustlab.io.atomic import atomic_write


def _write(path, payload: dict) -> None:
    atomic_write(path, json.dumps(payload, indent=1))


def _emit(args, res) -> bool:
    """Write the result as JSON to ``--out`` and print it with ``--json``; True when that is all to print."""
    out = res.to_dict()
    if args.out:
        _write(args.out, out)
    if args.json:
        print(json.dumps(out))
    return bool(args.json)


def cmd_quag_sim(args) -> int:
    try:
        alphas = [float(a) for a in split(args.alphas)]
    except ValueError:
        return err(f"--alphas must be numbers in [0, 0.5), e.g. 0.05,0.25,0.45; got {args.alphas!r}")
    over = {k: v for k, v in (("epochs", args.epochs), ("samples", args.samples)) if v is not None}
    bar, count = counting_bar(args, desc="α", unit="model")
    try:
        res = qs.simulate(alphas, args.config, seed=args.seed, shortcircuits=split(args.shortcircuits),
                          device=args.device or "cpu", threads=args.threads, progress=count, **over)
    except ValueError as e:
        return err(str(e))
    finally:
        bar.close()
    if _emit(args, res):
        return 0
    c = res.config
    print(f"{res.labels['title']} — config {args.config}: {c.tokens} tokens × {c.dim} features per modality, "
          f"{c.layers} layers of width {c.width}, {c.samples} samples, {c.epochs} epochs, seed {res.seed}, "
          f"{res.seconds:.0f} s on {res.device}")
    cols = ["alpha", "mse"] + [f"mse_{s}" for s in res.shortcircuits] + [f"increase_{s}_pct"
                                                                          for s in res.shortcircuits]
    print("".join(f"{h:>26}" for h in cols))
    for r in res.rows():
        print("".join(f"{r[h]:>26.4g}" for h in cols))
    print("increase = 100 · (MSE after the short-circuit − MSE) / MSE on the test split; Rawal et al. find it grows "
          "with α")
    return 0


def cmd_clavi_distance(args) -> int:
    if args.pairs < 1:
        return err("--pairs must be at least 1")
    given = args.n is not None
    if args.n is None:
        args.n = max(30, 3 * args.pairs)  # about a third of the built-in event videos have two distinct events
    dataset, code = inputs.build_dataset(args, args.dataset, check_n=given)
    if dataset is None:
        return code
    model, code = inputs.load_model(args)
    if model is None:
        return code
    bar, count = counting_bar(args, desc="pairs", unit="pair")
    try:
        res = cd.dataset_distances(model, dataset, args.pairs, qtypes=split(args.qtypes), method=args.method,
                                   seed=args.pair_seed, same_modality=args.same_modality, progress=count)
    except (ClaviError, ValueError) as e:
        return err(str(e))
    finally:
        bar.close()
    if _emit(args, res):
        return 0
    print(f"{res.labels['title']} — {res.model_id}, {dataset.name}, question types {', '.join(res.qtypes)}, "
          f"{args.method} complements" + (", matching within each modality" if res.same_modality else ""))
    print(f"{'complement':<12}{'outcome':<12}{'pairs':>7}{'mean':>10}{'variance':>10}")
    for t in res.table():
        mean = "—" if t["mean"] is None else f"{t['mean']:.4f}"
        var = "—" if t["variance"] is None else f"{t['variance']:.4f}"
        print(f"{t['kind']:<12}{t['outcome']:<12}{t['pairs']:>7}{mean:>10}{var:>10}")
    print("L2 distance of the aligned attention matrices, mean over layers and heads; correct: both inputs of the "
          "pair answered right (Rawal et al. Table 16)")
    return 0
