"""gpuplan's version, on the ground floor: the launch files and the web page print it without importing the
package's face (which points back down at them). Kept equal to ``pyproject.toml``'s (tests/test_layers.py)."""

__version__ = "0.1.0"
