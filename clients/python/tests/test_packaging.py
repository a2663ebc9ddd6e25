"""The wheel: scripts/build-wheel.sh builds it with the generated stubs inside
and the pytest11 entry point, and an installed package without its stubs
says which file is missing. (packaging/verify/wheel.sh installs the wheel
in a clean venv and runs a smoke test with it.)
"""

import email.parser
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

CLIENT_DIR = pathlib.Path(__file__).resolve().parents[1]
REPO = CLIENT_DIR.parents[1]
BUILD_TIMEOUT = 120
STUBS = ("understudy/v1/understudy_pb2.py", "understudy/v1/understudy_pb2_grpc.py",
         "understudy/v1/completion_pb2.py")


def project_version():
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(understudy VERSION ([0-9.]+)", text).group(1)


def clean_env(**extra):
    """This environment without the variables that point at the checkout's stubs."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "UNDERSTUDY_PY_STUBS")}
    env.update(extra)
    return env


def import_outside_checkout(tmp_path, bundled=()):
    """Copies the package outside the checkout with the given bundled stub
    files (empty ones) and imports it there: (exit code, stderr)."""
    site = tmp_path / "site"
    shutil.copytree(CLIENT_DIR / "understudy_testing", site / "understudy_testing",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in bundled:
        path = site / "understudy_testing" / "_generated" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    done = subprocess.run([sys.executable, "-c", "import understudy_testing"],
                          cwd=tmp_path, env=clean_env(PYTHONPATH=str(site)),
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr


def test_installed_without_stubs_names_the_missing_module(tmp_path):
    code, stderr = import_outside_checkout(tmp_path)
    assert code != 0
    assert ("ImportError: understudy_testing is installed without its generated stubs "
            "(understudy/v1/understudy_pb2.py)") in stderr, stderr


def test_installed_with_some_stubs_names_the_missing_one(tmp_path):
    code, stderr = import_outside_checkout(tmp_path, bundled=STUBS[:1] + STUBS[2:])
    assert code != 0
    assert ("understudy_testing is installed without its generated stubs "
            "(understudy/v1/understudy_pb2_grpc.py)") in stderr, stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([str(CLIENT_DIR / "scripts" / "build-wheel.sh"), str(out)],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert done.returncode == 0, f"build-wheel.sh failed:\n{done.stderr}"
    path = pathlib.Path(done.stdout.strip().splitlines()[-1])
    assert path == out / f"understudy_testing-{project_version()}-py3-none-any.whl"
    return path


def test_the_wheel_carries_the_stubs_with_package_relative_imports(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for stub in STUBS:
            assert f"understudy_testing/_generated/{stub}" in names, sorted(names)
        grpc_stub = z.read("understudy_testing/_generated/understudy/v1/understudy_pb2_grpc.py")
    assert b"from . import understudy_pb2" in grpc_stub
    assert b"from understudy." not in grpc_stub
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")], sorted(names)


def test_the_wheel_registers_the_plugin_and_declares_its_dependencies(wheel):
    dist_info = f"understudy_testing-{project_version()}.dist-info"
    with zipfile.ZipFile(wheel) as z:
        entry_points = z.read(f"{dist_info}/entry_points.txt").decode()
        metadata = email.parser.Parser().parsestr(z.read(f"{dist_info}/METADATA").decode())
    assert ("[pytest11]\nunderstudy_testing.pytest_plugin = understudy_testing.pytest_plugin"
            in entry_points), entry_points
    assert metadata["Name"] == "understudy-testing"
    assert metadata["Version"] == project_version()
    requires = {re.split(r"[ (<>=]", r, maxsplit=1)[0] for r in metadata.get_all("Requires-Dist")}
    assert requires == {"grpcio", "protobuf", "pytest"}, metadata.get_all("Requires-Dist")


def test_building_the_wheel_leaves_the_checkout_unchanged(wheel):
    leftovers = [p for p in ("build", "understudy_testing.egg-info", "understudy_testing/_generated")
                 if (CLIENT_DIR / p).exists()]
    assert not leftovers, f"build-wheel.sh wrote into {CLIENT_DIR}: {leftovers}"


def test_the_installed_wheel_passes_packaging_verify_wheel_sh(wheel, tmp_path):
    """The wheel as a user installs it (packaging/verify/wheel.sh): a clean
    venv, plain pytest, and the README's pytest example verbatim against a
    recording that it leaves unchanged."""
    binary = os.environ.get("UNDERSTUDY_BIN")
    assert binary, "UNDERSTUDY_BIN: the understudy binary the sandbox's tests run"
    done = subprocess.run([str(REPO / "packaging" / "verify" / "wheel.sh"), str(wheel.parent),
                           str(tmp_path / "sandbox")],
                          env=clean_env(UNDERSTUDY_BIN=binary), capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the README's example passed as written: `python -m pytest --understudy-db golden.db" in done.stderr
