"""PyTorch's CPU embedding_bag on the shapes bench/embedding.bench.js uses.

Prints one JSON line: {"torch": version, "blas": torch_blas.blas_report(), "threads": n, "seconds": {"sum": median, "mean": median}}.
Run by the bench when /usr/bin/python3 has torch (Debian's python3-torch).
"""
import json
import sys

import torch

from embedding_bag_timing import median_bag_seconds
from torch_blas import blas_report

rows, dim, batch, hotness, iters, threads = (int(x) for x in sys.argv[1:7])
torch.set_num_threads(threads)
blas = blas_report()
generator = torch.Generator().manual_seed(1)
table = torch.rand(rows, dim, generator=generator)
batches = [torch.randint(0, rows, (batch, hotness), generator=generator) for _ in range(4)]

seconds = {mode: median_bag_seconds(table, batches, mode, iters, 3) for mode in ("sum", "mean")}
print(json.dumps({"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads(), "seconds": seconds}))
