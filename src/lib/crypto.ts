/** Small crypto helpers on Web Crypto, shared by API keys, login links and activation tokens. */

export async function sha256Hex(value: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * A key's fingerprint for the rate limiter's memory of good keys: not the hash a key is looked up by,
 * so what the limiter stores cannot be used to find a client.
 */
export const keyFingerprint = async (key: string) => (await sha256Hex(`rate-limit-fingerprint:${key}`)).slice(0, 32);

/** Base64url without padding of a binary string (one character per byte, as `btoa` takes it). */
export const toBase64Url = (binary: string) =>
  btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

/** The binary string of base64url text, padded or not; throws on text that is not base64. */
export const fromBase64Url = (text: string) => atob(text.replaceAll("-", "+").replaceAll("_", "/"));

/** A random token of `bytes` bytes, base64url without padding. */
export function randomToken(bytes = 32): string {
  return toBase64Url(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(bytes))));
}

/** Constant-time comparison of two strings of hex or base64url text. */
export function timingSafeEqualText(a: string, b: string): boolean {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  if (left.byteLength !== right.byteLength) return false;
  return crypto.subtle.timingSafeEqual(left, right);
}

/**
 * A Standard Webhooks signature (`v1,<base64 HMAC-SHA256 of "id.timestamp.payload">`) for a `whsec_`
 * secret, on Web Crypto. The standardwebhooks package signs the same with a JavaScript SHA-256 (12 KB of
 * the bundle); the tests verify these signatures with that package.
 */
export async function standardWebhookSignature(secret: string, messageId: string, at: Date, payload: string) {
  const keyBytes = Uint8Array.from(atob(secret.replace(/^whsec_/, "")), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const signed = `${messageId}.${Math.floor(at.getTime() / 1000)}.${payload}`;
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(signed)));
  return `v1,${btoa(String.fromCharCode(...mac))}`;
}
