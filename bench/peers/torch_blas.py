"""Which BLAS this process's torch runs on, for the PyTorch peers of the benches.

blas_report() returns a dict the peers put under "blas" in their JSON line:
  build:     BLAS_INFO / LAPACK_INFO from torch.__config__.show() (what torch was built against)
  libraries: the BLAS libraries mapped into this process after a torch.mm (/proc/self/maps)
  library:   the one that matters (OpenBLAS / MKL / BLIS before a plain libblas)
  kind:      openblas | mkl | blis | atlas | reference | builtin | unknown | cublas (HB_PEER_DEVICE=cuda)
  config, core: openblas_get_config() / openblas_get_corename() for OpenBLAS (MKL, BLIS: version)
  coretype_env: OPENBLAS_CORETYPE as this process saw it (None on a user's machine)
  capability: the vector code of torch's own CPU kernels ("CPU capability usage" in
             torch.__config__.show(): AVX512, AVX2, DEFAULT; ATEN_CPU_CAPABILITY caps it)
A Debian python3-torch is built with BLAS_INFO=generic and links libblas.so.3, which is
whatever update-alternatives points at: the reference netlib BLAS (package libblas3) or
OpenBLAS (libopenblas0-pthread), BLIS, ATLAS.
"""
import ctypes
import os
import re

import torch

_BLAS_FILE = re.compile(r"/lib(openblas|blas|cblas|mkl|blis|atlas|satlas|tatlas)[^/]*\.so")
_OPTIMIZED_BUILD = ("mkl", "open", "blis", "accelerate", "flame", "atlas", "eigen")


def _build_info():
    info = {}
    for key in ("BLAS_INFO", "LAPACK_INFO"):
        match = re.search(key + r"=([^,\s]+)", torch.__config__.show())
        info[key] = match.group(1) if match else None
    return info


def _mapped_blas():
    paths = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                if _BLAS_FILE.search(path) and path not in paths:
                    paths.append(path)
    return paths


def _kind(path):
    name = os.path.basename(path)
    if "openblas" in name:
        return "openblas"
    if "mkl" in name:
        return "mkl"
    if "blis" in name or "/blis" in path:
        return "blis"
    if "atlas" in name or "/atlas/" in path:
        return "atlas"
    if "/openblas" in path:
        return "openblas"  # Debian's openblas-pthread/libblas.so.3 wrapper
    return "reference"


def _string_call(library, names):
    try:
        handle = ctypes.CDLL(library)
    except OSError:
        return None
    for name in names:
        fn = getattr(handle, name, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            value = fn()
            return value.decode(errors="replace").strip() if value else None
    return None


def peer_device():
    """The device the peer runs on: HB_PEER_DEVICE (set by bench/torch_peer.js), else the CPU."""
    return torch.device(os.environ.get("HB_PEER_DEVICE", "cpu"))


def synchronize(device):
    """Waits for the device's queued work, so a timer read after it counts that work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _cpu_capability():
    match = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return match.group(1) if match else None


def blas_report():
    device = peer_device()
    if device.type == "cuda":
        # On a GPU torch's matrix products run on cuBLAS whatever the CPU BLAS is.
        return {
            "build": _build_info(),
            "libraries": [],
            "library": None,
            "kind": "cublas",
            "config": "cuBLAS (CUDA %s) on %s" % (torch.version.cuda, torch.cuda.get_device_name(device)),
            "core": None,
            "coretype_env": None,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        }
    a = torch.rand(256, 256)
    torch.mm(a, a)  # loads and runs the BLAS (lazily bound libraries show up afterwards)
    build = _build_info()
    libraries = _mapped_blas()
    ranked = sorted(libraries, key=lambda p: ["openblas", "mkl", "blis", "atlas", "reference"].index(_kind(p)))
    library = ranked[0] if ranked else None
    kind = _kind(library) if library else None
    config = core = None
    if kind == "openblas":
        for path in ranked:
            config = config or _string_call(path, ["openblas_get_config"])
            core = core or _string_call(path, ["openblas_get_corename"])
    elif kind == "mkl":
        buf = ctypes.create_string_buffer(256)
        try:
            ctypes.CDLL(library).MKL_Get_Version_String(buf, 256)
            config = buf.value.decode(errors="replace").strip()
        except (OSError, AttributeError):
            pass
    elif kind == "blis":
        config = _string_call(library, ["bli_info_get_version_str"])
        config = "BLIS " + config if config else None
    if kind is None:
        # Nothing mapped: a BLAS linked into libtorch itself (pip wheels: MKL) or none at all
        # (BLAS_INFO=generic: torch's own loops, slower than the reference BLAS).
        built = (build["BLAS_INFO"] or "").lower()
        kind = "builtin" if any(b in built for b in _OPTIMIZED_BUILD) else "unknown"
        config = "linked into libtorch (BLAS_INFO=%s)" % build["BLAS_INFO"]
    return {
        "build": build,
        "libraries": libraries,
        "library": os.path.realpath(library) if library else None,
        "kind": kind,
        "config": config,
        "core": core,
        "coretype_env": os.environ.get("OPENBLAS_CORETYPE"),
        "capability": _cpu_capability(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


if __name__ == "__main__":
    # The probe bench/torch_peer.js runs before a peer: which core OpenBLAS picks on its own.
    import json

    print(json.dumps({"torch": torch.__version__, "blas": blas_report()}))
