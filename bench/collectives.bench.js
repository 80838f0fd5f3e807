#!/usr/bin/env node
// hb.distribute's alltoallv and allreduce between 2 local processes, over shared memory
// (what ranks on one machine use) and over Gloo's TCP on loopback (HB_COMM_SHM=0), 1 KiB
// to 64 MiB per rank, next to a plain loopback TCP exchange of the same bytes between
// the same two processes (node's net sockets, both directions at once), interleaved in
// one run.
//
// Bandwidths are bytes that cross between the processes, per direction, per second:
// alltoallv of S bytes per rank sends S/2 to the peer (the other half stays), so the
// TCP baseline exchanges S/2 each way; allreduce is reported as S / time (its
// "algorithm bandwidth", as nccl-tests names it).
//
//   node bench/collectives.bench.js [--iters 20] [--max-mib 64]
// Run without RANK set it launches itself on 2 processes (hb.distribute.launch).
'use strict';
const net = require('net');
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { record } = require('./report');
const { freePort } = require('../dist/distribute/launch');
const { rendezvousFromEnv } = require('../dist/distribute/rendezvous_env');

const iters = option('iters', 20);
const maxMiB = option('max-mib', 64);
const d = hb.distribute;

function sizes() {
  const out = [];
  for (let bytes = 1024; bytes <= maxMiB * (1 << 20); bytes *= 16) out.push(bytes);
  if (out[out.length - 1] !== maxMiB * (1 << 20)) out.push(maxMiB * (1 << 20));
  return out;
}

// A duplex socket between the two ranks: rank 0 listens on loopback, rank 1 connects
// to the port rank 0 broadcasts.
async function connectPeers(rank) {
  let server;
  let port = 0;
  let accepted;
  if (rank === 0) {
    server = net.createServer();
    accepted = new Promise((resolve) => server.once('connection', resolve));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = server.address().port;
  }
  const shared = await d.broadcast(hb.tensor(new Int32Array([port]), [1]), { root: 0 });
  port = (await shared.data())[0];
  const socket = rank === 0 ? await accepted : net.connect(port, '127.0.0.1');
  if (rank !== 0) await new Promise((resolve) => socket.once('connect', resolve));
  socket.setNoDelay(true);
  const inbox = { received: 0, waiter: null };
  socket.on('data', (chunk) => {
    inbox.received += chunk.length;
    if (inbox.waiter && inbox.received >= inbox.waiter.bytes) {
      const w = inbox.waiter;
      inbox.waiter = null;
      inbox.received -= w.bytes;
      w.resolve();
    }
  });
  // Sends `bytes` and resolves once as many have arrived from the peer.
  const exchange = (payload) =>
    new Promise((resolve) => {
      const bytes = payload.length;
      if (inbox.received >= bytes) {
        inbox.received -= bytes;
        socket.write(payload, () => resolve());
        return;
      }
      let sent = false;
      let arrived = false;
      inbox.waiter = { bytes, resolve: () => ((arrived = true), sent && resolve()) };
      socket.write(payload, () => ((sent = true), arrived && resolve()));
    });
  return { exchange, close: () => (socket.destroy(), server && server.close()) };
}

// Times both transports of the 'gloo' backend: shared memory (the default for ranks on
// one machine) and Gloo's TCP (HB_COMM_SHM=0), each in a process group of its own.
async function measureTransport(rank, tcp) {
  const rows = [];
  for (const bytes of sizes()) {
    const floats = bytes / 4;
    const input = hb.tensor(new Float32Array(floats).fill(rank + 1), [floats]);
    const half = Buffer.alloc(bytes / 2, rank);
    const n = bytes >= 16 << 20 ? Math.max(3, Math.ceil(iters / 4)) : iters;
    const [alltoallv, allreduce, plain] = await timeInterleaved(
      [
        async () => (await d.alltoallv(input, [floats / 2, floats / 2])).tensor.dispose(),
        async () => (await d.allreduce(input)).dispose(),
        () => tcp.exchange(half),
      ],
      n,
      2,
    );
    rows.push({ bytes, alltoallv, allreduce, plain });
  }
  return rows;
}

async function worker() {
  const results = {};
  let tcp;
  let rendezvous = rendezvousFromEnv();
  for (const transport of ['shm', 'tcp']) {
    process.env.HB_COMM_SHM = transport === 'tcp' ? '0' : '1';
    const { rank, worldSize } = await d.init({ rendezvous });
    if (worldSize !== 2) throw new Error('collectives.bench.js runs on 2 processes');
    if (d.stats().transport !== transport) throw new Error(`asked for ${transport}, got ${d.stats().transport} (${d.stats().whyNotSharedMemory})`);
    tcp = tcp ?? (await connectPeers(rank));
    results[transport] = await measureTransport(rank, tcp);
    // The next group meets at a port of its own: this one's store may still be closing.
    const port = await d.broadcast(hb.tensor(new Int32Array([rank === 0 ? await freePort() : 0]), [1]), { root: 0 });
    rendezvous = { ...rendezvous, masterPort: (await port.data())[0] };
    await d.shutdown();
  }
  tcp.close();
  if (hb.distribute.context().rank !== 0) return;
  console.log(describeMachine(hb) + '; 2 processes, hb.distribute over shared memory and over Gloo (loopback TCP), and a plain loopback TCP exchange');
  const fmt = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);
  const us = (s) => (s * 1e6).toFixed(0);
  console.log('bytes/rank   alltoallv us: shm   gloo-tcp  (shm x)   allreduce us: shm   gloo-tcp  (shm x)   plain TCP us   shm alltoallv GB/s');
  results.shm.forEach((shm, i) => {
    const gloo = results.tcp[i];
    const plain = Math.min(shm.plain, gloo.plain);
    console.log(
      `${fmt(shm.bytes).padStart(10)}   ${us(shm.alltoallv).padStart(17)}   ${us(gloo.alltoallv).padStart(8)}  ${('x' + (gloo.alltoallv / shm.alltoallv).toFixed(2)).padStart(7)}   ${us(shm.allreduce).padStart(17)}   ${us(gloo.allreduce).padStart(8)}  ${('x' + (gloo.allreduce / shm.allreduce).toFixed(2)).padStart(7)}   ${us(plain).padStart(12)}   ${(shm.bytes / 2 / shm.alltoallv / 1e9).toFixed(3).padStart(18)}`,
    );
    // Bandwidth crossing between the processes, per direction (alltoallv keeps half).
    const plainBw = shm.bytes / 2 / plain;
    for (const [transport, row] of [['shared memory', shm], ['Gloo TCP', gloo]]) {
      const baselineName = 'plain loopback TCP exchange';
      record({ workload: `alltoallv, ${fmt(shm.bytes)}/rank, 2 processes, ${transport} vs TCP`, value: shm.bytes / 2 / row.alltoallv / 1e9, baseline: plainBw / 1e9, unit: 'GB/s', baselineName });
      record({ workload: `allreduce, ${fmt(shm.bytes)}/rank, 2 processes, ${transport} vs TCP`, value: shm.bytes / row.allreduce / 1e9, baseline: plainBw / 1e9, unit: 'GB/s', baselineName });
    }
  });
}

async function main() {
  if (process.env.RANK !== undefined) return worker();
  if (!hb.backend().gloo.available) {
    console.log(`collectives.bench.js: skipped, this build has no Gloo (${hb.backend().gloo.error})`);
    return;
  }
  const result = await d.launch({ nprocPerNode: 2, script: __filename, args: process.argv.slice(2) });
  process.exitCode = result.exitCode;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
