"""PyTorch's sparse training step on the shapes bench/sparse_step.bench.js uses.

nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) and torch.optim.Adagrad
(initial_accumulator_value 0.1, hb-ts's default; the learning rate is the bench's). A
step: the lookup, the backward of a loss that reads the output (sum of output x a fixed
upstream, so the gradient reaching the table is that upstream, as hb-ts's step uses),
and the optimizer step (sparse Adagrad on the rows seen).

Ids: the bench's exactly (mulberry32 from bench/workloads.js, seeds 1, 2, 3; the inverse
CDF of a continuous power law with exponent alpha over ranks 1..rows; the fixed
permutation rank -> (rank - 1) * 2654435761 mod rows), `features` per example.

Arguments: rows dim batch features alpha iters threads lr. The device is HB_PEER_DEVICE's
(bench/torch_peer.js sets it; the CPU without it): on a GPU everything lives there and each
timed step ends with a synchronize.
Prints one JSON line: {"torch": version, "blas": torch_blas.blas_report(), "threads": n,
"seconds_per_step": median, "unique_rows": mean unique ids per step}.
"""
import json
import math
import sys
import time

import torch
import torch.nn as nn

from torch_blas import blas_report, peer_device, synchronize

rows, dim, batch, features = (int(x) for x in sys.argv[1:5])
alpha = float(sys.argv[5])
iters, threads = int(sys.argv[6]), int(sys.argv[7])
lr = float(sys.argv[8])
torch.set_num_threads(threads)
device = peer_device()
blas = blas_report()
torch.manual_seed(1)


def mulberry32(seed):
    state = seed & 0xFFFFFFFF

    def next_uniform():
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & 0xFFFFFFFF
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & 0xFFFFFFFF)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return next_uniform


def power_law_ids(n, seed):
    random = mulberry32(seed)
    top = math.pow(rows, 1 - alpha)
    exponent = 1 / (1 - alpha)
    ids = [0] * n
    for i in range(n):
        rank = min(rows, math.floor(math.pow(1 + (top - 1) * random(), exponent)))
        ids[i] = (rank - 1) * 2654435761 % rows
    return torch.tensor(ids, dtype=torch.int64, device=device)


bag = nn.EmbeddingBag(rows, dim, mode="sum", sparse=True, device=device)
with torch.no_grad():
    nn.init.trunc_normal_(bag.weight, std=0.01, a=-0.02, b=0.02)
optimizer = torch.optim.Adagrad(bag.parameters(), lr=lr, initial_accumulator_value=0.1)
upstream = torch.rand(batch, dim, device=device) * 2 - 1
offsets = torch.arange(0, batch * features, features, dtype=torch.int64, device=device)
batches = [power_law_ids(batch * features, seed) for seed in (1, 2, 3)]


def step(ids):
    optimizer.zero_grad(set_to_none=True)
    out = bag(ids, offsets)
    loss = (out * upstream).sum()
    loss.backward()
    optimizer.step()


for i in range(2):
    step(batches[i % len(batches)])
synchronize(device)
times = []
for i in range(iters):
    start = time.perf_counter()
    step(batches[i % len(batches)])
    synchronize(device)
    times.append(time.perf_counter() - start)
times.sort()
unique_rows = sum(len(torch.unique(b)) for b in batches) / len(batches)
print(json.dumps({"torch": torch.__version__, "blas": blas, "threads": torch.get_num_threads(),
                  "seconds_per_step": times[len(times) // 2], "unique_rows": unique_rows}))
