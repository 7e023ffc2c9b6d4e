"""Helpers the tests share: one home for what more than one test module needs.

``pytest`` puts ``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml) and imports test modules
with ``--import-mode=importlib``, so a test module imports ``support.<name>`` and never another test
module.  ``support.paths`` says where the repository, the fixtures and ``../shared`` are; ``gen``
generates random conversations, ``golden`` reads the golden fixtures, ``agreement`` drives the
stream/parse agreement check; the other modules hold an area's helpers (``stream``, ``pipeline``,
``template``...)."""
