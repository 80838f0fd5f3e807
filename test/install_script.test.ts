// scripts/build-addon.js, which `npm install` runs, as it decides between a shipped
// prebuild and a build from source: HB_CUDA must take effect on a package that carries
// prebuilds (HB_CUDA=OFF never loads a CUDA-compiled one, ON never a CPU-only one).
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const root = path.resolve(__dirname, '..');
const addonPath = path.resolve(root, process.env.HB_ADDON ?? path.join('build', 'Release', 'hb.node'));
// The addon CI tests is CUDA-compiled in one run and CPU-only in another: the prebuild
// below is a copy of it, so what it is decides what each HB_CUDA must do.
const prebuildIsCuda = Boolean((require(addonPath) as { backendReport(): { cuda: { compiled: boolean } } }).backendReport().cuda.compiled);

describe('npm install with prebuilds/', () => {
  let pkg: string;
  beforeAll(() => {
    pkg = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-install-'));
    fs.mkdirSync(path.join(pkg, 'scripts'));
    fs.copyFileSync(path.join(root, 'scripts', 'build-addon.js'), path.join(pkg, 'scripts', 'build-addon.js'));
    const dir = path.join(pkg, 'prebuilds', `${os.platform()}-${os.arch()}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(addonPath, path.join(dir, 'hb-ts.node'));
  });
  afterAll(() => fs.rmSync(pkg, { recursive: true, force: true }));

  // An unknown build tool makes a build from source fail at once, so each case shows
  // which way the script went without compiling anything.
  const install = (hbCuda: string | undefined) => {
    const env: NodeJS.ProcessEnv = { ...process.env, HB_BUILD_TOOL: 'none' };
    delete env.HB_CUDA;
    delete env.HB_BUILD_FROM_SOURCE;
    if (hbCuda !== undefined) env.HB_CUDA = hbCuda;
    const r = spawnSync(process.execPath, [path.join(pkg, 'scripts', 'build-addon.js')], { cwd: pkg, encoding: 'utf8', env, timeout: 60_000 });
    return { usedPrebuild: r.status === 0 && /using prebuilt addon/.test(r.stdout), out: r.stdout + r.stderr };
  };

  test('without HB_CUDA the prebuild is used', () => {
    const r = install(undefined);
    expect(r.out).toMatch(/using prebuilt addon prebuilds\/.*hb-ts\.node/);
    expect(r.usedPrebuild).toBe(true);
  });

  test('HB_CUDA=OFF skips a CUDA prebuild and HB_CUDA=ON a CPU-only one, saying why', () => {
    const off = install('OFF');
    const on = install('ON');
    expect(off.usedPrebuild).toBe(!prebuildIsCuda);
    expect(on.usedPrebuild).toBe(prebuildIsCuda);
    const refused = prebuildIsCuda ? off : on;
    expect(refused.out).toMatch(new RegExp(`is ${prebuildIsCuda ? 'CUDA' : 'CPU-only'}-compiled but HB_CUDA=${prebuildIsCuda ? 'OFF' : 'ON'}; building from source`));
    expect(refused.out).toMatch(/compiling the native addon from source/);
    expect(refused.out).toMatch(/unknown build tool 'none'/);
  });
});
