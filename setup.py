"""Package layout: the repository keeps the design card's top-level folders (``encoder/``,
``vocab/``) and installs them under the one import name ``ocml`` (``ocml.encoder``,
``ocml.vocab``).  The package list is derived from the folders, so a new subpackage needs no
edit here.  Everything else is in pyproject.toml; the package is plain Python (nothing is
compiled at install).
"""

from __future__ import annotations

from setuptools import find_packages, setup

SUBPACKAGES = ("encoder", "vocab")
packages = ["ocml"] + [f"ocml.{name}" for name in find_packages(include=[f"{p}*" for p in SUBPACKAGES])]
package_dir = {"ocml": "ocml", **{f"ocml.{p}": p for p in SUBPACKAGES}}

setup(packages=packages, package_dir=package_dir)
