#!/usr/bin/env bash
# A lent GPU machine's check of hb-ts in one call: the whole test suite on the GPU, then
# the GPU benches; or the GPU time of every CUDA kernel over a short DLRM run (Nsight
# Compute: the model's set-up and 3 steps): the sorts, scans and segment sums inside one
# plan kernel, which hb.profile times as a whole.
#
#   bash scripts/gpu-check.sh prepare         here, after a CUDA build (npm install with nvcc)
#                                             and the workplace's bundle of node, node_modules
#                                             and the addon in .gpu-bundle/: adds the shared
#                                             libraries the addon links that are not the C/C++
#                                             runtime's (Debian's libgloo and what it needs: a
#                                             GPU image has none of them) and this script.
#   bash .gpu-bundle/gpu-check.sh check       there: suite, then benches. Logs in $OUT (or
#                                             ./gpu-check-out): test.log, jest.json, bench.log,
#                                             records.jsonl (bench/report.js records), machine.json.
#   bash .gpu-bundle/gpu-check.sh profile [batch]   there: ncu.csv, one row per kernel shape.
#
# Limits (seconds): TEST_LIMIT (default 150), BENCH_LIMIT per bench (default 60), NCU_LIMIT (120).
# BENCHES='a.bench.js --opt 1;b.bench.js' picks the benches of `check`.
set -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=${1:-check}

if [ "$mode" = prepare ]; then
  [ -f .gpu-bundle/run.sh ] || { echo "no .gpu-bundle/run.sh: bundle first (see ../shared/gpu/README.md)" >&2; exit 1; }
  addon=$(find build/Release -name hb.node | head -1)
  [ -n "$addon" ] || { echo "no build/Release/hb.node: npm install first" >&2; exit 1; }
  mkdir -p .gpu-bundle/lib
  ldd "$addon" | awk '/=> \// { print $3 }' \
    | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
    | while read -r lib; do cp -L "$lib" .gpu-bundle/lib/; done
  cp "$0" .gpu-bundle/gpu-check.sh
  echo "bundled libraries: $(ls .gpu-bundle/lib | tr '\n' ' ')"
  exit 0
fi

out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The lent machines keep PyTorch with CUDA in a virtual environment that run.sh may miss.
[ -z "${HB_TORCH_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ] && export HB_TORCH_PYTHON=/opt/torch/.venv/bin/python3
start=$(date +%s)
in_bundle() { bash "$root/.gpu-bundle/run.sh" "$@"; }
elapsed() { echo "$(( $(date +%s) - start )) s"; }

case "$mode" in
  check)
    in_bundle node -e "console.log(JSON.stringify(require('.').backend()))" 2>&1 | tee "$out/backend.log"
    timeout -k 5 "${TEST_LIMIT:-150}" bash "$root/.gpu-bundle/run.sh" npx jest --maxWorkers=12 --json --outputFile="$out/jest.json" \
      > "$out/test.log" 2>&1
    echo "jest rc=$? after $(elapsed)"
    grep -E "passed, .* failed|CUDA tests" "$out/test.log"
    grep -E "^FAIL" "$out/test.log" | sort -u
    export HB_BENCH_RESULTS=$out/records.jsonl
    in_bundle node bench/machine.js 2>/dev/null | tail -1 > "$out/machine.json"
    # BENCHES: a ';'-separated list to run instead of the default four.
    IFS=';' read -r -a benches <<< "${BENCHES:-sparse_step.bench.js;dlrm_step.bench.js;dlrm_step.bench.js --batch 65536 --steps 10;embedding.bench.js}"
    for bench in "${benches[@]}"; do
      echo "=== $bench" | tee -a "$out/bench.log"
      # shellcheck disable=SC2086
      timeout -k 5 "${BENCH_LIMIT:-60}" bash "$root/.gpu-bundle/run.sh" node bench/$bench 2>&1 | grep -v '^node \|^GPU [0-9]' | tee -a "$out/bench.log"
      echo "rc=$? at $(elapsed)" | tee -a "$out/bench.log"
    done
    ;;
  profile)
    ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    [ -n "$ncu" ] || { echo "no ncu on this machine" >&2; exit 1; }
    timeout -k 5 "${NCU_LIMIT:-120}" bash "$root/.gpu-bundle/run.sh" "$ncu" --target-processes all --metrics gpu__time_duration.sum \
      --print-summary per-kernel --csv node bench/dlrm_one_step.js "${2:-65536}" > "$out/ncu.csv" 2> "$out/ncu.err"
    echo "ncu rc=$? after $(elapsed)"
    # The lent machine has node only inside the bundle.
    in_bundle node scripts/ncu_summary.js "$out/ncu.csv" 2>/dev/null | grep -v '^node \|^GPU [0-9]'
    ;;
  *)
    echo "usage: gpu-check.sh prepare | check | profile [batch]" >&2
    exit 1
    ;;
esac
