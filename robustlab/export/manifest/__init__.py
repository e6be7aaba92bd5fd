"""Export perturbed examples with their recipes, and regenerate them bit for bit.

An export (a zip from the dashboard's basket, or a folder written by ``robustlab perturb``) holds::

    manifest.jsonl                     one JSON object per example (below)
    clean/0001_<name>.png              the clean image, exactly as the perturbation saw it (lossless PNG)
    clean/0002_<name>.npz              a clean video's exact frames (``frames`` T×H×W×3 uint8, ``fps``)
    clean/0002_<name>.mp4              ... and the same video as a playable H.264 MP4 (lossy: for viewing)
    clean/0003_<name>.txt              a clean caption (UTF-8; a whole file, or one line of it: see ``line``)
    perturbed/0001_<name>__<perturbation>-<variant>-s<severity>-seed<seed>.png|.mp4|.txt

Manifest entry (schema ``MANIFEST_SCHEMA`` = 1)::

    {"manifest": 1, "id": "0001", "kind": "image"|"video"|"text",
     "perturbation": NAME, "variant": V, "severity": 0..5, "seed": S, "params": {...resolved...},
     "versions": {library: version, ...},          # the record's versions plus the file encoders' (pillow, av)
     "record": {...},                              # the full perturbation record (robustlab.perturb.record)
     "source": {"type": "builtin", "collection": "gallery"|"video", "seed", "index", "name"}
             | {"type": "upload", "name", "sha256", "bytes"} | {"type": "file", "name", "path", "sha256", "bytes"}
             | {"type": "typed", "name": "typed"},
     "clean": {"path", "format": "png"|"npz"|"txt", "sha256", "line": int|null},
     "clean_preview": {"path", "format": "mp4", "sha256"} | null,      # videos: a playable copy of clean
     "perturbed": {"path", "format": "png"|"mp4"|"txt", "sha256", "line": int|null},
     "video": {"fps", "frames", "height", "width"} | null,
     "model": {"id": MODEL_SPEC, "view": "retrieval", "scores": {...}, ...} | null,
     "label": "...", "exported": ISO-8601 time, "exported_by": "robustlab X.Y.Z",
     "parts": [{...an entry of the same form, id "0001-1"...}, ...]}   # optional: a combined condition

A combined condition (the Grounding page's image and expression perturbed together: one model score for both) is
one entry: its first perturbed part is the entry itself, the others are listed in ``parts``, each with its own
record and files; ``regenerate_export`` regenerates and verifies every part, and the entry is OK only when all
are. A part that changed nothing (a no-op) is not exported; the model info names it (``model.no_op``).

A PEELING test (the Grounding page's PEELING panel) is a text entry whose perturbation is ``peeling_p2``:
clean = the reduced expression (``Reducetext``), perturbed = the final one (``MRtext``), ``severity`` null,
``params`` = what ``robustlab.diagnostics.peeling.p2_chain`` needs to regenerate it, ``model`` = the test's
grounding results (``rawtext``, IoUs, the uniqueness questions and answers...). An export holding PEELING tests
also has ``peeling/tests.csv`` (the paper's ``uniq_id,rawtext,Reducetext,MRtext``) and ``peeling/tests.tsv``
(OFA's layout: ``uniq_id, image_id, text, region, image_base64``), written as
``robustlab.diagnostics.peeling.export_tests`` writes them.

``line`` null means the whole file is the text (no newline added); an integer k means line k (0-based) of
the file split on "\\n" (how ``robustlab perturb`` writes a caption file's captions).

``regenerate_export(src)`` re-runs every record on its clean input from the export and checks, per example:
the clean file's SHA-256, the regenerated output's hash against the record's ``output_hash`` (bit for bit),
and the perturbed file in the export against the regenerated output (decoded and hashed for PNG/TXT, the
re-encoded bytes for MP4). Every path read from or written to an export is sanitised (``safe_member``).

The package's modules: :mod:`.common` (names, limits, errors, encoders), :mod:`.writer` (zip and folder exports),
:mod:`.reader` (reading an export, the entry schema), :mod:`.regenerate` (rebuild and verify) and
:mod:`.perturb_files` (``robustlab perturb``'s folder exports). Every name is re-exported here.
"""
from __future__ import annotations

import os  # noqa: F401  (``manifest.os``: tests replace os.fdopen through it to fill the disk)

from robustlab.export.basket import PEELING_P2, Example, file_source, sha256  # noqa: F401  (re-exported)
from robustlab.export.manifest.common import (  # noqa: F401
    IMAGE_EXTS, MANIFEST, MANIFEST_SCHEMA, MAX_MEMBER_BYTES, PEELING_CSV, PEELING_TSV, REQUIRED_KEYS, TEXT_EXTS,
    VIDEO_EXTS, ExportWriteError, decode_npz, decode_png, describe_write_error, disk_full, encode_mp4, encode_npz,
    encode_png,
)
from robustlab.export.manifest.perturb_files import FilePerturber, FileResult, collect_inputs, kind_of  # noqa: F401
from robustlab.export.manifest.reader import ExportReader, load_clean, validate_entry  # noqa: F401
from robustlab.export.manifest.regenerate import ItemResult, encode_output, regenerate_entry, regenerate_export  # noqa: F401
from robustlab.export.manifest.writer import (  # noqa: F401
    README_PEELING, README_TEXT, DirSink, ZipSink, build_zip, export_dir, peeling_files, save_zip, write_example,
)
from robustlab.io.names import MAX_NAME, safe_component, safe_member  # noqa: F401
