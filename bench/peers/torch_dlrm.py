"""PyTorch's CPU DLRM training step on the shapes bench/dlrm_step.bench.js uses.

nn.EmbeddingBag (sum, sparse gradients) per table, bottom and top MLPs, DLRM's dot
interaction, BCE-with-logits, Adagrad (sparse for the tables). Prints one JSON line:
{"torch": version, "threads": n, "seconds_per_step": median}.
"""
import json
import sys
import time

import torch
import torch.nn as nn

num_dense, num_tables, rows, dim, batch, iters, threads = (int(x) for x in sys.argv[1:8])
bottom = [int(x) for x in sys.argv[8].split(",")]
top = [int(x) for x in sys.argv[9].split(",")]
torch.set_num_threads(threads)
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
li, lj = torch.tril_indices(features, features, offset=-1)
sparse_opt = torch.optim.Adagrad(list(tables.parameters()), lr=0.05)
dense_opt = torch.optim.Adagrad(list(bottom_mlp.parameters()) + list(top_mlp.parameters()), lr=0.05)
loss_fn = nn.BCEWithLogitsLoss()

batches = []
for _ in range(4):
    dense = torch.rand(batch, num_dense)
    ids = [torch.randint(0, rows, (batch,)) for _ in range(num_tables)]
    offsets = torch.arange(batch)
    labels = torch.randint(0, 2, (batch, 1)).float()
    batches.append((dense, ids, offsets, labels))


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
times = []
for i in range(iters):
    start = time.perf_counter()
    step(batches[i % 4])
    times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "seconds_per_step": times[len(times) // 2]}))
