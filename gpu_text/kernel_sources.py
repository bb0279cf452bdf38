"""Where the kernel twins are, in a source checkout and in an installed wheel.

In the repository the CUDA kernels live in the top-level ``cuda/`` folder and the Numba twins in
``cpu_fallback/``; the wheel carries them inside the package as ``gpu_text/_cuda`` and
``gpu_text/_cpu_fallback`` (see ``pyproject.toml``), so it installs no top-level package but
``gpu_text``. Everything that compiles a kernel (the CuPy
loader, the NVRTC check, the CPU emulator in the tests) asks this module, so all three compile the
same text.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def kernel_source_dir() -> Path:
    """The folder holding the ``.cu`` and ``.cuh`` files.

    >>> (kernel_source_dir() / "utf8.cu").is_file()
    True
    """
    for candidate in (_PACKAGE_DIR / "_cuda", _PACKAGE_DIR.parent / "cuda"):
        if (candidate / "common.cuh").is_file():
            return candidate
    raise FileNotFoundError(
        f"gpu_text's CUDA sources are missing: looked in {_PACKAGE_DIR / '_cuda'} and "
        f"{_PACKAGE_DIR.parent / 'cuda'}; reinstall the package"
    )


def cpu_twin_package() -> str:
    """The import name of the Numba twins: ``gpu_text._cpu_fallback`` when installed from a wheel,
    ``cpu_fallback`` in a source checkout. Only the backend imports it.

    >>> cpu_twin_package() in ("gpu_text._cpu_fallback", "cpu_fallback")
    True
    """
    return "gpu_text._cpu_fallback" if (_PACKAGE_DIR / "_cpu_fallback" / "__init__.py").is_file() else "cpu_fallback"


def kernel_source_path(family: str) -> Path:
    """Path of one kernel family's source, e.g. ``kernel_source_path("utf8")``.

    >>> kernel_source_path("utf8").name
    'utf8.cu'
    """
    path = kernel_source_dir() / f"{family}.cu"
    if not path.is_file():
        raise FileNotFoundError(f"no CUDA kernel family {family!r} ({path} does not exist)")
    return path


def kernel_families() -> list[str]:
    """Names of all kernel families (one ``.cu`` file each), sorted.

    >>> "utf8" in kernel_families()
    True
    """
    return sorted(p.stem for p in kernel_source_dir().glob("*.cu"))
