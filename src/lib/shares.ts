/**
 * Runs a batch's items in shares: items of one share (a client, an endpoint) at most `concurrency` at
 * once and in order, shares side by side, so one share's volume or slowness holds back only its own
 * items. `run` gets the item and its share's state (`newState()` once per share), through which an
 * item can tell the share's later items what happened. Answers one settled result per item, in order.
 */
export async function runInShares<T, S>(
  items: readonly T[],
  shareOf: (item: T) => number | string,
  concurrency: number,
  newState: () => S,
  run: (item: T, state: S) => Promise<void>,
): Promise<PromiseSettledResult<void>[]> {
  const results: PromiseSettledResult<void>[] = items.map(() => ({ status: "fulfilled", value: undefined }));
  const shares = new Map<number | string, number[]>();
  items.forEach((item, at) => {
    const key = shareOf(item);
    shares.set(key, [...(shares.get(key) ?? []), at]);
  });
  const runShare = async (waiting: number[]) => {
    const state = newState();
    const take = async () => {
      for (let at = waiting.shift(); at !== undefined; at = waiting.shift())
        await run(items[at] as T, state).catch((reason: unknown) => {
          results[at] = { status: "rejected", reason };
        });
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, waiting.length) }, take));
  };
  await Promise.all([...shares.values()].map(runShare));
  return results;
}
