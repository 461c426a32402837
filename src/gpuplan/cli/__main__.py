"""``python -m gpuplan.cli``."""

from . import main

main()
