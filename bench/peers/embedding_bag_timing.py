"""The median time of F.embedding_bag over rotating batches, shared by the lookup peers."""
import time

import torch.nn.functional as F


def median_bag_seconds(table, batches, mode, iters, warmup):
    for i in range(warmup):
        F.embedding_bag(batches[i % len(batches)], table, mode=mode)
    times = []
    for i in range(iters):
        start = time.perf_counter()
        F.embedding_bag(batches[i % len(batches)], table, mode=mode)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]
