"""A server started with an access token, from Python's gRPC client (Debian's
python3-grpcio): the token in `authorization` metadata, over plaintext on
loopback and over TLS; anonymous and wrong-token calls are UNAUTHENTICATED,
health and reflection included."""

import os
import subprocess

import grpc
import pytest

from conftest import CALL_TIMEOUT
from understudy.v1 import understudy_pb2
from understudy.v1 import understudy_pb2_grpc

TOKEN = "python-token-0123456789abcdef"


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    os.chmod(path, 0o600)
    return str(path)


@pytest.fixture
def certificate(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30)
    return str(cert), str(key)


def codes(channel, metadata):
    """The status code of ListSessions, StartRun and a health check."""
    out = []
    calls = [
        lambda: understudy_pb2_grpc.SessionsStub(channel).ListSessions(
            understudy_pb2.ListSessionsRequest(), metadata=metadata, timeout=CALL_TIMEOUT),
        lambda: understudy_pb2_grpc.RunsStub(channel).StartRun(
            understudy_pb2.StartRunRequest(mode=understudy_pb2.RUN_MODE_REPLAY,
                                           scenario="rate-limit"),
            metadata=metadata, timeout=CALL_TIMEOUT),
        lambda: channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=lambda _: b"",
                                    response_deserializer=lambda b: b)(
            None, metadata=metadata, timeout=CALL_TIMEOUT),
    ]
    for call in calls:
        try:
            call()
            out.append(grpc.StatusCode.OK)
        except grpc.RpcError as error:
            out.append(error.code())
    return out


UNAUTH = [grpc.StatusCode.UNAUTHENTICATED] * 3
OK = [grpc.StatusCode.OK] * 3


def test_token_over_loopback_plaintext(start_server, token_file):
    server = start_server(extra=("--auth-token-file", token_file))
    with grpc.insecure_channel(server.address) as channel:
        assert codes(channel, ()) == UNAUTH
        assert codes(channel, (("authorization", "Bearer wrong-token-0123456789"),)) == UNAUTH
        assert codes(channel, (("authorization", f"Bearer {TOKEN}"),)) == OK
        assert codes(channel, (("understudy-token", TOKEN),)) == OK
    assert TOKEN not in server.stderr()


def test_token_over_tls(start_server, token_file, certificate):
    cert, key = certificate
    server = start_server(extra=("--auth-token-file", token_file, "--tls-cert", cert, "--tls-key", key))
    with open(cert, "rb") as f:
        credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
    with grpc.secure_channel(server.address, credentials) as channel:
        assert codes(channel, ()) == UNAUTH
        assert codes(channel, (("authorization", f"Bearer {TOKEN}"),)) == OK
