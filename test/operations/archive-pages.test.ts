// History read by the page (src/services/archive/pages.ts): a page of GET /archive/<kind> reads the objects
// it covers, found by their names, whatever the month holds; rows a crashed run wrote twice are counted once;
// objects of the earlier layout (every owner's rows in one object) are still read.
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { type ArchivedRow, monthFolder, writeArchive } from "../../src/services/archive/archive";
import { archivePage } from "../../src/services/archive/pages";
import { call, expectEnvelope, groupOf, newClient } from "../harness/api";
import { createUser } from "../harness/data";

const MONTH = "2024-03";
const OBJECT_ROWS = 1_000;

let key: string;
let clientId: number;
let groupId: number;
/** Row ids of this file's client, ahead of any id the shard hands out (the archive never reuses them). */
let nextId = 9_000_000_000;

beforeAll(async () => {
  const partner = await newClient({ partner: true });
  key = partner.key;
  clientId = partner.client.id;
  groupId = await groupOf(clientId);
});

/** `count` ledger rows of the client's user `userId`, as a run of the archive takes them out of D1. */
const rowsOf = (count: number, userId: number): ArchivedRow[] =>
  Array.from({ length: count }, () => {
    nextId += 1;
    return {
      id: nextId,
      groupId,
      clientId,
      userId,
      at: `${MONTH}-10T08:00:00.000Z`,
      row: { entryId: nextId, userId, amount: 100, kind: "credit", description: `entry ${nextId}` },
    };
  });

/** Archives `count` rows of the user in runs of OBJECT_ROWS, as the cron does; answers their ids in order. */
async function archived(count: number, userId: number, month = MONTH): Promise<number[]> {
  const ids: number[] = [];
  for (let written = 0; written < count; written += OBJECT_ROWS) {
    const rows = rowsOf(Math.min(OBJECT_ROWS, count - written), userId).map((row) => ({
      ...row,
      at: `${month}-10T08:00:00.000Z`,
    }));
    await writeArchive(env.ARCHIVE, "ledger", rows);
    ids.push(...rows.map((row) => row.id));
  }
  return ids;
}

const page = async (query: string) =>
  expectEnvelope(await call("GET", `/archive/ledger?${query}`, { key }), 200) as unknown as {
    data: { entryId: number }[];
    totalItems: number;
  };

/** The archive's bucket, counting the bytes its reads return. */
function countingBucket() {
  const read = { bytes: 0, objects: 0 };
  const bucket = new Proxy(env.ARCHIVE, {
    get: (target, name) =>
      name === "get"
        ? async (objectKey: string) => {
            const object = await target.get(objectKey);
            read.objects += 1;
            read.bytes += object?.size ?? 0;
            return object;
          }
        : Reflect.get(target, name).bind(target),
  });
  return { bucket, read };
}

describe("history read by the page", () => {
  it("pages across objects by the user and by the client, each row once, the total from the objects' names", async () => {
    const userA = (await createUser(key)).userId as number;
    const userB = (await createUser(key)).userId as number;
    const a = await archived(2_500, userA);
    const b = await archived(300, userB);
    const deep = await page(`month=${MONTH}&page=3&itemsPerPage=1000`);
    expect(deep.totalItems).toBe(2_800);
    expect(deep.data.map((row) => row.entryId)).toEqual([...a, ...b].slice(2_000, 2_800));
    const middle = await page(`month=${MONTH}&page=2&itemsPerPage=700`);
    expect(middle.data.map((row) => row.entryId)).toEqual([...a, ...b].slice(700, 1_400));
    const ofB = await page(`month=${MONTH}&userId=${userB}&page=2&itemsPerPage=200`);
    expect(ofB.totalItems).toBe(300);
    expect(ofB.data.map((row) => row.entryId)).toEqual(b.slice(200));
  });

  it("a run that died and wrote rows twice: each row once, the total exact", async () => {
    const { userId } = await createUser(key);
    const month = "2024-04";
    const first = rowsOf(3, userId).map((row) => ({ ...row, at: `${month}-01T00:00:00.000Z` }));
    // The first run wrote two rows and died; the next took all three (and more).
    await writeArchive(env.ARCHIVE, "ledger", first.slice(0, 2));
    const more = rowsOf(2, userId).map((row) => ({ ...row, at: `${month}-01T00:00:00.000Z` }));
    await writeArchive(env.ARCHIVE, "ledger", [...first, ...more]);
    const all = [...first, ...more].map((row) => row.id);
    for (const [query, ids] of [
      [`month=${month}`, all],
      [`month=${month}&page=2&itemsPerPage=2`, all.slice(2, 4)],
    ] as const) {
      const answer = await page(query);
      expect(answer.totalItems).toBe(5);
      expect(answer.data.map((row) => row.entryId)).toEqual(ids);
    }
  });

  it("reads objects of the earlier layout, every owner's rows in one object", async () => {
    const month = "2024-05";
    const { userId } = await createUser(key);
    const rows = rowsOf(4, userId);
    const folder = `${monthFolder(groupId, month)}ledger/`;
    const body = rows.map(({ id, clientId: owner, userId, row }) =>
      JSON.stringify({ id, clientId: owner, userId, row }),
    );
    await env.ARCHIVE.put(`${folder}${rows[0]?.id}-${rows.at(-1)?.id}.ndjson`, `${body.join("\n")}\n`);
    const answer = await page(`month=${month}&userId=${userId}`);
    expect(answer.totalItems).toBe(4);
    expect(answer.data.map((row) => row.entryId)).toEqual(rows.map((row) => row.id));
  });

  it("a run writes an object per client, however many users its rows have; a user's page counts them exactly", async () => {
    const month = "2024-08";
    const rows = Array.from({ length: 300 }, (_, at) => rowsOf(1, 800_000 + at)[0] as ArchivedRow).map((row) => ({
      ...row,
      at: `${month}-02T00:00:00.000Z`,
    }));
    await writeArchive(env.ARCHIVE, "ledger", rows);
    const folder = `${monthFolder(groupId, month)}ledger/`;
    const objects = (await env.ARCHIVE.list({ prefix: folder })).objects.map((object) => object.key);
    expect(objects.filter((key) => key.endsWith(".ndjson"))).toHaveLength(1);
    const ofUser = await archivePage(env.ARCHIVE, {
      folder,
      owner: { clientId, userId: 800_123 },
      page: 1,
      itemsPerPage: 10,
    });
    expect(ofUser.totalItems).toBe(1);
    expect(ofUser.items).toEqual([rows[123]?.row]);
  });

  it("a page costs what it returns: the last page of a 1,000,000-row month reads as many objects and bytes as one of 1,000 rows", async () => {
    const small = "2024-06";
    const large = "2024-07";
    await archived(1_000, 900_005, small);
    await archived(1_000_000, 900_006, large);
    const cost = async (month: string, userId: number, pageNumber: number) => {
      const { bucket, read } = countingBucket();
      const answer = await archivePage(bucket, {
        folder: `${monthFolder(groupId, month)}ledger/`,
        owner: { clientId, userId },
        page: pageNumber,
        itemsPerPage: 1_000,
      });
      expect(answer.items).toHaveLength(1_000);
      return read;
    };
    const ofSmall = await cost(small, 900_005, 1);
    const ofLarge = await cost(large, 900_006, 1_000);
    console.log(
      `an archive page of 1,000 rows: ${ofSmall.objects} objects, ${ofSmall.bytes} bytes read in a 1,000-row month; ${ofLarge.objects} objects, ${ofLarge.bytes} bytes in a 1,000,000-row month`,
    );
    expect(ofLarge.objects).toBeLessThanOrEqual(2 * ofSmall.objects);
    expect(ofLarge.bytes).toBeLessThanOrEqual(2 * ofSmall.bytes);
  }, 600_000);
});
