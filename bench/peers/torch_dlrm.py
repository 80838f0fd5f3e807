"""PyTorch's DLRM training step on the shapes bench/dlrm_step.bench.js uses.

nn.EmbeddingBag (sum, sparse gradients) per table, bottom and top MLPs, DLRM's dot
interaction, BCE-with-logits, Adagrad (sparse for the tables; initial accumulator 0.1
as hb-ts's). Ids: one per table and example, from the power law of hb-ts's
Dataset.synthetic (continuous power law with exponent alpha over the ranks, floored,
then a fixed permutation of the rows), so both sides update as many unique rows.
Arguments: num_dense num_tables rows dim batch iters threads bottom top [alpha=1.1]. The
device is HB_PEER_DEVICE's (the CPU without it); on a GPU each timed step ends with a synchronize.
Prints one JSON line: {"torch": version, "blas": torch_blas.blas_report(), "threads": n,
"seconds_per_step": median, "unique_rows": mean unique ids per table and step}.
"""
import json
import sys
import time

import torch
import torch.nn as nn

from torch_blas import blas_report, peer_device, synchronize

num_dense, num_tables, rows, dim, batch, iters, threads = (int(x) for x in sys.argv[1:8])
bottom = [int(x) for x in sys.argv[8].split(",")]
top = [int(x) for x in sys.argv[9].split(",")]
alpha = float(sys.argv[10]) if len(sys.argv) > 10 else 1.1
torch.set_num_threads(threads)
device = peer_device()
blas = blas_report()
torch.manual_seed(1)


def mlp(sizes, last_linear):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if not (last_linear and i == len(sizes) - 2):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


tables = nn.ModuleList([nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for _ in range(num_tables)])
bottom_mlp = mlp([num_dense] + bottom, False)
features = num_tables + 1
pairs = features * (features - 1) // 2
top_mlp = mlp([dim + pairs] + top, True)
tables.to(device)
bottom_mlp.to(device)
top_mlp.to(device)
li, lj = torch.tril_indices(features, features, offset=-1, device=device)
sparse_opt = torch.optim.Adagrad(list(tables.parameters()), lr=0.05, initial_accumulator_value=0.1)
dense_opt = torch.optim.Adagrad(list(bottom_mlp.parameters()) + list(top_mlp.parameters()), lr=0.05, initial_accumulator_value=0.1)
loss_fn = nn.BCEWithLogitsLoss()



def power_law_ids(n, permutation):
    """Dataset.synthetic's ids: rank = floor(x) - 1 with x drawn from a density ~ x^-alpha on [1, rows + 1)."""
    u = torch.rand(n, dtype=torch.float64)
    if alpha == 0:
        x = 1 + u * rows
    elif abs(alpha - 1) < 1e-9:
        x = torch.exp(u * torch.log(torch.tensor(rows + 1.0, dtype=torch.float64)))
    else:
        span = (rows + 1.0) ** (1 - alpha) - 1
        x = torch.exp(torch.log1p(u * span) / (1 - alpha))
    rank = (x.floor().long() - 1).clamp(0, rows - 1)
    return permutation[rank]


permutations = [torch.randperm(rows) for _ in range(num_tables)]
batches = []
for _ in range(4):
    dense = torch.rand(batch, num_dense)
    ids = [power_law_ids(batch, p) for p in permutations]
    offsets = torch.arange(batch)
    labels = torch.randint(0, 2, (batch, 1)).float()
    batches.append((dense.to(device), [i.to(device) for i in ids], offsets.to(device), labels.to(device)))


def step(b):
    dense, ids, offsets, labels = b
    x = bottom_mlp(dense)
    embs = [t(i, offsets) for t, i in zip(tables, ids)]
    t = torch.stack([x] + embs, dim=1)
    z = torch.bmm(t, t.transpose(1, 2))[:, li, lj]
    logits = top_mlp(torch.cat([x, z], dim=1))
    loss = loss_fn(logits, labels)
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss.backward()
    sparse_opt.step()
    dense_opt.step()


for i in range(2):
    step(batches[i % 4])
synchronize(device)
times = []
for i in range(iters):
    start = time.perf_counter()
    step(batches[i % 4])
    synchronize(device)
    times.append(time.perf_counter() - start)
times.sort()
unique_rows = sum(len(torch.unique(i)) for b in batches for i in b[1]) / (len(batches) * num_tables)
print(json.dumps({"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads(),
                  "seconds_per_step": times[len(times) // 2], "unique_rows": unique_rows}))
