/** Base64url without padding of some bytes. */
export const base64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

/** A random opaque token (codes, access and refresh tokens, salts). */
export const newToken = (bytes = 24) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

/** Compares two secrets in constant time (their SHA-256 digests, so lengths do not leak either). */
export async function sameSecret(given: string, expected: string): Promise<boolean> {
  const digest = async (text: string) => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return crypto.subtle.timingSafeEqual(await digest(given), await digest(expected));
}
