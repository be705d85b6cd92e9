// Ids past 32 bits (src/lib/fields.ts rowId, docs/versioning.md): when a table's blocks run past 2^31 / 4,096,
// its next ids are wider, up to 2^53 − 1, and every call takes and answers them exactly as JSON numbers.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ID_BLOCK_SIZE } from "../../src/db/ids";
import { call, expectEnvelope, groupOf, newClient } from "../harness/api";
import { activate, createAd, createUser } from "../harness/data";
import { leapToBlock } from "../harness/ids";
import { settledPublication } from "../harness/marketplace";

/** A block of ads this far in: its ids are 2^52 and up, a bit below the largest a JSON number holds exactly. */
const FAR_BLOCK = 2 ** 40;

describe("ids past 32 bits", () => {
  it("an ad whose id is past 2^52 is created, read, updated, published and reported with that id", async () => {
    const { key, client } = await newClient({ partner: true });
    const group = await groupOf(client.id);
    const user = await createUser(key);
    await activate(key, user);
    const userId = user.userId as number;
    const first = (await createAd(key, userId)).adId as number;
    // Years of ads: the directory has leased the group a block far past 32 bits.
    await leapToBlock({ kind: "ads", group, shard: env.DB, latestId: first, farBlock: FAR_BLOCK });

    const adId = (await createAd(key, userId, { title: "Brede id" })).adId as number;
    expect(adId).toBeGreaterThan(2 ** 31 - 1);
    expect(adId).toBeGreaterThanOrEqual(FAR_BLOCK * ID_BLOCK_SIZE);
    expect(Number.isSafeInteger(adId)).toBe(true);

    const read = await call("GET", `/ads/?adId=${adId}`, { key });
    const [ad] = expectEnvelope(read, 200).data as { adId: number; title: string }[];
    expect(ad?.adId).toBe(adId);
    // What a client read it sends back.
    expectEnvelope(await call("PUT", "/ads/", { key, body: { ...ad, title: "Brede id, bijgewerkt" } }), 200);
    const [updated] = expectEnvelope(await call("GET", `/ads/?adId=${adId}`, { key }), 200).data as { title: string }[];
    expect(updated?.title).toBe("Brede id, bijgewerkt");

    expectEnvelope(await call("POST", "/publish/", { key, body: { userId, adId, portal: "website" } }), 200);
    expect((await settledPublication(key, userId, adId, "website"))?.active).toBe(true);
    const events = expectEnvelope(await call("GET", `/events/?after=0&userId=${userId}&limit=100`, { key }), 200)
      .data as {
      type: string;
      adId: number | null;
    }[];
    expect(events.filter((event) => event.type === "publish.active").map((event) => event.adId)).toContain(adId);

    expectEnvelope(await call("DELETE", `/ads/${adId}`, { key }), 200);
    expect(expectEnvelope(await call("GET", `/ads/?adId=${adId}`, { key }), 200).data).toEqual([]);
  });

  it("the OpenAPI document types every id as a 64-bit integer", async () => {
    const document = (await call("GET", "/openapi.json")).body as unknown as Record<string, unknown>;
    const ids: { at: string; format: unknown }[] = [];
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) {
        for (const [i, item] of node.entries()) walk(item, `${at}/${i}`);
      } else if (node && typeof node === "object") {
        for (const [name, value] of Object.entries(node)) {
          const schema = value as { type?: unknown; format?: unknown };
          const integer = JSON.stringify(schema?.type ?? "").includes("integer");
          if (
            /^(adId|userId|jobId|webhookId|eventId|entryId|bidId|taskId|contactId|folderId|manufacturerId|deliveryId|queueItemId|walletUserId|mainUserId|payerId|imageId)$/.test(
              name,
            ) &&
            integer
          )
            ids.push({ at: `${at}/${name}`, format: schema.format });
          walk(value, `${at}/${name}`);
        }
      }
    };
    walk(document, "");
    expect(ids.length).toBeGreaterThan(20);
    expect(ids.filter((id) => id.format !== "int64")).toEqual([]);
  });
});
