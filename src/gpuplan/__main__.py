"""``python -m gpuplan``: the command line."""

from .cli import main

main()
