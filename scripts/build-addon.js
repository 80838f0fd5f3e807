#!/usr/bin/env node
// Builds the native addon; `npm install` runs it.
//
//   node scripts/build-addon.js [--force] [--tool cmake-js|node-gyp] [--out DIR]
//
// - A package that ships prebuilds/<platform>-<arch>/*.node that loads here is not
//   compiled (unless --force or HB_BUILD_FROM_SOURCE=1).
// - cmake-js (CMakeLists.txt) is the main build: CPU + CUDA when nvcc is found
//   (HB_CUDA=AUTO|ON|OFF, HB_CUDA_ARCHS="80;90"; HB_CUDA_EMULATE=ON runs the CUDA
//   kernels on an emulated device, for testing them without a GPU).
// - Without cmake, node-gyp builds the CPU-only addon from binding.gyp.
// Env HB_BUILD_TOOL chooses the tool like --tool.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.resolve(__dirname, '..');
const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const force = args.includes('--force') || process.env.HB_BUILD_FROM_SOURCE === '1';

function log(message) {
  console.log(`hb-ts: ${message}`);
}

// A prebuild serves only when it loads here and matches what HB_CUDA asks for: the
// prebuilds are CUDA-compiled unless made with HB_CUDA=OFF, and `HB_CUDA=OFF npm install`
// must give a CPU-only addon, `HB_CUDA=ON` a CUDA one.
function loadablePrebuild() {
  const dir = path.join(root, 'prebuilds', `${os.platform()}-${os.arch()}`);
  if (!fs.existsSync(dir)) return null;
  // Prebuilds never emulate CUDA: HB_CUDA_EMULATE=ON asks for a build from source.
  if ((process.env.HB_CUDA_EMULATE || 'OFF').toUpperCase() === 'ON') return null;
  const wanted = (process.env.HB_CUDA || 'AUTO').toUpperCase();
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.node'))) {
    const candidate = path.join(dir, file);
    let addon;
    try {
      addon = require(candidate);
    } catch (error) {
      log(`prebuild ${candidate} does not load here (${error.message}); building from source`);
      continue;
    }
    const cuda = Boolean(addon.backendReport?.().cuda?.compiled);
    if ((wanted === 'OFF' && cuda) || (wanted === 'ON' && !cuda)) {
      log(`prebuild ${path.relative(root, candidate)} is ${cuda ? 'CUDA' : 'CPU-only'}-compiled but HB_CUDA=${wanted}; building from source`);
      continue;
    }
    return candidate;
  }
  return null;
}

function hasCmake() {
  const result = spawnSync('cmake', ['--version'], { stdio: 'ignore' });
  return result.status === 0;
}

function run(command, commandArgs, env) {
  log(`${command} ${commandArgs.join(' ')}`);
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    console.error(`hb-ts: the addon build failed (${command} exited with ${result.status})`);
    process.exit(result.status || 1);
  }
}

function nodeGypScript() {
  // npm sets npm_config_node_gyp to its bundled node-gyp in lifecycle scripts.
  const candidates = [process.env.npm_config_node_gyp];
  if (process.env.npm_execpath) {
    candidates.push(path.join(path.dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  }
  try {
    candidates.push(require.resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    // not installed locally
  }
  const npmRoot = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout;
  if (npmRoot) candidates.push(path.join(npmRoot.trim(), 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  return candidates.find((c) => c && fs.existsSync(c));
}

// Inside a user's node_modules the object files and CMake's cache are tens of MB that
// nothing reads again (a rebuild starts over); a development checkout keeps them for
// incremental builds.
function installedAsDependency() {
  return root.split(path.sep).includes('node_modules');
}

function keepOnlyAddon(buildDir) {
  for (const entry of fs.readdirSync(buildDir)) {
    if (entry !== 'Release') fs.rmSync(path.join(buildDir, entry), { recursive: true, force: true });
  }
  const release = path.join(buildDir, 'Release');
  for (const entry of fs.readdirSync(release)) {
    if (entry !== 'hb.node') fs.rmSync(path.join(release, entry), { recursive: true, force: true });
  }
  log(`removed the build's intermediate files (kept ${path.relative(root, path.join(release, 'hb.node'))})`);
}

function main() {
  if (!force) {
    const prebuild = loadablePrebuild();
    if (prebuild) {
      log(`using prebuilt addon ${path.relative(root, prebuild)}`);
      return;
    }
  }
  const tool = option('--tool') || process.env.HB_BUILD_TOOL || (hasCmake() ? 'cmake-js' : 'node-gyp');
  if (!force) {
    // npm install shows nothing else for minutes while the addon compiles.
    log('compiling the native addon from source (a few minutes; CUDA kernels add more when nvcc is found).');
    log('a package carrying prebuilds/ (npm run prebuild) installs without this step.');
  }
  const jobs = String(Math.max(1, os.cpus().length));
  if (tool === 'cmake-js') {
    const out = option('--out') || 'build';
    const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
    const extra = [];
    if (process.env.HB_CUDA) extra.push(`--CDHB_CUDA=${process.env.HB_CUDA}`);
    if (process.env.HB_CUDA_ARCHS) extra.push(`--CDHB_CUDA_ARCHS=${process.env.HB_CUDA_ARCHS}`);
    // `cmake-js build` configures only a fresh build folder, so a switch changed on
    // an existing checkout (HB_CUDA=OFF, HB_GLOO, a newly installed libgloo-dev)
    // would be ignored: configure every time (cheap), then let the build tool
    // recompile only what the new settings change.
    run(process.execPath, [cmakeJs, 'configure', '--out', out, ...extra]);
    run(process.execPath, [cmakeJs, 'build', '--out', out, '--parallel', jobs, ...extra]);
    log(`built ${path.join(out, 'Release', 'hb.node')}`);
    if (installedAsDependency()) keepOnlyAddon(path.join(root, out));
  } else if (tool === 'node-gyp') {
    if (option('--out')) throw new Error('--out is not supported with node-gyp (it always builds into build/)');
    const script = nodeGypScript();
    if (!script) throw new Error('neither cmake nor node-gyp was found: install cmake (recommended) or node-gyp');
    log('cmake not found or not chosen: building the CPU-only addon with node-gyp');
    const gypArgs = [script, 'rebuild', `--jobs=${jobs}`];
    // Outside npm, node-gyp would download headers; Node's own install has them.
    const nodeDir = path.dirname(path.dirname(process.execPath));
    if (!process.env.npm_config_nodedir && fs.existsSync(path.join(nodeDir, 'include', 'node', 'node_api.h'))) {
      gypArgs.push(`--nodedir=${nodeDir}`);
    }
    run(process.execPath, gypArgs);
    log('built build/Release/hb.node (CPU only)');
  } else {
    throw new Error(`unknown build tool '${tool}' (expected cmake-js or node-gyp)`);
  }
}

main();
