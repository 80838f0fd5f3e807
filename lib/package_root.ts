// Where hb-ts's own package.json is: the addon and the version are found from there,
// whether the compiled files run from dist/ or from a copy elsewhere (examples, benches).
import * as path from 'path';

export function packageRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      if ((require(path.join(dir, 'package.json')) as { name?: string }).name === 'hb-ts') return dir;
    } catch {
      // no package.json here
    }
    if (path.dirname(dir) === dir) return path.resolve(__dirname, '..');
  }
}

/** hb-ts's version, as its package.json says. */
export function packageVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(path.join(packageRoot(), 'package.json')) as { version: string }).version;
}
