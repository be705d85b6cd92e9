/**
 * Query strings in bracket notation, as the API's clients send them: `order[0][field]=price`,
 * `adId[]=1&adId[]=2`, `a[b][c]=1`; a repeated plain name collects its values (`a=1&a=2`). Parsed the
 * way `qs` does (which the tests hold it to), in a few dozen lines instead of a library with twenty
 * dependencies: arrays from `[]` and from indices up to `arrayLimit` (compacted, in index order), keys
 * deeper than `depth` kept whole as one key, at most `parameterLimit` pairs read.
 */
export interface BracketQueryLimits {
  depth: number;
  arrayLimit: number;
  parameterLimit: number;
}

export type QueryValue = string | QueryValue[] | { [key: string]: QueryValue };

const DEFAULT_LIMITS: BracketQueryLimits = { depth: 5, arrayLimit: 1000, parameterLimit: 2000 };

/** A container being built: keys in order of arrival; `[]` appends under a generated key. */
interface Branch {
  keys: Map<string, Branch | string | string[]>;
  appended: number;
}

const APPENDED = "\u0000";
const INDEX = /^(0|[1-9]\d*)$/;

function decode(text: string): string {
  const spaced = text.replaceAll("+", " ");
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/** `a[b][]` → ["a", "b", ""]; segments past `depth` stay together as one key, brackets included. */
function segmentsOf(key: string, depth: number): string[] {
  const open = key.indexOf("[", 1);
  if (open < 0 || !key.slice(open).match(/^\[[^[\]]*\]/)) return [key];
  const segments = [key.slice(0, open)];
  let rest = key.slice(open);
  while (segments.length <= depth) {
    const match = /^\[([^[\]]*)\]/.exec(rest);
    if (!match) break;
    segments.push(match[1] as string);
    rest = rest.slice(match[0].length);
  }
  if (rest) segments.push(rest);
  return segments;
}

const branch = (): Branch => ({ keys: new Map(), appended: 0 });

function place(into: Branch, segments: string[], value: string): void {
  const [segment, ...rest] = segments as [string, ...string[]];
  const key = segment === "" ? `${APPENDED}${into.appended++}` : segment;
  const current = into.keys.get(key);
  if (rest.length > 0) {
    const child = current !== undefined && typeof current === "object" && !Array.isArray(current) ? current : branch();
    into.keys.set(key, child);
    place(child, rest, value);
    return;
  }
  if (current === undefined || (typeof current === "object" && !Array.isArray(current))) into.keys.set(key, value);
  else into.keys.set(key, Array.isArray(current) ? [...current, value] : [current, value]);
}

function finish(node: Branch | string | string[], arrayLimit: number, topLevel = false): QueryValue {
  if (typeof node === "string" || Array.isArray(node)) return node;
  const entries = [...node.keys.entries()];
  // The names of the query itself always make an object.
  const isArray =
    !topLevel && entries.every(([key]) => key.startsWith(APPENDED) || (INDEX.test(key) && Number(key) <= arrayLimit));
  if (isArray) {
    const indexed = entries.filter(([key]) => !key.startsWith(APPENDED)).sort(([a], [b]) => Number(a) - Number(b));
    const appended = entries.filter(([key]) => key.startsWith(APPENDED));
    return [...indexed, ...appended].map(([, value]) => finish(value, arrayLimit));
  }
  let position = 0;
  const object: Record<string, QueryValue> = {};
  for (const [key, value] of entries) {
    const name = key.startsWith(APPENDED) ? String(position++) : key;
    // Defined, not assigned: `__proto__` stays a name the caller sent (and strict input refuses it).
    Object.defineProperty(object, name, {
      value: finish(value, arrayLimit),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return object;
}

export function parseBracketQuery(
  search: string,
  limits: BracketQueryLimits = DEFAULT_LIMITS,
): Record<string, QueryValue> {
  const root = branch();
  const pairs = search.replace(/^\?/, "").split("&").slice(0, limits.parameterLimit);
  for (const pair of pairs) {
    if (!pair) continue;
    const equals = pair.indexOf("=");
    const key = decode(equals < 0 ? pair : pair.slice(0, equals));
    const value = equals < 0 ? "" : decode(pair.slice(equals + 1));
    if (!key) continue;
    place(root, segmentsOf(key, limits.depth), value);
  }
  return finish(root, limits.arrayLimit, true) as Record<string, QueryValue>;
}
