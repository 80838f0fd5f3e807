// What tells a file from another put under the same path since, or the same one rewritten:
// a rename over it brings another inode, a rewrite another size, mtime or ctime.
import type { Stats } from 'fs';

export function fileStamp(stat: Stats): string {
  return `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;
}
