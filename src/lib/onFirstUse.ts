/**
 * A module imported on first use and kept for the isolate's life (src/index.ts: what an isolate's
 * startup runs). Once imported, calls take it as it is: no call awaits a promise another invocation
 * started, which workerd refuses where an import does I/O (the test pool's module runner).
 */
export function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: { module: T } | undefined;
  return async () => {
    loaded ??= { module: await load() };
    return loaded.module;
  };
}
