"""The generated Python stubs of understudy's protos (proto package
`understudy.v1`): completion_pb2, understudy_pb2, understudy_pb2_grpc.

Installed from the wheel (clients/python/scripts/build-wheel.sh), the
package carries them in understudy_testing/_generated/understudy/v1 and uses
only those. A checkout of the repository has no _generated folder; there
they are looked for in this order, first match wins:

1. the folder named by UNDERSTUDY_PY_STUBS (put first on sys.path);
2. wherever `import understudy.v1` already works (on PYTHONPATH);
3. <repo>/build/python, where the CMake build generates them.

Importing this module raises ImportError naming the missing stub file when
none are found.
"""

import importlib
import os
import pathlib
import sys

_PACKAGE = pathlib.Path(__file__).resolve().parent
_BUNDLED = _PACKAGE / "_generated"
_REPO_STUBS = _PACKAGE.parents[2] / "build" / "python"
# What the wheel must carry, relative to _generated.
STUB_FILES = ("understudy/v1/understudy_pb2.py", "understudy/v1/understudy_pb2_grpc.py",
              "understudy/v1/completion_pb2.py")


def _bundled():
    """The bundled stub modules, or ImportError naming each file that is missing."""
    missing = [f for f in STUB_FILES if not (_BUNDLED / f).is_file()]
    if missing:
        raise ImportError(
            f"understudy_testing is installed without its generated stubs ({', '.join(missing)}): "
            f"not in {_BUNDLED}; install a wheel built by clients/python/scripts/build-wheel.sh")
    prefix = f"{__package__}._generated.understudy.v1"
    return tuple(importlib.import_module(f"{prefix}.{name}")
                 for name in ("completion_pb2", "understudy_pb2", "understudy_pb2_grpc"))


def _in_checkout():
    """The package sits in clients/python of an understudy repository."""
    return (_PACKAGE.parents[2] / "proto" / "understudy" / "v1" / "understudy.proto").is_file()


def _external():
    """The stubs as top-level `understudy.v1`, from UNDERSTUDY_PY_STUBS,
    sys.path or <repo>/build/python."""
    explicit = os.environ.get("UNDERSTUDY_PY_STUBS")
    if explicit and explicit not in sys.path:
        sys.path.insert(0, explicit)
    try:
        importlib.import_module("understudy.v1.understudy_pb2")
    except ImportError:
        if not explicit and _REPO_STUBS.is_dir() and str(_REPO_STUBS) not in sys.path:
            sys.path.insert(0, str(_REPO_STUBS))
    try:
        return tuple(importlib.import_module(f"understudy.v1.{name}")
                     for name in ("completion_pb2", "understudy_pb2", "understudy_pb2_grpc"))
    except ImportError as e:
        if not _in_checkout() and not explicit:
            # An installed package whose wheel lost its _generated folder.
            raise ImportError(
                f"understudy_testing is installed without its generated stubs ({STUB_FILES[0]}): "
                f"no {_BUNDLED}; install a wheel built by clients/python/scripts/build-wheel.sh, "
                "or set UNDERSTUDY_PY_STUBS to a folder holding understudy/v1") from e
        raise ImportError(
            "understudy_testing needs the generated stubs (package understudy.v1, "
            f"{STUB_FILES[0]}): build understudy and set UNDERSTUDY_PY_STUBS to its build/python "
            f"folder (looked in {explicit or _REPO_STUBS}: {e})") from e


completion_pb2, understudy_pb2, understudy_pb2_grpc = (
    _bundled() if _BUNDLED.is_dir() else _external())
