"""understudy_testing: a thin Python client for understudy's gRPC API, a
launcher for `understudy serve`, and pytest fixtures.

    from understudy_testing import Client, Server
    from understudy_testing import assertions as A

The generated stubs (package understudy.v1) must be importable: see
understudy_testing._stubs for where they are looked for.
"""

from . import assertions
from ._stubs import completion_pb2, understudy_pb2, understudy_pb2_grpc
from .client import MODES, Client, RunHandle, UnderstudyError
from .server import Server, find_binary

__all__ = [
    "Client", "RunHandle", "Server", "UnderstudyError", "MODES", "assertions", "find_binary",
    "completion_pb2", "understudy_pb2", "understudy_pb2_grpc",
]
