/** AES-GCM encryption of secrets at rest (portal OAuth tokens), keyed by TOKEN_ENCRYPTION_KEY (base64, 32 bytes). */
const keys = new Map<string, Promise<CryptoKey>>();

function key(base64Key: string | undefined): Promise<CryptoKey> {
  if (!base64Key) throw new Error("TOKEN_ENCRYPTION_KEY is not set");
  let cached = keys.get(base64Key);
  if (!cached) {
    const raw = Uint8Array.from(atob(base64Key), (c) => c.charCodeAt(0));
    if (raw.byteLength !== 32) throw new Error("TOKEN_ENCRYPTION_KEY must be 32 bytes, base64");
    cached = crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
    keys.set(base64Key, cached);
  }
  return cached;
}

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

export async function seal(plain: string, base64Key: string | undefined): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await key(base64Key),
    new TextEncoder().encode(plain),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function open(sealed: string, base64Key: string | undefined): Promise<string> {
  const [version, iv, data] = sealed.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("not a sealed secret");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv) },
    await key(base64Key),
    fromBase64(data),
  );
  return new TextDecoder().decode(plain);
}

/** What an API answer shows of a token: never the token itself. */
export const mask = (present: boolean) => (present ? "********" : "");
