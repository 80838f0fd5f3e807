"""PyTorch's CPU embedding_bag on every cell of bench/lookup_grid.bench.js.

argv: rows, iters, threads, then the cells as one JSON list of [dim, batch, hotness, ids]
(ids: "uniform" or "powerlaw", drawn as the bench draws them: x = rows^u - 1, u uniform),
then the calls made before timing each cell (default 2).
Prints one JSON line: {"torch", "blas", "threads", "seconds": [[sum, mean] per cell]}.
"""
import json
import sys

import torch

from embedding_bag_timing import median_bag_seconds
from torch_blas import blas_report

rows, iters, threads = (int(x) for x in sys.argv[1:4])
cells = json.loads(sys.argv[4])
warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 2
torch.set_num_threads(threads)
blas = blas_report()
generator = torch.Generator().manual_seed(1)
tables = {}


def ids_of(kind, batch, hotness):
    if kind == "uniform":
        return torch.randint(0, rows, (batch, hotness), generator=generator)
    u = torch.rand(batch, hotness, generator=generator, dtype=torch.float64)
    return torch.clamp(torch.floor(torch.pow(float(rows), u) - 1), 0, rows - 1).to(torch.int64)


seconds = []
for dim, batch, hotness, kind in cells:
    if dim not in tables:
        tables[dim] = torch.rand(rows, dim, generator=generator)
    table = tables[dim]
    batches = [ids_of(kind, batch, hotness) for _ in range(4)]
    cell = [median_bag_seconds(table, batches, mode, iters, warmup) for mode in ("sum", "mean")]
    seconds.append(cell)
print(json.dumps({"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads(), "seconds": seconds}))
