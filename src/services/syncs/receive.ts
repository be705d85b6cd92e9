import { and, eq, sql } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { ads, syncs, userSettings } from "../../db/schema";
import { failureText } from "../../db/triggers";
import { DomainError, detail, type ErrorDetail } from "../../lib/errors";
import { nowIso } from "../../lib/time";
import { MARKETPLACES, PUBLISH_TARGETS, type PublishTarget } from "../../lib/vocabulary";
import { newAdContent, newAdDefaultsQuery } from "../ads/commands";
import { type Catalogue, loadCatalogue } from "../catalogue/catalogue";
import { eventOf } from "../events/events";
import { connectionQuery } from "../publishing/connections/connection";
import { clientIdOf, isInternal, isPartner, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { requireUnchanged } from "../shared/fixedFields";
import { balanceOf, payerIdOf } from "../wallet/wallet";
import { itemHash, planItem, syncedAdsOf, syncedAdsWhere, targetPlan } from "./plan";
import { SYNC_MAX_ITEMS, type SyncItem, type SyncOptions, type SyncPlan, type SyncView } from "./schemas";
import { sendSyncStep, syncView } from "./steps";
import { CHUNK_ITEMS, deleteStock, putChunk, putStockKeys, type StoredLine } from "./stockStore";

/** One line of a stock as the route read it: a valid item, or the problems of one that is not. */
export type StockLine =
  | { seq: number; item: SyncItem; problems?: undefined }
  | { seq: number; item?: undefined; externalAdId: number | null; problems: ErrorDetail[] };

/**
 * A stock as it arrives: its lines, read as they come (never held whole), and the SHA-256 of its bytes,
 * known once the last line is read (an Idempotency-Key's repeat must send the same stock).
 */
export interface Stock {
  lines: AsyncIterable<StockLine>;
  digest: () => Promise<string>;
}

/** A sync still receiving after this long lost its upload: it no longer holds its user's turn. */
const RECEIVE_LAPSE_MS = 10 * 60_000;

/** A stock's lines in chunks, with every line past SYNC_MAX_ITEMS refused as a whole stock too big. */
async function* chunksOf(lines: AsyncIterable<StockLine>): AsyncGenerator<StockLine[]> {
  let chunk: StockLine[] = [];
  for await (const line of lines) {
    if (line.seq > SYNC_MAX_ITEMS)
      throw DomainError.of("body_too_large", `items: a sync takes at most ${SYNC_MAX_ITEMS} items; split the stock`);
    chunk.push(line);
    if (chunk.length === CHUNK_ITEMS) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

/** A line whose externalAdId an earlier line of the stock has: refused, naming the first. */
function withoutRepeats(chunk: StockLine[], seen: Map<number, number>): StockLine[] {
  return chunk.map((line) => {
    if (!line.item) return line;
    const first = seen.get(line.item.externalAdId);
    if (first === undefined) {
      seen.set(line.item.externalAdId, line.seq);
      return line;
    }
    return {
      seq: line.seq,
      externalAdId: line.item.externalAdId,
      problems: [
        detail("validation_failed", `externalAdId: ${line.item.externalAdId} is also the item on line ${first}`),
      ],
    };
  });
}

/** The refusal of a stock that would end more than the share the request allows. */
function endingRefusal(ended: number, synced: number, maxEndedPercent: number): ErrorDetail | null {
  if (ended === 0 || ended * 100 <= maxEndedPercent * synced) return null;
  const percent = Math.ceil((ended * 100) / synced);
  return detail(
    "sync_would_end_too_many",
    `maxEndedPercent: the stock would end ${ended} of the user's ${synced} synced ads (${percent}%), more than ${maxEndedPercent}%; send maxEndedPercent=${percent} to allow it`,
  );
}

/**
 * Of the user's synced ads, how many there are and how many a stock holding `inStock` would end: their
 * externalAdIds read in one query (a user's stock is at most SYNC_MAX_ITEMS ads and what it had before).
 */
async function endingOf(db: Db, input: { userId: number; removal: SyncOptions["removal"]; inStock: Set<number> }) {
  const synced = await db
    .select({ externalAdId: ads.externalAdId })
    .from(ads)
    .where(syncedAdsWhere(input.userId, input.removal));
  const ended = synced.flatMap((ad) =>
    input.inStock.has(ad.externalAdId as number) ? [] : [ad.externalAdId as number],
  );
  return { synced: synced.length, ended };
}

/** Ads a dry run reads at a time for the targets the ads it ends are on. */
const ENDED_PER_READ = 500;

/**
 * `POST /syncs/preview`: what the sync would do, changing nothing: per item created, updated,
 * unchanged or refused (with the problems a real sync would meet: the item's fields, its category and
 * attributes, a fixed field it would change), the ads it would end, and per target the placements,
 * updates and removals with the placements' prices (a target the user cannot publish to refuses them).
 * A stock is read in chunks, each compared with the user's ads in one D1 round trip.
 */
export async function previewSync(ctx: ServiceContext, input: { options: SyncOptions; stock: Stock }) {
  const { db, caller } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  const user = await requireUser(db, caller, userId);
  const { defaults, wallet, connections, catalogue } = await previewFacts(db, userId);
  const plan: SyncPlan = {
    userId,
    items: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    ended: 0,
    refused: 0,
    targets: Object.fromEntries(
      PUBLISH_TARGETS.map((portal) => [portal, { place: 0, update: 0, remove: 0, cost: 0 }]),
    ) as SyncPlan["targets"],
    cost: 0,
    balance: await balanceOf(db, payerIdOf(userId, wallet?.walletUserId)),
    wouldRefuse: null,
    refusals: [],
  };
  const seen = new Map<number, number>();
  const inStock = new Set<number>();
  for await (const chunk of chunksOf(input.stock.lines)) {
    const lines = withoutRepeats(chunk, seen);
    plan.items += lines.length;
    for (const line of lines) {
      const externalAdId = line.item ? line.item.externalAdId : line.externalAdId;
      if (externalAdId !== null) inStock.add(externalAdId);
    }
    const known = await syncedAdsOf(
      db,
      userId,
      lines.flatMap((line) => (line.item ? [line.item.externalAdId] : [])),
    );
    for (const line of lines) {
      const refuse = (problems: ErrorDetail[]) => {
        plan.refused += 1;
        plan.refusals.push({ seq: line.seq, externalAdId: line.item?.externalAdId ?? null, errorDetails: problems });
      };
      if (!line.item) {
        refuse(line.problems);
        continue;
      }
      const ad = known.get(line.item.externalAdId);
      const item = planItem(catalogue, line.item, await itemHash(line.item), ad);
      const problems =
        item.outcome === "unchanged" ? [] : await itemProblems({ catalogue, line: line.item, ad, user, defaults });
      if (problems.length > 0) {
        refuse(problems);
        continue;
      }
      plan[item.outcome] += 1;
      for (const { portal, action, price } of item.targets) {
        const target = plan.targets[portal];
        target[action] += 1;
        if (connections.has(portal)) target.cost += price;
      }
    }
  }
  const { ended, synced } = await endingOf(db, { userId, removal, inStock });
  plan.ended = ended.length;
  plan.wouldRefuse = endingRefusal(ended.length, synced, maxEndedPercent);
  // An ended ad is taken off every target it is on.
  for (let from = 0; from < ended.length; from += ENDED_PER_READ)
    for (const ad of (await syncedAdsOf(db, userId, ended.slice(from, from + ENDED_PER_READ))).values())
      for (const { portal } of targetPlan(catalogue, { wanted: [], categoryId: null, ad, changed: false }))
        plan.targets[portal].remove += 1;
  plan.cost = PUBLISH_TARGETS.reduce((sum, portal) => sum + plan.targets[portal].cost, 0);
  for (const portal of MARKETPLACES)
    if (!connections.has(portal) && plan.targets[portal].place > 0)
      plan.refusals.push({
        seq: 0,
        externalAdId: null,
        errorDetails: [
          detail("portal_not_connected", `targets: the user is not connected to ${portal}; its placements are refused`),
        ],
      });
  return plan;
}

/** What a dry run reads once: the user's defaults, wallet, connected targets and the catalogue. */
async function previewFacts(db: Db, userId: number) {
  const { defaults, wallet, portal_a, portal_b } = await namedBatch(db, {
    defaults: newAdDefaultsQuery(db, userId),
    wallet: db
      .select({ walletUserId: userSettings.walletUserId })
      .from(userSettings)
      .where(eq(userSettings.userId, userId)),
    portal_a: connectionQuery(db, userId, "portal_a"),
    portal_b: connectionQuery(db, userId, "portal_b"),
  });
  const connected = { portal_a, portal_b } satisfies Record<(typeof MARKETPLACES)[number], unknown>;
  const connections = new Set<PublishTarget>([
    "website",
    ...MARKETPLACES.filter((portal) => connected[portal][0]?.status),
  ]);
  return { defaults: defaults[0], wallet: wallet[0], connections, catalogue: await loadCatalogue(db) };
}

/** The problems a real sync would meet writing an item: a new ad's checks, and the fields it cannot change. */
async function itemProblems(input: {
  catalogue: Catalogue;
  line: SyncItem;
  ad: { categoryId: number | null } | undefined;
  user: { companyName: string | null };
  defaults: Awaited<ReturnType<typeof previewFacts>>["defaults"];
}): Promise<ErrorDetail[]> {
  const { catalogue, line, ad, user, defaults } = input;
  const { problems } = await newAdContent(catalogue, { user, defaults }, { ...line, userId: 0 });
  if (ad)
    try {
      requireUnchanged({ categoryId: line.categoryId }, { categoryId: ad.categoryId }, ["categoryId"]);
    } catch (error) {
      if (error instanceof DomainError) problems.push(...error.details);
      else throw error;
    }
  return problems;
}

/**
 * `POST /syncs/`: takes a user's stock and starts applying it. The stock is stored as it arrives (a
 * chunk of lines per D1 batch: never held whole), each line checked on its own (a refused line is
 * reported and the rest goes on). Then, unless the stock would end more of the user's synced ads than
 * `maxEndedPercent` allows (refused whole: 409 `sync_would_end_too_many`), the sync runs in steps in
 * the client's lanes. One sync of a user at a time (409 `sync_in_progress`). An Idempotency-Key makes a
 * repeat with the same stock answer the sync it started (`replayed`), and one with another stock 422.
 */
export async function startSync(
  ctx: ServiceContext,
  input: { options: SyncOptions; idempotencyKey: string | undefined; stock: Stock },
): Promise<{ sync: SyncView; replayed: boolean }> {
  const { db, caller } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  await requireUser(db, caller, userId);
  const clientId = clientIdOf(caller);
  if (input.idempotencyKey !== undefined) {
    const earlier = await db
      .select()
      .from(syncs)
      .where(and(eq(syncs.clientId, clientId), eq(syncs.idempotencyKey, input.idempotencyKey)))
      .get();
    if (earlier) return { sync: await replayOf(input.stock, earlier), replayed: true };
  }
  const syncId = await claimUserTurn(ctx, input);
  const { STOCKS: bucket } = ctx.env;
  const seen = new Map<number, number>();
  const inStock = new Set<number>();
  let items = 0;
  try {
    let chunk = 0;
    for await (const lines of chunksOf(input.stock.lines)) {
      const stored = await storedLines(withoutRepeats(lines, seen));
      for (const line of stored) if (line.externalAdId !== null) inStock.add(line.externalAdId);
      await putChunk(bucket, syncId, "stock", chunk, stored);
      chunk += 1;
      items = lines.at(-1)?.seq ?? items;
    }
    await putStockKeys(bucket, syncId, inStock);
  } catch (error) {
    await db
      .update(syncs)
      .set({ state: "failed", reason: `the stock could not be read: ${failureText(error)}`, updatedAt: nowIso() })
      .where(eq(syncs.id, syncId));
    await deleteStock(bucket, syncId);
    throw error;
  }
  const digest = await input.stock.digest();
  const { ended, synced } = await endingOf(db, { userId, removal, inStock });
  const refusal = endingRefusal(ended.length, synced, maxEndedPercent);
  const { sync } = await namedBatch(db, {
    sync: db
      .update(syncs)
      .set({
        state: refusal ? "refused" : "running",
        items,
        digest,
        reason: refusal?.message ?? null,
        updatedAt: nowIso(),
      })
      .where(eq(syncs.id, syncId))
      .returning(),
    started: refusal
      ? []
      : [
          eventOf(db, {
            type: "sync.started",
            userId,
            data: sql`json_object('syncId', ${syncId}, 'items', ${items})`,
          }),
        ],
  });
  const [row] = sync;
  if (!row) throw new Error(`sync ${syncId} vanished while it was received`);
  if (refusal) {
    await deleteStock(bucket, syncId);
    throw new DomainError(refusal);
  }
  await sendSyncStep(ctx.env, { syncId, requestId: ctx.requestId });
  return { sync: startedView(row), replayed: false };
}

/** A repeat of a sync's Idempotency-Key: the same stock answers that sync (or its refusal), another 422. */
async function replayOf(stock: Stock, earlier: typeof syncs.$inferSelect): Promise<SyncView> {
  for await (const _line of stock.lines) {
    // Read to the end: the digest is of the whole stock.
  }
  if (earlier.state === "receiving")
    throw new DomainError(
      detail("idempotency_in_progress", "Idempotency-Key: a request with this key is still running"),
      { retryAfterSeconds: 1 },
    );
  if ((await stock.digest()) !== earlier.digest)
    throw DomainError.of("idempotency_conflict", "Idempotency-Key: was used with a different request");
  if (earlier.state === "refused" && earlier.reason)
    throw new DomainError(detail("sync_would_end_too_many", earlier.reason));
  return startedView(earlier);
}

/** The sync as its first answer showed it, just started: what a repeat of its Idempotency-Key answers again. */
const startedView = (row: typeof syncs.$inferSelect): SyncView =>
  syncView({
    ...row,
    state: "running",
    phase: "items",
    cursor: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    ended: 0,
    refused: 0,
    charged: 0,
    reason: null,
    finishedAt: null,
  });

/**
 * The sync's row, as the user's one sync under way (a unique index holds it). A sync that stopped
 * receiving its stock long ago (its upload died) gives up its turn; another under way refuses this one.
 */
async function claimUserTurn(
  ctx: ServiceContext,
  input: { options: SyncOptions; idempotencyKey: string | undefined },
): Promise<number> {
  const { db, caller } = ctx;
  const { userId, removal, maxEndedPercent } = input.options;
  const insert = () =>
    db
      .insert(syncs)
      .values({
        id: nextId(syncs, groupOfUser(userId)),
        clientId: clientIdOf(caller),
        internal: isInternal(caller),
        partner: isPartner(caller),
        userId,
        removal,
        maxEndedPercent,
        idempotencyKey: input.idempotencyKey ?? null,
        mediaBase: ctx.mediaBase,
      })
      .returning({ id: syncs.id })
      .get();
  for (let attempt = 0; ; attempt += 1) {
    try {
      const row = await insert();
      if (row) return row.id;
    } catch (error) {
      if (!failureText(error).includes("UNIQUE")) throw error;
    }
    const running = await db
      .select({ id: syncs.id, state: syncs.state, updatedAt: syncs.updatedAt, key: syncs.idempotencyKey })
      .from(syncs)
      .where(and(eq(syncs.userId, userId), sql`${syncs.state} IN ('receiving', 'running')`))
      .get();
    const lapsed = new Date(Date.now() - RECEIVE_LAPSE_MS).toISOString();
    if (running?.state === "receiving" && running.updatedAt < lapsed && attempt === 0) {
      await db
        .update(syncs)
        .set({ state: "failed", reason: "its stock stopped arriving before the last line", updatedAt: nowIso() })
        .where(and(eq(syncs.id, running.id), eq(syncs.state, "receiving")));
      continue;
    }
    if (running)
      throw new DomainError(
        detail(
          "sync_in_progress",
          `userId: sync ${running.id} of user ${userId} is still under way; wait for it (GET /syncs/${running.id})`,
        ),
        { retryAfterSeconds: 10 },
      );
    // Another request with this Idempotency-Key took it between the read and the insert.
    throw new DomainError(
      detail("idempotency_in_progress", "Idempotency-Key: a request with this key is still running"),
      { retryAfterSeconds: 1 },
    );
  }
}

/** A chunk of a stock's lines as stored: each valid item with its hash, each refused one with its problems. */
const storedLines = (lines: StockLine[]): Promise<StoredLine[]> =>
  Promise.all(
    lines.map(async (line) =>
      line.item
        ? { seq: line.seq, externalAdId: line.item.externalAdId, item: line.item, hash: await itemHash(line.item) }
        : { seq: line.seq, externalAdId: line.externalAdId, problems: line.problems },
    ),
  );
