import { sha256Hex } from "./crypto";

/**
 * AES-GCM encryption of secrets at rest (portal OAuth tokens). The key is TOKEN_ENCRYPTION_KEY (base64,
 * 32 bytes); during a rotation TOKEN_ENCRYPTION_KEY_PREVIOUS still opens what it sealed. A sealed value
 * names its key (`v2.<key id>.<iv>.<data>`, the id being the first 8 hex digits of the key's SHA-256),
 * so what still needs re-sealing can be found; `v1.<iv>.<data>` values (before key ids) are tried with
 * both keys.
 */
export interface TokenKeys {
  TOKEN_ENCRYPTION_KEY?: string;
  TOKEN_ENCRYPTION_KEY_PREVIOUS?: string;
}

interface Key {
  id: string;
  crypto: CryptoKey;
}

const imported = new Map<string, Promise<Key>>();

function importKey(base64Key: string): Promise<Key> {
  let cached = imported.get(base64Key);
  if (!cached) {
    const raw = Uint8Array.from(atob(base64Key), (c) => c.charCodeAt(0));
    if (raw.byteLength !== 32) throw new Error("TOKEN_ENCRYPTION_KEY must be 32 bytes, base64");
    cached = Promise.all([
      sha256Hex(base64Key),
      crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]),
    ]).then(([hash, key]) => ({ id: hash.slice(0, 8), crypto: key }));
    imported.set(base64Key, cached);
  }
  return cached;
}

function currentKey(keys: TokenKeys): Promise<Key> {
  if (!keys.TOKEN_ENCRYPTION_KEY) throw new Error("TOKEN_ENCRYPTION_KEY is not set");
  return importKey(keys.TOKEN_ENCRYPTION_KEY);
}

const allKeys = (keys: TokenKeys) =>
  Promise.all(
    [keys.TOKEN_ENCRYPTION_KEY, keys.TOKEN_ENCRYPTION_KEY_PREVIOUS]
      .filter((k): k is string => Boolean(k))
      .map(importKey),
  );

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** The id of the current key: values sealed with it start with `v2.<id>.`. */
export const currentKeyId = async (keys: TokenKeys) => (await currentKey(keys)).id;

export async function seal(plain: string, keys: TokenKeys): Promise<string> {
  const key = await currentKey(keys);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key.crypto, new TextEncoder().encode(plain));
  return `v2.${key.id}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function open(sealed: string, keys: TokenKeys): Promise<string> {
  const parts = sealed.split(".");
  const [version] = parts;
  const [keyId, iv, data] = version === "v2" ? parts.slice(1) : [undefined, ...parts.slice(1)];
  if ((version !== "v1" && version !== "v2") || !iv || !data) throw new Error("not a sealed secret");
  const candidates = (await allKeys(keys)).filter((key) => keyId === undefined || key.id === keyId);
  for (const key of candidates) {
    try {
      const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, key.crypto, fromBase64(data));
      return new TextDecoder().decode(plain);
    } catch {
      // v1 values name no key: the next one may open it.
    }
  }
  throw new Error("sealed with a key that is not configured");
}

/** What an API answer shows of a token: never the token itself. */
export const mask = (present: boolean) => (present ? "********" : "");
