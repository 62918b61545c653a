"""Which build of the C ABI relay loads for torch's build: librelay_c_hip for a ROCm torch
(torch.version.hip), librelay_c_cuda for a CUDA torch (torch.version.cuda), with stand-ins for
torch.version; and the error naming a missing library and the command that builds it."""

import os
import types

import pytest

from relay import _capi

ROCM = types.SimpleNamespace(hip="6.2.41133", cuda=None)
CUDA = types.SimpleNamespace(hip=None, cuda="12.4")
CPU = types.SimpleNamespace(hip=None, cuda=None)


@pytest.fixture
def fresh(monkeypatch):
    """No library loaded yet in this test (the package keeps each one it loads)."""
    monkeypatch.setattr(_capi, "_loaded", {})


def test_torchs_build_picks_the_kind():
    assert _capi.device_kind(ROCM) == "hip"
    assert _capi.device_kind(CUDA) == "cuda"
    # A ROCm torch reports a CUDA version too on some builds: hip decides.
    assert _capi.device_kind(types.SimpleNamespace(hip="6.2", cuda="12.4")) == "hip"
    with pytest.raises(ImportError) as e:
        _capi.device_kind(CPU)
    assert "neither CUDA nor ROCm" in str(e.value)


def test_the_device_library_is_the_one_matching_torch(fresh, monkeypatch, tmp_path):
    # Both GPU builds stand in as links to the host library (the same symbols): which file
    # loads is what is checked.
    host = _capi.library("host").path
    _capi._loaded.clear()
    for name in ("librelay_c_hip.so", "librelay_c_cuda.so"):
        os.symlink(host, tmp_path / name)
    monkeypatch.setenv("RELAY_C_LIBRARY_DIR", str(tmp_path))
    assert _capi.library("device", ROCM).path == str(tmp_path / "librelay_c_hip.so")
    assert _capi.library("device", CUDA).path == str(tmp_path / "librelay_c_cuda.so")
    assert _capi.library("hip").path == str(tmp_path / "librelay_c_hip.so")


@pytest.mark.parametrize(
    "version,name,target,where",
    [
        (ROCM, "librelay_c_hip.so", "relay_c_hip", "a HIP compiler"),
        (CUDA, "librelay_c_cuda.so", "relay_c_cuda", "nvcc"),
    ],
)
def test_a_missing_library_is_named_with_its_build_command(
    fresh, monkeypatch, tmp_path, version, name, target, where
):
    monkeypatch.setenv("RELAY_C_LIBRARY_DIR", str(tmp_path))  # holds nothing
    monkeypatch.setattr(_capi, "_search_dirs", lambda: [str(tmp_path)])
    with pytest.raises(ImportError) as e:
        _capi.library("device", version)
    text = str(e.value)
    assert name in text
    assert f"built where {where}" in text
    assert "pip install --no-build-isolation ./python" in text
    assert f"--target {target}" in text
    assert str(tmp_path) in text
