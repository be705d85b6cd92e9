// npm run walk [-- <origin>]: the README's walk, run by the typed client against `npm run dev`
// (default http://localhost:8787): a user from creation to a published, promoted ad with bids and
// statistics, printing each step and its result. Uses the development internal key of .dev.vars.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { deflateSync } from "node:zlib";
import { createApiClient } from "../client/index.ts";

const origin = process.argv[2] ?? "http://localhost:8787";
const api = createApiClient({ baseUrl: origin, apiKey: process.env.API_KEY ?? "dev-internal-key" });

function step<T>(title: string, result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) {
    console.error(`✗ ${title}: ${result.response.status} ${JSON.stringify(result.error)}`);
    process.exit(1);
  }
  console.log(`✓ ${title}`);
  return result.data as T;
}

const until = async <T>(what: string, check: () => Promise<T | undefined>, seconds = 60): Promise<T> => {
  for (let i = 0; i < seconds * 4; i += 1) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  console.error(`✗ ${what}: not within ${seconds} s`);
  process.exit(1);
};

/** A 48×24 red PNG, served from this process for the image step (development fetches any host). */
function redPng(): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(48, 0);
  header.writeUInt32BE(24, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(48 * 3, Buffer.from([220, 30, 30]))]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: 24 }, () => row)));
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", header), chunk("IDAT", pixels), chunk("IEND", Buffer.alloc(0))]);
}

function crc32(bytes: Buffer): number {
  let crc = ~0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc >>> 0;
}

const png = redPng();
const images = createServer((_, response) => response.writeHead(200, { "Content-Type": "image/png" }).end(png));
await new Promise<void>((resolve) => images.listen(0, "127.0.0.1", resolve));
const imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}/red.png`;

try {
  const externalUserId = Date.now() % 1_000_000_000;
  const created = step(
    "create a user",
    await api.POST("/rest/v1/users", {
      body: {
        externalUserId,
        firstName: "Jan",
        lastName: "de Vries",
        address: "Dorpsstraat",
        houseNumber: "12a",
        postalCode: "1234ab",
        city: "Utrecht",
        country: "NL",
        email: `jan.${externalUserId}@example.com`,
        phone: "0301234567",
      },
    }),
  ).data;
  const userId = created.userId;
  console.log(`  userId ${userId}`);

  step(
    "activate it",
    await api.POST("/rest/v1/user/activate", {
      body: { userId, activationtoken: created.activation.activationtoken },
    }),
  );

  const started = step(
    "start connecting portal_a",
    await api.POST("/rest/v1/oauth/{userId}/{portal}", { params: { path: { userId, portal: "portal_a" } } }),
  ).data;
  // The marketplace's consent page: sign in as the seeded demo account and allow access.
  const consentPage = await (await fetch(started.redirect)).text();
  const form = /<form method="post" action="([^"]*)">([\s\S]*?)<\/form>/.exec(consentPage);
  if (!form) throw new Error("the consent page has no form");
  const fields = new URLSearchParams();
  for (const [, name, value] of (form[2] ?? "").matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"/g))
    fields.set(name ?? "", (value ?? "").replaceAll("&amp;", "&"));
  fields.set("username", "demo");
  fields.set("password", process.env.SIMULATOR_DEMO_PASSWORD ?? "demo");
  const approval = await fetch(new URL(form[1] ?? "", started.redirect), {
    method: "POST",
    body: fields,
    redirect: "manual",
  });
  console.log(
    `${approval.status === 302 ? "✓" : "✗"} sign in to portal_a as demo on its consent page (${approval.status})`,
  );
  const callback = new URL(approval.headers.get("Location") ?? "");
  const code = callback.searchParams.get("code") ?? "";
  const state = callback.searchParams.get("state") ?? "";
  step(
    "finish the connection with the marketplace's code",
    await api.PUT("/rest/v1/oauth/{userId}/{portal}", {
      params: { path: { userId, portal: "portal_a" } },
      body: { code, state },
    }),
  );

  step(
    "credit the wallet with 50.00",
    await api.POST("/rest/v1/wallet", { body: { userId, amount: 5000, description: "opwaardering" } }),
  );

  const ad = step(
    "create an ad with the category's mandatory attributes",
    await api.POST("/rest/v1/ads", {
      body: {
        userId,
        externalAdId: 1,
        categoryId: 9204,
        title: "Brommer Vespa, 2019",
        description: "Nette <b>Vespa</b> met weinig kilometers.",
        price: { model: "fixed", price: 150000 },
        attributes: [{ portal: "portal_a", values: [{ key: "condition", value: "gebruikt" }] }],
      },
    }),
  ).data;
  console.log(`  adId ${ad.adId}`);

  step(
    "add an image",
    await api.PUT("/rest/v1/images/{adId}", {
      params: { path: { adId: ad.adId } },
      body: { images: [{ image: { url: imageUrl } }] },
    }),
  );
  await until("the image stored", async () => {
    const { data } = await api.GET("/rest/v1/images/{adId}", { params: { path: { adId: ad.adId } } });
    return data?.data.images.length ? true : undefined;
  });
  console.log("  image stored");

  step(
    "publish to portal_a",
    await api.POST("/rest/v1/publish", { body: { userId, adId: ad.adId, portal: "portal_a", images: true } }),
  );
  const publication = await until("the ad active on portal_a", async () => {
    const { data } = await api.GET("/rest/v1/status/{userId}/{adId}", {
      params: { path: { userId, adId: ad.adId } },
    });
    const portalA = data?.data[0]?.portals.find((p) => p.portal === "portal_a")?.publish;
    return portalA?.active ? portalA : undefined;
  });
  console.log(`✓ active on portal_a as listing ${publication.remoteAdId}`);

  step(
    "buy the feature omhoogplaatsen",
    await api.POST("/rest/v1/features", { body: { adId: ad.adId, portal: "portal_a", feature: "omhoogplaatsen" } }),
  );

  const cron = await fetch(`${origin}/__scheduled?cron=*+*+*+*+*`);
  console.log(`${cron.ok ? "✓" : "✗"} run the cron (pulls bids and statistics): ${cron.status}`);

  const bids = step(
    "read the ad's bids",
    await api.GET("/rest/v1/bids/{userId}/{adId}", { params: { path: { userId, adId: ad.adId } } }),
  ).data;
  console.log(`  ${bids.length} bid(s)`);
  const today = new Date().toISOString().slice(0, 10);
  const statistics = step(
    "read its statistics of today",
    await api.POST("/rest/v1/statistics", { body: { adId: [ad.adId], dateStart: today, dateEnd: today } }),
  ).data;
  console.log(`  ${JSON.stringify(statistics).slice(0, 160)}`);
  const wallet = step("read the wallet", await api.GET("/rest/v1/wallet/{userId}", { params: { path: { userId } } }));
  console.log(`  balance ${wallet.data.balance} cents`);
  console.log("\nthe walk is complete");
} finally {
  images.close();
}
