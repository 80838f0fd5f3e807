#!/usr/bin/env node
// hb.distribute's alltoallv and allreduce between 2 local processes over Gloo (TCP on
// loopback), 1 KiB to 64 MiB per rank, next to a plain loopback TCP exchange of the
// same bytes between the same two processes (node's net sockets, both directions at
// once), interleaved in one run.
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

async function worker() {
  const { rank, worldSize } = await d.init();
  if (worldSize !== 2) throw new Error('collectives.bench.js runs on 2 processes');
  const tcp = await connectPeers(rank);
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
  tcp.close();
  if (rank === 0) {
    console.log(describeMachine(hb) + '; 2 processes over Gloo (loopback TCP)');
    const fmt = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`);
    const gbps = (bytes, s) => (bytes / s / 1e9).toFixed(3);
    console.log('bytes/rank   alltoallv GB/s  (x tcp)   allreduce GB/s  (x tcp)   plain TCP GB/s   alltoallv us   allreduce us   tcp us');
    for (const r of rows) {
      const tcpBw = r.bytes / 2 / r.plain;
      const a2a = r.bytes / 2 / r.alltoallv;
      const ar = r.bytes / r.allreduce;
      console.log(
        `${fmt(r.bytes).padStart(10)}   ${gbps(r.bytes / 2, r.alltoallv).padStart(14)}  ${('x' + (a2a / tcpBw).toFixed(2)).padStart(7)}   ${gbps(r.bytes, r.allreduce).padStart(14)}  ${('x' + (ar / tcpBw).toFixed(2)).padStart(7)}   ${gbps(r.bytes / 2, r.plain).padStart(14)}   ${(r.alltoallv * 1e6).toFixed(0).padStart(12)}   ${(r.allreduce * 1e6).toFixed(0).padStart(12)}   ${(r.plain * 1e6).toFixed(0).padStart(6)}`,
      );
      const tcp = 'plain loopback TCP exchange';
      record({ workload: `alltoallv, ${fmt(r.bytes)}/rank, 2 processes vs TCP`, value: a2a / 1e9, baseline: tcpBw / 1e9, unit: 'GB/s', baselineName: tcp });
      record({ workload: `allreduce, ${fmt(r.bytes)}/rank, 2 processes vs TCP`, value: ar / 1e9, baseline: tcpBw / 1e9, unit: 'GB/s', baselineName: tcp });
    }
  }
  await d.shutdown();
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
