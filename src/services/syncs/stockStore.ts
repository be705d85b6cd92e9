import type { ErrorDetail } from "../../lib/errors";
import type { ItemPlan } from "./plan";
import type { SyncItem, SyncItemReport } from "./schemas";

/**
 * A sync's stock and its report in R2 (`STOCKS`), a chunk of a step's items per object, so that the
 * stock is never held whole, a step reads one object, and an unchanged item writes no row of D1:
 *   syncs/<syncId>/stock/<n>.json   the stock's lines n·CHUNK_ITEMS+1 … as they arrived, checked
 *   syncs/<syncId>/keys.json        every externalAdId the stock holds (what the sync does not end)
 *   syncs/<syncId>/report/<n>.json  what applying chunk n did, per item (first as planned, then as done)
 *   syncs/<syncId>/ended/<n>.json   the n-th chunk of ended ads, the same way
 */

/** Items per chunk: what one step applies, and one object holds. */
export const CHUNK_ITEMS = 50;

/** A line of the stock as stored: the item and its hash, or the problems that refused it. */
export interface StoredLine {
  seq: number;
  externalAdId: number | null;
  item?: SyncItem;
  hash?: string;
  problems?: ErrorDetail[];
}

export type ItemReport = SyncItemReport & {
  /** The outcome the step that applied the item decided first: a step run again reports it, not what it finds. */
  planned: SyncItemReport["outcome"];
};

type Part = "stock" | "report" | "ended";

const keyOf = (syncId: number, part: Part, chunk: number) => `syncs/${syncId}/${part}/${chunk}.json`;
const keysKey = (syncId: number) => `syncs/${syncId}/keys.json`;

export async function putChunk(
  bucket: R2Bucket,
  syncId: number,
  part: "stock",
  chunk: number,
  rows: StoredLine[],
): Promise<void>;
export async function putChunk(
  bucket: R2Bucket,
  syncId: number,
  part: "report" | "ended",
  chunk: number,
  rows: ItemReport[],
): Promise<void>;
export async function putChunk(bucket: R2Bucket, syncId: number, part: Part, chunk: number, rows: unknown[]) {
  await bucket.put(keyOf(syncId, part, chunk), JSON.stringify(rows));
}

/** A chunk, or undefined when it was never written. */
export async function getChunk(
  bucket: R2Bucket,
  syncId: number,
  part: "stock",
  chunk: number,
): Promise<StoredLine[] | undefined>;
export async function getChunk(
  bucket: R2Bucket,
  syncId: number,
  part: "report" | "ended",
  chunk: number,
): Promise<ItemReport[] | undefined>;
export async function getChunk(bucket: R2Bucket, syncId: number, part: Part, chunk: number) {
  const object = await bucket.get(keyOf(syncId, part, chunk));
  return object ? ((await object.json()) as unknown[]) : undefined;
}

export const putStockKeys = (bucket: R2Bucket, syncId: number, externalAdIds: Iterable<number>) =>
  bucket.put(keysKey(syncId), JSON.stringify([...externalAdIds]));

export async function stockKeys(bucket: R2Bucket, syncId: number): Promise<Set<number>> {
  const object = await bucket.get(keysKey(syncId));
  return new Set(object ? ((await object.json()) as number[]) : []);
}

/** Removes a sync's objects (its row's retention ended, or it never started). */
export async function deleteStock(bucket: R2Bucket, syncId: number): Promise<void> {
  let cursor: string | undefined;
  do {
    const listed = await bucket.list({ prefix: `syncs/${syncId}/`, cursor });
    if (listed.objects.length > 0) await bucket.delete(listed.objects.map((object) => object.key));
    cursor = listed.truncated ? listed.cursor : undefined;
  } while (cursor);
}

/**
 * An item's report before it is applied: what the step plans, its outcome and each target's action (kept
 * when the step runs again: the report then says what the dead run planned and queued).
 */
export const plannedReport = (
  line: StoredLine,
  plan: ItemPlan | undefined,
  earlier: ItemReport | undefined,
  /** The ad the line's `externalAdId` names, refused lines' too: a report names the item's ad wherever known. */
  adId?: number,
): ItemReport => ({
  seq: line.seq,
  externalAdId: line.externalAdId,
  outcome: null,
  planned: earlier?.planned ?? (line.problems ? "refused" : (plan?.outcome ?? null)),
  adId: earlier?.adId ?? plan?.ad?.id ?? adId ?? null,
  targets:
    earlier?.targets ??
    (plan?.targets ?? []).map(({ portal, action }) => ({ portal, action, jobId: null, refusal: null })),
  errorDetails: line.problems ?? [],
});
