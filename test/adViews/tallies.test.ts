// Counts from maintained counters, equal to COUNT(*) after any writes (a property over random creates,
// moves, status changes and deletes), and a full ad's details copy, written once per command.
import { env } from "cloudflare:test";
import { getTableColumns, getTableName } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { adAttributes, adSettings } from "../../src/db/schema";
import { call, d1RowsOf, defined, expectEnvelope, twoClients } from "../harness/api";
import { CAR_ATTRIBUTES, CAR_CATEGORY, createAd, createUser, SOFA_CATEGORY, seedAds } from "../harness/data";

let key: string;
let internalKey: string;
beforeAll(async () => {
  ({ key, internalKey } = await twoClients());
});

describe("counts from tallies", () => {
  it("an internal client's list across every user counts what COUNT(*) does, filtered or not", async () => {
    await seedAds((await createUser(key)).userId, 50);
    for (const [query, condition] of [
      ["", "1 = 1"],
      ["status=archive", "a.status = 'archive'"],
    ]) {
      const answer = await call("GET", `/ads/?simple=true&itemsPerPage=1&${query}`, { key: internalKey });
      const counted = await env.DB.prepare(
        `SELECT count(*) AS n FROM ads a JOIN users u ON u.id = a.user_id WHERE u.deleted_at IS NULL AND ${condition}`,
      ).first<number>("n");
      expect(answer.body.totalItems, query).toBe(counted);
      expect(counted).toBeGreaterThan(0);
    }
  });

  type Write =
    | { kind: "create"; user: number; status: string; type: string; folder: number | null; category: number }
    | { kind: "status"; ad: number; status: string }
    | { kind: "move"; ad: number; folder: number | null; type: string }
    | { kind: "delete"; ad: number }
    | { kind: "deleteFolder"; folder: number }
    | { kind: "deleteUser"; user: number };
  const STATUSES = ["concept", "active", "archive"];
  const TYPES = ["supply", "demand"];
  const CATEGORIES = [SOFA_CATEGORY, SOFA_CATEGORY + 1];
  const write: fc.Arbitrary<Write> = fc.oneof(
    {
      arbitrary: fc.record({
        kind: fc.constant("create" as const),
        user: fc.nat(1),
        status: fc.constantFrom(...STATUSES),
        type: fc.constantFrom(...TYPES),
        folder: fc.option(fc.nat(1)),
        category: fc.constantFrom(...CATEGORIES),
      }),
      weight: 3,
    },
    fc.record({ kind: fc.constant("status" as const), ad: fc.nat(), status: fc.constantFrom(...STATUSES) }),
    fc.record({
      kind: fc.constant("move" as const),
      ad: fc.nat(),
      folder: fc.option(fc.nat(1)),
      type: fc.constantFrom(...TYPES),
    }),
    fc.record({ kind: fc.constant("delete" as const), ad: fc.nat() }),
    fc.record({ kind: fc.constant("deleteFolder" as const), folder: fc.nat(1) }),
    fc.record({ kind: fc.constant("deleteUser" as const), user: fc.nat(1) }),
  );

  /** The tallies as counted from the ads now, per owner and the tallied columns (`0`: no folder, category). */
  const tallyRows = (owner: string, folder: string, join: string, where: string) =>
    `SELECT ${owner} AS owner, a.status, a.type, ${folder} coalesce(a.category_id, 0) AS category_id, count(*) AS n
      FROM ads a ${join} WHERE ${where} GROUP BY 1, 2, 3, 4${folder ? ", 5" : ""} ORDER BY 1, 2, 3, 4${folder ? ", 5" : ""}`;
  const rowsOf = async (sql: string, ...bound: number[]) =>
    (
      await env.DB.prepare(sql)
        .bind(...bound)
        .all()
    ).results;

  it("totalItems of the list and its filters equals COUNT(*) after random writes, moves and deletes", async () => {
    const clientId = defined(
      await env.DB.prepare("SELECT client_id FROM users WHERE id = ?")
        .bind((await createUser(key)).userId)
        .first<number>("client_id"),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 12 }), async (writes) => {
        const users = [(await createUser(key)).userId, (await createUser(key)).userId];
        const folderOf = async (userId: number) =>
          defined((await call("POST", "/folders/", { key, body: { userId, description: "Map" } })).body.data[0])
            .folderId as number;
        const folders = await Promise.all(
          users.map(async (userId) => [await folderOf(userId), await folderOf(userId)]),
        );
        // Each user starts with an ad, so that deleting one anonymises it (a user without ads is removed).
        const live = await Promise.all(
          users.map(async (userId, user) => ({ adId: (await createAd(key, userId)).adId as number, user })),
        );
        const deletedFolders = new Set<number | undefined>();
        /** The folder a write names, or none once that folder is deleted. */
        const folderFor = (user: number, folder: number | null) => {
          const folderId = folder === null ? null : folders[user]?.[folder];
          return deletedFolders.has(folderId ?? undefined) ? null : folderId;
        };
        const pick = (n: number) => live[n % live.length];
        const deletedUsers = new Set<number>();
        for (const w of writes) {
          if (w.kind === "deleteUser") {
            if (deletedUsers.has(w.user)) continue;
            expectEnvelope(await call("DELETE", `/users/${users[w.user]}`, { key }), 200);
            deletedUsers.add(w.user);
            live.splice(0, live.length, ...live.filter((ad) => ad.user !== w.user));
          } else if (w.kind === "create") {
            if (deletedUsers.has(w.user)) continue;
            const userId = users[w.user] as number;
            const ad = await createAd(key, userId, {
              status: w.status,
              type: w.type,
              folderId: folderFor(w.user, w.folder),
              categoryId: w.category,
            });
            live.push({ adId: ad.adId, user: w.user });
          } else if (w.kind === "deleteFolder") {
            if (deletedUsers.has(0)) continue;
            const userId = users[0] as number;
            const folderId = folders[0]?.[w.folder];
            await call("DELETE", "/folders/", { key, body: { userId, folderId } });
            deletedFolders.add(folderId);
          } else {
            const target = pick(w.ad);
            if (!target) continue;
            if (w.kind === "status") {
              expectEnvelope(await call("PATCH", "/ads/", { key, body: { adId: target.adId, status: w.status } }), 200);
            } else if (w.kind === "move") {
              const folderId = folderFor(target.user, w.folder);
              expectEnvelope(
                await call("PUT", "/ads/", { key, body: { adId: target.adId, folderId, type: w.type } }),
                200,
              );
            } else {
              expectEnvelope(await call("DELETE", `/ads/${target.adId}`, { key }), 200);
              live.splice(live.indexOf(target), 1);
            }
          }
        }
        // The tallies as kept, against the ads now: both users', and every client's (users not deleted).
        expect(
          await rowsOf(
            "SELECT user_id AS owner, status, type, folder_id, category_id, n FROM ad_tallies WHERE user_id IN (?, ?) AND n > 0 ORDER BY 1, 2, 3, 4, 5",
            ...users,
          ),
        ).toEqual(
          await rowsOf(
            tallyRows("a.user_id", "coalesce(a.folder_id, 0) AS folder_id,", "", "a.user_id IN (?, ?)"),
            ...users,
          ),
        );
        expect(
          await rowsOf(
            "SELECT client_id AS owner, status, type, category_id, n FROM client_ad_tallies WHERE n > 0 ORDER BY 1, 2, 3, 4",
          ),
        ).toEqual(
          await rowsOf(
            tallyRows("coalesce(u.client_id, 0)", "", "JOIN users u ON u.id = a.user_id", "u.deleted_at IS NULL"),
          ),
        );
        // What a client sees: each folder's number of ads, and the lists' counts by each tallied filter and by
        // two together, against COUNT(*).
        const liveUsers = users.filter((_, i) => !deletedUsers.has(i));
        for (const userId of liveUsers) {
          const listed = await call("GET", `/folders/${userId}`, { key });
          expectEnvelope(listed, 200);
          for (const folder of listed.body.data as { folderId: number; total: number }[]) {
            const counted = await env.DB.prepare("SELECT count(*) AS n FROM ads WHERE folder_id = ?")
              .bind(folder.folderId)
              .first<number>("n");
            expect(folder.total, `folder ${folder.folderId}`).toBe(counted);
          }
        }
        const filters: [string, string][] = [
          ["", "1 = 1"],
          ...STATUSES.map((s): [string, string] => [`status=${s}`, `a.status = '${s}'`]),
          ...TYPES.map((t): [string, string] => [`type=${t}`, `a.type = '${t}'`]),
          ...CATEGORIES.map((c): [string, string] => [`categoryId=${c}`, `a.category_id = ${c}`]),
          ...folders.flat().map((f): [string, string] => [`folderId=${f}`, `a.folder_id = ${f}`]),
          ...STATUSES.flatMap((s) =>
            TYPES.map((t): [string, string] => [`status=${s}&type=${t}`, `a.status = '${s}' AND a.type = '${t}'`]),
          ),
          ...CATEGORIES.map((c): [string, string] => [
            `categoryId=${c}&status=active`,
            `a.category_id = ${c} AND a.status = 'active'`,
          ]),
          ...folders
            .flat()
            .map((f): [string, string] => [
              `folderId=${f}&status=active`,
              `a.folder_id = ${f} AND a.status = 'active'`,
            ]),
        ];
        const totalOf = async (path: string, as: string) => {
          const answer = await call("GET", path, { key: as });
          expectEnvelope(answer, 200);
          return answer.body.totalItems;
        };
        const countOf = (where: string, ...bound: number[]) =>
          env.DB.prepare(`SELECT count(*) AS n FROM ads a JOIN users u ON u.id = a.user_id WHERE ${where}`)
            .bind(...bound)
            .first<number>("n");
        for (const [query, condition] of filters) {
          for (const userId of liveUsers) {
            expect(await totalOf(`/ads/?userId=${userId}&simple=true&${query}`, key), `user ${userId} ${query}`).toBe(
              await countOf(`a.user_id = ? AND ${condition}`, userId),
            );
          }
          // Across users: the client's own, and an internal client's (every user's).
          expect(await totalOf(`/ads/?simple=true&itemsPerPage=1&${query}`, key), `client ${query}`).toBe(
            await countOf(`u.client_id = ? AND u.deleted_at IS NULL AND ${condition}`, clientId),
          );
          expect(await totalOf(`/ads/?simple=true&itemsPerPage=1&${query}`, internalKey), `all ${query}`).toBe(
            await countOf(`u.deleted_at IS NULL AND ${condition}`),
          );
        }
      }),
      // Shrinking replays runs of some sixty calls each: the first counterexample is reported as found.
      { numRuns: 10, endOnFailure: true },
    );
    // Some sixty calls a run: the bound leaves room for a machine under heavy load.
  }, 600_000);
});

describe("a full ad's details copy, written once per command", () => {
  /** The rows as the table holds them, as value arrays in the Drizzle table's column order and the view's order. */
  async function tableRows(table: SQLiteTable, adId: number, order: string) {
    const columns = Object.values(getTableColumns(table)).map((column) => column.name);
    const { results } = await env.DB.prepare(`SELECT * FROM ${getTableName(table)} WHERE ad_id = ? ORDER BY ${order}`)
      .bind(adId)
      .all<Record<string, unknown>>();
    return results.map((row) => columns.map((name) => row[name]));
  }

  /** Every ad's `ad_details` row against its attribute and setting rows; no row for an ad that is gone. */
  async function expectDetailsKept(adIds: number[]) {
    for (const adId of adIds) {
      const kept = await env.DB.prepare("SELECT attribute_rows, setting_rows FROM ad_details WHERE ad_id = ?")
        .bind(adId)
        .first<{ attribute_rows: string; setting_rows: string }>();
      const exists = await env.DB.prepare("SELECT 1 AS n FROM ads WHERE id = ?").bind(adId).first("n");
      if (!exists) {
        expect(kept, `ad ${adId} is deleted`).toBeNull();
        continue;
      }
      expect(JSON.parse(defined(kept).attribute_rows), `ad ${adId}`).toEqual(
        await tableRows(adAttributes, adId, "portal, seq"),
      );
      expect(JSON.parse(defined(kept).setting_rows), `ad ${adId}`).toEqual(await tableRows(adSettings, adId, "portal"));
    }
  }

  const carOptions = fc.subarray(["airco", "cruise control", "navigatie", "parkeersensoren", "trekhaak"]);
  /** portal_a's required set (with the options given) and portal_b's: a brand, or empty (which removes its rows). */
  const carAttributes = (mileage: number, options: string[], onPortalB: boolean) => [
    {
      portal: "portal_a",
      locale: "nl_NL",
      values: [
        ...defined(CAR_ATTRIBUTES[0]).values.map((v) => (v.key === "mileage" ? { ...v, value: mileage } : v)),
        ...options.map((value) => ({ key: "options", value })),
      ],
    },
    { portal: "portal_b", locale: "nl_NL", values: onPortalB ? [{ key: "brand", value: "Volkswagen" }] : [] },
  ];
  const settings = fc
    .subarray(["portal_a", "portal_b"] as const, { minLength: 1 })
    .chain((portals) =>
      fc.tuple(...portals.map((portal) => fc.record({ portal: fc.constant(portal), showcontact: fc.boolean() }))),
    );
  type Write =
    | { kind: "create"; mileage: number; options: string[]; onPortalB: boolean }
    | {
        kind: "update";
        ad: number;
        mileage: number;
        options: string[];
        onPortalB: boolean;
        /** Which sets the update sends: both, portal_b's alone, or none (the rows stay as they are). */
        sets: "both" | "portal_b" | "none";
        settings: { portal: string }[] | null;
      }
    | { kind: "settings"; ad: number; settings: { portal: string }[] }
    | { kind: "delete"; ad: number };
  const mileage = fc.integer({ min: 0, max: 2_000_000 });
  const write: fc.Arbitrary<Write> = fc.oneof(
    // Every ad starts with a portal_b set, so that an update emptying it (portal_b alone) deletes rows only.
    fc.record({ kind: fc.constant("create" as const), mileage, options: carOptions, onPortalB: fc.constant(true) }),
    fc.record({
      kind: fc.constant("update" as const),
      ad: fc.nat(),
      mileage,
      options: carOptions,
      onPortalB: fc.boolean(),
      sets: fc.constantFrom("both" as const, "portal_b" as const, "none" as const),
      settings: fc.option(settings),
    }),
    fc.record({ kind: fc.constant("settings" as const), ad: fc.nat(), settings }),
    fc.record({ kind: fc.constant("delete" as const), ad: fc.nat() }),
  );

  /** The attribute rows an ad must hold: per portal, the last set sent for it, as `portal key=value` in order. */
  type SentSets = Map<string, string[]>;
  const asRows = (sets: ReturnType<typeof carAttributes>, into: SentSets = new Map()) => {
    for (const set of sets)
      into.set(
        set.portal,
        set.values.map((v) => `${set.portal} ${v.key}=${v.value}`),
      );
    return into;
  };
  /** What the ad's attribute rows hold, in the same words; PUT writes only the rows that differ, so nothing stale may stay. */
  async function expectAttributesSent(sent: Map<number, SentSets>) {
    for (const [adId, sets] of sent) {
      const { results } = await env.DB.prepare(
        "SELECT portal || ' ' || key || '=' || value AS row FROM ad_attributes WHERE ad_id = ? ORDER BY portal, seq",
      )
        .bind(adId)
        .all<{ row: string }>();
      expect(
        results.map((r) => r.row),
        `ad ${adId}`,
      ).toEqual([...(sets.get("portal_a") ?? []), ...(sets.get("portal_b") ?? [])]);
    }
  }

  it("equal the ad's attribute and setting rows, and those the last set sent per portal, after random creates, updates, settings and deletes", async () => {
    const userId = (await createUser(key)).userId;
    const touched: number[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 10 }), async (writes) => {
        const live: number[] = [];
        const sent = new Map<number, SentSets>();
        for (const w of writes) {
          if (w.kind === "create") {
            const attributes = carAttributes(w.mileage, w.options, w.onPortalB);
            const ad = await createAd(key, userId, { categoryId: CAR_CATEGORY, attributes });
            live.push(ad.adId);
            touched.push(ad.adId);
            sent.set(ad.adId, asRows(attributes));
            continue;
          }
          const target = live[w.ad % Math.max(live.length, 1)];
          if (target === undefined) continue;
          if (w.kind === "update") {
            const attributes = carAttributes(w.mileage, w.options, w.onPortalB).slice(w.sets === "both" ? 0 : 1);
            const body = {
              adId: target,
              attributes: w.sets === "none" ? undefined : attributes,
              settings: w.settings ?? undefined,
            };
            expectEnvelope(await call("PUT", "/ads/", { key, body }), 200);
            if (body.attributes) asRows(body.attributes, sent.get(target));
          } else if (w.kind === "settings") {
            expectEnvelope(
              await call("POST", "/adsettings/", { key, body: { adId: target, settings: w.settings } }),
              200,
            );
          } else {
            expectEnvelope(await call("DELETE", `/ads/${target}`, { key }), 200);
            live.splice(live.indexOf(target), 1);
            sent.delete(target);
          }
        }
        await expectDetailsKept(touched);
        await expectAttributesSent(sent);
      }),
      { numRuns: 25, endOnFailure: true },
    );
  }, 600_000);

  it("let a page of full ads read a few rows per ad, however many attributes each has", async () => {
    const userId = (await createUser(key)).userId;
    for (let i = 0; i < 26; i += 1) {
      await createAd(key, userId, {
        categoryId: CAR_CATEGORY,
        attributes: carAttributes(1000 * i, ["airco", "navigatie", "trekhaak"], true),
        settings: [{ portal: "portal_a", showcontact: true }],
      });
    }
    const query = `/ads/?userId=${userId}&itemsPerPage=25`;
    await call("GET", query, { key }); // the catalogue, cached per isolate, is read once
    const page = await call("GET", query, { key });
    expectEnvelope(page, 200);
    expect(page.body.data[0].attributes.map((set: { attributes: unknown[] }) => set.attributes.length)).toEqual([8, 1]);
    // Each ad shows 9 attribute rows and a setting: 10 detail rows a page would read one by one.
    expect(d1RowsOf(page).read).toBeLessThanOrEqual(4 * 25 + 20);
  });
});
