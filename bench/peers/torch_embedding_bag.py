"""PyTorch's CPU embedding_bag on the shapes bench/embedding.bench.js uses.

Prints one JSON line: {"torch": version, "blas": torch_blas.blas_report(), "threads": n, "seconds": {"sum": median, "mean": median}}.
Run by the bench when /usr/bin/python3 has torch (Debian's python3-torch).
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

from torch_blas import blas_report

rows, dim, batch, hotness, iters, threads = (int(x) for x in sys.argv[1:7])
torch.set_num_threads(threads)
blas = blas_report()
generator = torch.Generator().manual_seed(1)
table = torch.rand(rows, dim, generator=generator)
batches = [torch.randint(0, rows, (batch, hotness), generator=generator) for _ in range(4)]

seconds = {}
for mode in ("sum", "mean"):
    for i in range(3):
        F.embedding_bag(batches[i % 4], table, mode=mode)
    times = []
    for i in range(iters):
        start = time.perf_counter()
        F.embedding_bag(batches[i % 4], table, mode=mode)
        times.append(time.perf_counter() - start)
    times.sort()
    seconds[mode] = times[len(times) // 2]
print(json.dumps({"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads(), "seconds": seconds}))
