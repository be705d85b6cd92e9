/**
 * The one guard for fetches the service makes on behalf of clients (image downloads; webhooks later):
 * only http and https on a default or allowed port, host names normalised, and no address in the IANA
 * special-purpose registries (IPv4 and IPv6), checked on every redirect. Names are resolved with DNS over
 * HTTPS when a resolver is configured, and refused when any answer is special (a name that points at
 * 127.0.0.1 is as internal as 127.0.0.1). Outside development only: local work fetches local hosts.
 */
import { z } from "@hono/zod-openapi";

export class OutboundRefused extends Error {}
/** The DNS resolver did not answer (down, timed out): the target could not be checked, so nothing is sent. */
export class ResolverUnavailable extends Error {}

export interface OutboundPolicy {
  /** Development: any host and port (the scheme is still checked). */
  allowInternal: boolean;
  /** Ports beside the scheme's default that may be used. */
  allowedPorts: number[];
  /** A DNS-over-HTTPS JSON endpoint (e.g. https://cloudflare-dns.com/dns-query); empty: names are not resolved. */
  dnsResolver: string;
}

/** The policy of a deployment, from its vars. */
export function outboundPolicy(env: {
  ENVIRONMENT: string;
  OUTBOUND_ALLOWED_PORTS?: string;
  OUTBOUND_DNS_RESOLVER?: string;
}): OutboundPolicy {
  return {
    allowInternal: env.ENVIRONMENT === "development",
    allowedPorts: (env.OUTBOUND_ALLOWED_PORTS ?? "")
      .split(",")
      .map((p) => Number(p.trim()))
      .filter((p) => Number.isInteger(p) && p > 0),
    dnsResolver: env.OUTBOUND_DNS_RESOLVER ?? "",
  };
}

// ---- IPv4 ----

/** IPv4 special-purpose blocks (IANA IPv4 Special-Purpose Address Registry), plus multicast and reserved. */
const SPECIAL_V4: [string, number][] = [
  ["0.0.0.0", 8], // this network
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // shared address space (CGNAT)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation (TEST-NET-1)
  ["192.31.196.0", 24], // AS112-v4
  ["192.52.193.0", 24], // AMT
  ["192.88.99.0", 24], // deprecated 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["192.175.48.0", 24], // direct delegation AS112
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation (TEST-NET-2)
  ["203.0.113.0", 24], // documentation (TEST-NET-3)
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and the limited broadcast address
];

const v4Number = (text: string): number | null => {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return null;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
};

const inV4Block = (address: number, [base, bits]: [string, number]) =>
  Math.floor(address / 2 ** (32 - bits)) === Math.floor((v4Number(base) as number) / 2 ** (32 - bits));

export const isSpecialV4 = (address: number) => SPECIAL_V4.some((block) => inV4Block(address, block));

// ---- IPv6 ----

/** The eight 16-bit groups of an IPv6 address (with an embedded IPv4 tail), or null when it is none. */
export function parseV6(text: string): number[] | null {
  let head = text.toLowerCase().split("%")[0] ?? "";
  const groups: number[] = [];
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(head);
  let tailGroups: number[] = [];
  if (tail) {
    const v4 = v4Number(tail[1] as string);
    if (v4 === null) return null;
    tailGroups = [Math.floor(v4 / 65536), v4 % 65536];
    head = head.slice(0, -(tail[1] as string).length);
    if (head.endsWith(":") && !head.endsWith("::")) head = head.slice(0, -1);
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":"));
  const left = parse(halves[0] ?? "");
  const right = halves.length === 2 ? parse(halves[1] ?? "") : [];
  if ([...left, ...right].some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  const given = left.length + right.length + tailGroups.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return null;
  groups.push(...left.map((g) => Number.parseInt(g, 16)));
  groups.push(...Array.from({ length: 8 - given }, () => 0));
  groups.push(...right.map((g) => Number.parseInt(g, 16)), ...tailGroups);
  return groups;
}

const v4Of = (high: number, low: number) => high * 65536 + low;

/**
 * Only global unicast (2000::/3) may be reached, less its special-purpose blocks; IPv4 embedded in an
 * IPv6 address (mapped, compatible, NAT64, 6to4) is judged as the IPv4 address.
 */
export function isSpecialV6(groups: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embedded = v4Of(g6, g7);
  // ::/96 (unspecified, loopback, IPv4-compatible) and ::ffff:0:0/96 (IPv4-mapped): never reached as IPv6.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0 || g5 === 0xffff)) return true;
  if (g0 === 0x64 && g1 === 0xff9b) return g2 !== 0 || isSpecialV4(embedded); // NAT64, and 64:ff9b:1::/48 local
  if (g0 === 0x2002) return isSpecialV4(v4Of(g1, g2)); // 6to4
  if ((g0 & 0xe000) !== 0x2000) return true; // outside global unicast: ULA, link/site-local, multicast, 100::/64 …
  if (g0 === 0x2001 && g1 < 0x200) return true; // 2001::/23 IETF protocol assignments (Teredo, benchmarking, ORCHID)
  if (g0 === 0x2001 && g1 === 0x0db8) return true; // documentation
  if (g0 === 0x3fff && g1 < 0x1000) return true; // documentation (3fff::/20)
  return false;
}

// ---- names ----

const INTERNAL_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "localdomain", "lan", "intranet"];

/** The host as the guard compares it: lower case, IDNA already applied by URL, no trailing dot, no brackets. */
export const normaliseHost = (hostname: string) =>
  hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.+$/, "");

/** A literal address or a name that can only mean something internal. */
export function isInternalHost(hostname: string): boolean {
  const host = normaliseHost(hostname);
  if (host === "") return true;
  const v4 = v4Number(host);
  if (v4 !== null) return isSpecialV4(v4);
  if (host.includes(":")) {
    const v6 = parseV6(host);
    return v6 === null || isSpecialV6(v6);
  }
  // A single label (an intranet name) or a reserved internal suffix.
  if (!host.includes(".")) return true;
  return INTERNAL_SUFFIXES.some((suffix) => host === suffix || host.endsWith(`.${suffix}`));
}

const isAddress = (text: string) => v4Number(text) !== null || parseV6(text) !== null;

/** The A and AAAA answers for a name, from a DNS-over-HTTPS JSON resolver. */
/** A DNS-over-HTTPS JSON answer as far as it is read: its status and each record's type and data. */
const DnsJsonAnswer = z.object({
  Status: z.union([z.literal(0), z.literal(3)]),
  Answer: z.array(z.object({ type: z.number(), data: z.string() })).optional(),
});

async function resolve(resolver: string, name: string): Promise<string[]> {
  const answers = await Promise.all(
    ["A", "AAAA"].map(async (type) => {
      const url = new URL(resolver);
      url.searchParams.set("name", name);
      url.searchParams.set("type", type);
      const response = await fetch(url, {
        headers: { Accept: "application/dns-json" },
        signal: AbortSignal.timeout(5_000),
      }).catch((error: unknown) => {
        throw new ResolverUnavailable(
          `the DNS resolver did not answer (${error instanceof Error ? error.name : error})`,
        );
      });
      if (!response.ok) throw new ResolverUnavailable(`the DNS resolver answered HTTP ${response.status}`);
      // NOERROR or NXDOMAIN, with a list of answers if any, each with its data; anything else is a
      // resolver at fault.
      const answer = DnsJsonAnswer.safeParse(await response.json().catch(() => null));
      if (!answer.success) throw new ResolverUnavailable("the DNS resolver's answer is not a DNS answer");
      return (answer.data.Answer ?? []).filter((a) => a.type === 1 || a.type === 28).map((a) => a.data);
    }),
  );
  return answers.flat();
}

/** Refuses a target the policy does not allow (thrown as OutboundRefused with the reason). */
export async function checkTarget(target: URL, policy: OutboundPolicy): Promise<void> {
  if (target.protocol !== "http:" && target.protocol !== "https:")
    throw new OutboundRefused("only http and https URLs");
  if (target.username || target.password) throw new OutboundRefused("URLs with credentials are not allowed");
  if (policy.allowInternal) return;
  if (target.port !== "" && !policy.allowedPorts.includes(Number(target.port)))
    throw new OutboundRefused(`port ${target.port} is not allowed`);
  const host = normaliseHost(target.hostname);
  if (isInternalHost(host)) throw new OutboundRefused("private, loopback and other special addresses are not allowed");
  if (!policy.dnsResolver || isAddress(host)) return;
  const addresses = await resolve(policy.dnsResolver, host);
  if (addresses.length === 0) throw new OutboundRefused("the host name does not resolve");
  if (addresses.some((address) => isInternalHost(address)))
    throw new OutboundRefused("the host name resolves to a private, loopback or other special address");
}

/** Who is calling, on every outbound request (image fetches, webhook deliveries), so receivers can tell. */
export const OUTBOUND_USER_AGENT = "ClassifiedAdsAPI/1 (+webhooks and image fetches)";

/** fetch() through the guard: redirects are followed by hand, each hop checked again; it says who it is. */
export async function guardedFetch(
  url: string | URL,
  policy: OutboundPolicy,
  init: {
    timeoutMs: number;
    maxRedirects: number;
    method?: string;
    headers?: HeadersInit;
    body?: BodyInit;
    /** Ends the fetch earlier than its timeout (a caller's own bound, e.g. on the wait for the answer). */
    signal?: AbortSignal;
  },
): Promise<Response> {
  let target = new URL(url);
  for (let hop = 0; ; hop += 1) {
    await checkTarget(target, policy);
    const response = await fetch(target, {
      method: init.method ?? "GET",
      headers: { "User-Agent": OUTBOUND_USER_AGENT, ...Object.fromEntries(new Headers(init.headers)) },
      body: init.body,
      redirect: "manual",
      signal: init.signal
        ? AbortSignal.any([AbortSignal.timeout(init.timeoutMs), init.signal])
        : AbortSignal.timeout(init.timeoutMs),
    });
    const location = response.headers.get("Location");
    if (response.status < 300 || response.status >= 400 || !location) return response;
    await response.body?.cancel();
    if (hop >= init.maxRedirects) throw new OutboundRefused("too many redirects");
    target = new URL(location, target);
  }
}

/**
 * An image `path` as a URL strictly below the media origin: decoded first, then refused with any `.` or
 * `..` segment, backslash, control character, scheme or host of its own. Null when refused.
 */
export function mediaPathUrl(path: string, mediaOrigin: string): URL | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return null;
  }
  // Decoding twice catches %252e%252e; a path has no business being encoded twice.
  if (/%[0-9a-f]{2}/i.test(decoded)) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
  if (/[\\\u0000-\u001f\u007f]/.test(decoded) || /^[a-z][a-z0-9+.-]*:/i.test(decoded) || decoded.startsWith("//"))
    return null;
  const segments = decoded.replace(/^\/+/, "").split("/");
  if (segments.some((s) => s === "." || s === "..")) return null;
  const base = new URL(mediaOrigin.endsWith("/") ? mediaOrigin : `${mediaOrigin}/`);
  const url = new URL(segments.map(encodeURIComponent).join("/"), base);
  return url.origin === base.origin && url.pathname.startsWith(base.pathname) ? url : null;
}
