"""Export: the basket of selected examples (``basket``), zip/folder exports with their manifest, and
regeneration bit for bit (``manifest``)."""
from robustlab.export.basket import Basket, Example, make_example  # noqa: F401
from robustlab.export.manifest import (  # noqa: F401
    MANIFEST, REQUIRED_KEYS, ExportReader, ExportWriteError, FilePerturber, build_zip, collect_inputs, export_dir,
    regenerate_export, save_zip, validate_entry,
)
