// The page cache around a file, for benches that time reads from disk and from memory.
'use strict';
const { spawnSync } = require('child_process');

/** Drops `file` from the page cache (clean pages only: call after fsync; GNU dd's nocache, posix_fadvise DONTNEED); whether it could. */
function dropFromPageCache(file) {
  const r = spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  return r.status === 0;
}

/** Reads all of `file` once, so that it lies in the page cache; whether it could. */
function readIntoPageCache(file) {
  const r = spawnSync('cat', [file], { stdio: ['ignore', 'ignore', 'ignore'] });
  return r.status === 0;
}

module.exports = { dropFromPageCache, readIntoPageCache };
