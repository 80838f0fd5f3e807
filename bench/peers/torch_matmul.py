"""PyTorch's CPU matmul (torch.mm) on the shapes bench/matmul.bench.js uses.

Arguments: a JSON list of [transA, transB, M, N, K], iterations, threads. A transposed
operand is a transposed view of the stored matrix, as the graph stores it, so torch.mm
passes the transpose to its BLAS instead of copying. Prints one JSON line:
{"torch": version, "blas": torch_blas.blas_report(), "threads": n, "seconds": [median per shape]}.
"""
import json
import sys
import time

import torch

from torch_blas import blas_report

shapes = json.loads(sys.argv[1])
iters, threads = int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
blas = blas_report()
generator = torch.Generator().manual_seed(1)

seconds = []
for trans_a, trans_b, m, n, k in shapes:
    a = torch.rand((k, m) if trans_a else (m, k), generator=generator) * 2 - 1
    b = torch.rand((n, k) if trans_b else (k, n), generator=generator) * 2 - 1
    a = a.t() if trans_a else a
    b = b.t() if trans_b else b
    out = torch.empty(m, n)
    for _ in range(3):
        torch.mm(a, b, out=out)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        times.append(time.perf_counter() - start)
    times.sort()
    seconds.append(times[len(times) // 2])
print(json.dumps({"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads(), "seconds": seconds}))
