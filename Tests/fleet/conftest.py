"""`make test-fleet` (issue #22): the fleet rig reuses the integration helpers (wardtruth, the fault rig's
process handling), so both directories go on the import path."""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
for path in (HERE.parent / "integration", HERE.parent / "integration" / "faults"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
