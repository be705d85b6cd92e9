import { createExecutionContext, env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import type { Env } from "../../src/env";
import { checkTarget, isInternalHost, mediaPathUrl, OutboundRefused, outboundPolicy } from "../../src/lib/outbound";
import { runImageJob } from "../../src/services/images";
import { jobContext } from "../../src/services/shared";
import { BASE, call, expectEnvelope, newClient } from "../harness/api";
import { countingD1, onTestShard } from "../harness/d1";
import { createAd, createUser } from "../harness/data";

let key: string;
let userId: number;

beforeAll(async () => {
  key = (await newClient({ partner: true })).key;
  userId = (await createUser(key)).userId;
});

/** A deployed (sandbox) environment whose DNS-over-HTTPS resolver is the test resolver. */
const sandbox = { ...env, ENVIRONMENT: "sandbox", OUTBOUND_DNS_RESOLVER: "http://dns.test/dns-query" } as Env;
const policy = outboundPolicy(sandbox);

const refusal = async (url: string) => {
  try {
    await checkTarget(new URL(url), policy);
    return null;
  } catch (error) {
    if (error instanceof OutboundRefused) return error.message;
    throw error;
  }
};

/** Runs an image job for `url` in the sandbox environment; answers the job's row. */
async function imageJob(url: string) {
  const ad = await createAd(key, userId);
  const job = await env.DB.prepare("INSERT INTO image_jobs (ad_id, user_id, source_url) VALUES (?, ?, ?) RETURNING id")
    .bind(ad.adId, userId, url)
    .first<{ id: number }>();
  await runImageJob(jobContext(onTestShard(sandbox)), { jobId: job?.id as number });
  return env.DB.prepare("SELECT done, result, reason FROM image_jobs WHERE id = ?")
    .bind(job?.id)
    .first<{ done: number; result: number; reason: string | null }>();
}

const INTERNAL_TARGETS = [
  "http://127.0.0.1/x.png",
  "http://127.1/x.png",
  "http://2130706433/x.png",
  "http://0x7f000001/x.png",
  "http://0177.0.0.1/x.png",
  "http://0.0.0.0/x.png",
  "http://10.1.2.3/x.png",
  "http://172.16.5.5/x.png",
  "http://192.168.0.1/x.png",
  "http://169.254.169.254/latest/meta-data/",
  "http://100.64.0.1/x.png",
  "http://198.18.0.1/x.png",
  "http://198.19.255.254/x.png",
  "http://192.0.0.8/x.png",
  "http://192.0.2.1/x.png",
  "http://198.51.100.7/x.png",
  "http://203.0.113.9/x.png",
  "http://224.0.0.1/x.png",
  "http://240.0.0.1/x.png",
  "http://255.255.255.255/x.png",
  "http://localhost/x.png",
  "http://LOCALHOST./x.png",
  "http://localhost./x.png",
  "http://foo.localhost/x.png",
  "http://printer.local/x.png",
  "http://metadata.google.internal/x.png",
  "http://router.home.arpa/x.png",
  "http://intranet/x.png",
  "http://[::1]/x.png",
  "http://[::]/x.png",
  "http://[::127.0.0.1]/x.png",
  "http://[::ffff:127.0.0.1]/x.png",
  "http://[::ffff:7f00:1]/x.png",
  "http://[::ffff:10.0.0.1]/x.png",
  "http://[0:0:0:0:0:ffff:a9fe:a9fe]/x.png",
  "http://[64:ff9b::7f00:1]/x.png",
  "http://[64:ff9b:1::1]/x.png",
  "http://[2002:7f00:1::]/x.png",
  "http://[fc00::1]/x.png",
  "http://[fd12:3456::1]/x.png",
  "http://[fe80::1]/x.png",
  "http://[fec0::1]/x.png",
  "http://[ff02::1]/x.png",
  "http://[100::1]/x.png",
  "http://[2001::1]/x.png",
  "http://[2001:2::1]/x.png",
  "http://[2001:db8::1]/x.png",
  "http://[3fff::1]/x.png",
  "http://rebind.test/x.png",
  "http://mixed.test/x.png",
  "http://ula.test/x.png",
];

describe("outbound fetches (image downloads)", () => {
  it("refuse every special-purpose address form outside development", async () => {
    for (const target of INTERNAL_TARGETS) expect(await refusal(target), target).not.toBeNull();
    for (const target of ["ftp://images.test/x.png", "file:///etc/passwd", "http://user:pw@images.test/x.png"])
      expect(await refusal(target), target).not.toBeNull();
    expect(await refusal("http://images.test:8080/x.png")).toBe("port 8080 is not allowed");
    expect(await refusal("http://nowhere.test/x.png")).toBe("the host name does not resolve");
    expect(await refusal("http://rebind.test/x.png")).toBe(
      "the host name resolves to a private, loopback or other special address",
    );
    // Public addresses and names that resolve to them pass.
    for (const target of ["http://images.test/x.png", "https://8.8.8.8/x.png", "http://[2606:4700::1111]/x.png"])
      expect(await refusal(target), target).toBeNull();
    for (const host of ["172.32.0.1", "100.128.0.1", "198.20.0.1", "2a00:1450::1"])
      expect(isInternalHost(host), host).toBe(false);
  });

  it("are allowed anything but other schemes in development", async () => {
    const development = outboundPolicy({ ENVIRONMENT: "development" });
    await expect(checkTarget(new URL("http://127.0.0.1:8080/x.png"), development)).resolves.toBeUndefined();
    await expect(checkTarget(new URL("file:///etc/passwd"), development)).rejects.toThrow("only http and https URLs");
  });

  it("end an image job refused, directly and through redirects, and download a public image", async () => {
    for (const url of ["http://127.0.0.1/red.png", "http://[::ffff:127.0.0.1]/red.png", "http://localhost./red.png"])
      expect(await imageJob(url), url).toEqual({
        done: 1,
        result: 0,
        reason: "private, loopback and other special addresses are not allowed",
      });
    expect(await imageJob("http://images.test/to-loopback.png")).toMatchObject({ result: 0 });
    expect(await imageJob("http://images.test/to-metadata.png")).toMatchObject({ result: 0 });
    expect(await imageJob("http://images.test/to-rebind.png")).toEqual({
      done: 1,
      result: 0,
      reason: "the host name resolves to a private, loopback or other special address",
    });
    expect(await imageJob("http://images.test/moved.png")).toEqual({ done: 1, result: 1, reason: null });
  });

  it("keep `path` images strictly below the media origin", async () => {
    const origin = "https://media.example.com/base/";
    for (const path of [
      "../etc/passwd",
      "a/../../etc/passwd",
      "%2e%2e/secret.png",
      "a/%2E%2E/%2e%2e/secret.png",
      "%252e%252e/secret.png",
      "./x.png",
      "\\\\host:8080/x.png",
      "a\\..\\x.png",
      "http://evil.example/x.png",
      "HTTPS://evil.example/x.png",
      "//evil.example/x.png",
      "javascript:alert(1)",
      "x.png%00.jpg",
      "%",
    ])
      expect(mediaPathUrl(path, origin), path).toBeNull();
    expect(mediaPathUrl("/cars/red car.png", origin)?.toString()).toBe(
      "https://media.example.com/base/cars/red%20car.png",
    );
    for (const path of ["%2e%2e/secret.png", "\\\\host:8080/x.png", "http://evil.example/x.png"]) {
      const ad = await createAd(key, userId);
      const answer = await call("POST", `/images/${ad.adId}`, { key, body: { images: [{ image: { path } }] } });
      expectEnvelope(answer, 400);
      expect(answer.body.errors[0]).toMatch(/^images\[0\]\.image\.path: must stay below the media origin/);
    }
  });
});

describe("search input", () => {
  it("answers 400 naming the parameter for control characters and blank keywords", async () => {
    await createAd(key, userId, { title: "Rode fiets met bel" });
    for (const [query, field] of [
      ["searchkeyword=%20", "searchkeyword"],
      ["searchkeyword=%20%20%09", "searchkeyword"],
      ["searchkeyword=a%00b", "searchkeyword"],
      ["title=%00", "title"],
      ["description=fiets%00", "description"],
      ["groupDescription=%00", "groupDescription"],
      ["categoryDescription=%1b", "categoryDescription"],
    ]) {
      const answer = await call("GET", `/ads/?${query}`, { key });
      expectEnvelope(answer, 400);
      expect(answer.body.errors[0], query).toMatch(new RegExp(`^${field}: `));
    }
  });

  it("never answers a 5xx nor widens the result set, whatever the parameters", async () => {
    const own = await call("GET", `/ads/?userId=${userId}&simple=1&itemsPerPage=500`, { key });
    const everything = own.body.totalItems as number;
    const text = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom('"', "*", "-", "NEAR(", "a OR b", "^", "%", "_", "\\", "'", "fiets*", "AND", "(", ")", ":", " "),
    );
    const params = fc.record(
      {
        searchkeyword: text,
        title: text,
        description: text,
        groupDescription: text,
        categoryDescription: text,
        searchportal: text,
        order: fc.constantFrom("order[0][field]=price", "order[0][field]=x", "order[0][descending]=2"),
        searchattributes: fc.constantFrom(
          "searchattributes[0][key]=condition&searchattributes[0][portal]=portal_a&searchattributes[0][value_equals]=%00",
          "searchattributes[0][key]=%22&searchattributes[0][portal]=portal_a&categoryId=9301",
        ),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(params, async (p) => {
        const query = Object.entries(p)
          .map(([name, value]) =>
            name === "order" || name === "searchattributes" ? value : `${name}=${encodeURIComponent(value)}`,
          )
          .join("&");
        const answer = await call("GET", `/ads/?userId=${userId}&${query}`, { key });
        expect(answer.status, query).toBeLessThan(500);
        if (answer.status === 200) expect(answer.body.totalItems as number, query).toBeLessThanOrEqual(everything);
      }),
      { numRuns: 150 },
    );
  }, 60_000);
});

describe("URLs in data", () => {
  it("accept only http and https, with a 400 naming the field", async () => {
    const ad = await createAd(key, userId);
    const refused: [string, string, unknown, string][] = [
      ["PUT", "/ads/", { adId: ad.adId, url: "javascript:alert(1)" }, "url"],
      ["PUT", "/ads/", { adId: ad.adId, url: "data:text/html,<script>alert(1)</script>" }, "url"],
      ["PUT", "/users/", { userId, website: "javascript:alert(document.cookie)" }, "website"],
      ["POST", "/contacts/", { userId, name: "Balie", website: "JAVASCRIPT:alert(1)" }, "website"],
      [
        "POST",
        "/adsettings/",
        { adId: ad.adId, settings: [{ portal: "portal_a", video: "javascript:a.b/c.mp4" }] },
        "settings[0].video",
      ],
    ];
    for (const [method, path, body, field] of refused) {
      const answer = await call(method, path, { key, body });
      expectEnvelope(answer, 400);
      expect(answer.body.errors, `${method} ${path}`).toContain(`${field}: must be an http or https URL`);
    }
    expectEnvelope(
      await call("PUT", "/ads/", { key, body: { adId: ad.adId, url: "https://garage.example.nl/bank" } }),
      200,
    );
    expectEnvelope(await call("PUT", "/users/", { key, body: { userId, website: "www.garage.example.nl" } }), 200);
  });
});

describe("unauthenticated floods", () => {
  it("300 parallel requests with one bad key hit the per-IP limit and cost one D1 lookup", async () => {
    // Keys are looked up in the directory (src/db/shards.ts).
    const counter = countingD1(env.DIRECTORY);
    const limited = { ...env, DIRECTORY: counter.d1, RATE_LIMIT_IP_RPS: "1", RATE_LIMIT_IP_BURST: "20" } as Env;
    const badKey = `bad-${crypto.randomUUID()}`;
    const answers = await Promise.all(
      Array.from({ length: 300 }, () =>
        app.fetch(
          new Request(`${BASE}/client/`, {
            headers: { Authorization: `Bearer ${badKey}`, "CF-Connecting-IP": "203.0.113.77" },
          }),
          limited,
          createExecutionContext(),
        ),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(280);
    const limitedAnswer = answers.find((a) => a.status === 429);
    expect(limitedAnswer?.headers.get("Retry-After")).toMatch(/^\d+$/);
    expect(limitedAnswer?.headers.get("RateLimit")).toMatch(/^"default";r=0;t=\d+$/);
    expect(await limitedAnswer?.json()).toEqual({
      result: false,
      errors: ["rate limit exceeded"],
      data: [],
      errorDetails: [{ code: "rate_limited", message: "rate limit exceeded" }],
    });
    expect(counter.roundTrips).toBe(1);

    // Another address still gets its 401; a valid key is not limited by the address it comes from.
    const elsewhere = await app.fetch(
      new Request(`${BASE}/client/`, {
        headers: { Authorization: `Bearer ${badKey}`, "CF-Connecting-IP": "198.51.100.1" },
      }),
      limited,
      createExecutionContext(),
    );
    expect(elsewhere.status).toBe(401);
    const valid = await app.fetch(
      new Request(`${BASE}/client/`, {
        headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": "203.0.113.77" },
      }),
      limited,
      createExecutionContext(),
    );
    expect(valid.status).toBe(200);
  });

  it("makes a malformed bookmark, refused before the key is known, cost the address like a bad key", async () => {
    const limited = { ...env, RATE_LIMIT_IP_RPS: "1", RATE_LIMIT_IP_BURST: "3" } as Env;
    const statuses = [];
    for (let request = 0; request < 5; request += 1) {
      const answer = await app.fetch(
        new Request(`${BASE}/client/`, { headers: { "CF-Connecting-IP": "192.0.2.40", "x-d1-bookmark": "garbage" } }),
        limited,
        createExecutionContext(),
      );
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
  });

  it("limits the public routes per IP: media, the OAuth landing page and the simulator", async () => {
    const limited = { ...env, RATE_LIMIT_IP_RPS: "1", RATE_LIMIT_IP_BURST: "3" } as Env;
    const paths = ["/media/images/1/none.png", "/oauth/callback/portal_a?code=x&state=y", "/simulator/portal_a/bids"];
    for (const [i, path] of paths.entries()) {
      // One address per path: each starts with a full bucket.
      const ip = `192.0.2.${10 + i}`;
      const statuses = [];
      for (let request = 0; request < 5; request += 1) {
        const answer = await app.fetch(
          new Request(`http://api.test${path}`, { headers: { "CF-Connecting-IP": ip } }),
          limited,
          createExecutionContext(),
        );
        statuses.push(answer.status);
      }
      expect(statuses.slice(3), path).toEqual([429, 429]);
      // The first three are the route's own answers (an unknown image, the landing page, a simulator 401).
      expect(statuses.slice(0, 3), path).toEqual(
        Array(3).fill(path.startsWith("/oauth") ? 200 : path.startsWith("/media") ? 404 : 401),
      );
    }
  });
});

describe("the marketplace simulator", () => {
  const simulator = (path: string, init: RequestInit = {}) =>
    app.fetch(new Request(`http://api.test/simulator/portal_a${path}`, init), env, createExecutionContext());

  it("answers a body it cannot read with RFC 6749's invalid_request, never a plain 500", async () => {
    for (const path of ["/oauth/token", "/oauth/revoke", "/oauth/authorize", "/signup"]) {
      const answer = await simulator(path, {
        method: "POST",
        headers: { "Content-Type": "multipart/form-data; boundary=none" },
        body: "--broken",
      });
      expect(answer.status, path).toBe(400);
      expect(await answer.json(), path).toMatchObject({ error: "invalid_request" });
    }
  });

  it("keeps its control routes to the operator (the portal's OAuth client credentials)", async () => {
    expect((await simulator("/control/accounts/1")).status).toBe(401);
    const wrong = `Basic ${btoa(`${env.PORTAL_A_CLIENT_ID}:not-the-secret`)}`;
    expect((await simulator("/control/accounts/1", { headers: { Authorization: wrong } })).status).toBe(401);
    // A header that is not base64, or not percent-encoding inside, authenticates no one: 401, never a 500.
    for (const malformed of ["Basic %%%", `Basic ${btoa("%E0%A4%A:secret")}`])
      expect((await simulator("/control/accounts/1", { headers: { Authorization: malformed } })).status).toBe(401);
    const operator = `Basic ${btoa(`${env.PORTAL_A_CLIENT_ID}:${env.PORTAL_A_CLIENT_SECRET}`)}`;
    const summary = await simulator("/control/accounts/1", { headers: { Authorization: operator } });
    expect(summary.status).toBe(200);
    expect(await summary.json()).toMatchObject({ listings: expect.any(Number) });
  });
});
