"""xekern's version: its own module, so that the runtime (the disk cache's key) and packaging
(``pyproject.toml``'s ``[tool.setuptools.dynamic]``) read it without importing the package."""
__version__ = "0.1.0"
