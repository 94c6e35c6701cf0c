"""Build configuration for serde_kit's optional compiled reader (everything else is in pyproject.toml).

``pip install .`` compiles ``serde_kit/_reader.c`` when a C compiler and the Python
headers are there; otherwise it installs the pure-Python package and says so in one
line.  ``SERDE_KIT_REQUIRE_NATIVE=1`` makes a failed build fatal (CI, release wheels).
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRED = os.environ.get("SERDE_KIT_REQUIRE_NATIVE") == "1"


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure-Python package unless the build is required."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no headers: setuptools raises several kinds
            self._fallback(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._fallback(exc)

    def _fallback(self, exc: Exception) -> None:
        if REQUIRED:
            raise exc
        print(
            f"serde_kit: the compiled reader was not built ({type(exc).__name__}: {exc}); "
            "installing the pure-Python read path (set SERDE_KIT_REQUIRE_NATIVE=1 to make this fatal)",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            "serde_kit._reader",
            sources=["serde_kit/_reader.c"],
            optional=not REQUIRED,
            extra_compile_args=["-O2"] if os.name != "nt" else [],
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
