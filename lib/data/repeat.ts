// Dataset.repeat: passes over the upstream dataset one after another, as one stream (a
// batch after it may hold rows of two passes, as tf.data's repeat().batch() does).
export async function* repeatPasses<T>(upstream: AsyncIterable<T>, count: number): AsyncGenerator<T> {
  for (let pass = 0; pass < count; pass++) {
    let any = false;
    for await (const element of upstream) {
      any = true;
      yield element;
    }
    // An empty dataset repeated forever would spin without yielding: it ends, as tf.data's does.
    if (!any) return;
  }
}
