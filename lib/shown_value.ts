// How an error message shows a value a user passed: a plain `${value}` prints the
// string "0.1" and the number 0.1 alike, so the message "must be a number, got 0.1" hides
// the mistake. Numbers are shown as they are; anything else with its kind.

const MAX_SHOWN = 40;

function clipped(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}

export function shownValue(value: unknown): string {
  switch (typeof value) {
    case 'number':
      return String(value);
    case 'string':
      return `${clipped(JSON.stringify(value))} (a string)`;
    case 'bigint':
      return `${value}n (a bigint)`;
    case 'boolean':
      return `${value} (a boolean)`;
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    case 'symbol':
      return `${String(value)} (a symbol)`;
  }
  if (value === null) return 'null';
  if (ArrayBuffer.isView(value)) {
    const length = (value as { length?: number }).length ?? (value as ArrayBufferView).byteLength;
    return `a ${value.constructor.name} of length ${length}`;
  }
  if (Array.isArray(value)) {
    let text: string;
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = `[${value.length} items]`;
    }
    return `${clipped(text)} (an array)`;
  }
  const name = (value as object).constructor?.name;
  if (name && name !== 'Object') return `a ${name}`;
  let text: string;
  try {
    text = JSON.stringify(value) ?? 'an object';
  } catch {
    return 'an object';
  }
  return `${clipped(text)} (an object)`;
}
