"""understudy_testing: a thin Python client for understudy's gRPC API, a
launcher for `understudy serve`, and pytest fixtures.

    from understudy_testing import Client, Server
    from understudy_testing import assertions as A

The generated stubs of understudy's protos are here too. The wheel carries
them; a checkout finds them in the build (see understudy_testing._stubs).
"""

from . import assertions
from ._stubs import completion_pb2, understudy_pb2, understudy_pb2_grpc
from .client import MODES, Client, RunHandle, UnderstudyError
from .server import Server, find_binary
from .verify_install import VerifyInstallResult, verify_install

__all__ = [
    "Client", "RunHandle", "Server", "UnderstudyError", "MODES", "assertions", "find_binary",
    "completion_pb2", "understudy_pb2", "understudy_pb2_grpc",
    "VerifyInstallResult", "verify_install",
]
