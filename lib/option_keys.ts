// Options objects from plain JavaScript: a misspelt key (`saveCheckpointSteps`,
// `max_steps`, `labelFeild`) would otherwise be ignored without a word, and the run
// would quietly use a default. Every public options object is checked here.

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

// snake_case and case differences are the common slips of users coming from Python.
const normalized = (key: string) => key.replace(/_/g, '').toLowerCase();

/** The known key `key` was most likely meant as, if one is close. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = normalized(candidate) === normalized(key) ? 0 : editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 4)) ? best : undefined;
}

/**
 * Throws an Error naming `owner` for every key of `options` that is not in `known`,
 * with the key it was likely meant as and the full list.
 */
export function checkOptionKeys(options: unknown, known: readonly string[], owner: string): void {
  if (options === null || typeof options !== 'object') return;
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length === 0) return;
  const described = unknown.map((key) => {
    const meant = closestKey(key, known);
    return meant ? `'${key}' (did you mean '${meant}'?)` : `'${key}'`;
  });
  throw new Error(`${owner}: unknown option${unknown.length > 1 ? 's' : ''} ${described.join(', ')}; it takes ${known.map((k) => `'${k}'`).join(', ')}`);
}
