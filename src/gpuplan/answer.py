"""The base of the Python API's answers other than the plan (:class:`Answer`): pydantic models, apart from
:mod:`gpuplan.result` so that a first estimate, whose plan and parts are stored records (:mod:`gpuplan.stored`),
never loads pydantic's model machinery (bench/results/stored_s31.md)."""

from typing import Any

from pydantic import BaseModel, ConfigDict

from .result import to_dict


class Answer(BaseModel):
    """An answer of the Python API: typed fields, and :meth:`to_dict`, exactly what the command's ``--json`` prints.
    Each kind of answer builds its validator when first validated, not on import: a process asks one question."""

    model_config = ConfigDict(defer_build=True)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (non-finite numbers as null), equal to the command's ``--json`` output."""
        return to_dict(self)
