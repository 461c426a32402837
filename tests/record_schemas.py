"""Store again the core schemas of the pydantic models in gpuplan.datafiles.STORED_SCHEMAS (after editing such a
model's module or upgrading pydantic): ``python tests/record_schemas.py``. Apart from gpuplan.datafiles, which sits
below the models and may not import them."""

import importlib

from gpuplan import datafiles

if __name__ == "__main__":
    for module, name in datafiles.STORED_SCHEMAS:
        print(f"wrote {datafiles.write_schema(getattr(importlib.import_module(module), name))}")
