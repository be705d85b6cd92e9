import { type SQL, sql } from "drizzle-orm";
import { type Db, d1Statement, namedD1Batch, rowsOf } from "../../../db/client";
import { groupOfUser, nextId } from "../../../db/ids";
import { publishJobs, walletEntries } from "../../../db/schema";
import type { Env } from "../../../env";
import { randomToken } from "../../../lib/crypto";
import { log } from "../../../lib/log";
import { type Metrics, metricsOf } from "../../../lib/metrics";
import { nowIso } from "../../../lib/time";
import { type JobAction, jobKindSql, type PublishTarget } from "../../../lib/vocabulary";
import { eventOf } from "../../events/events";
import type { JobContext } from "../../shared/context";
import type { PublishMessage } from "../../shared/jobMessages";
import { ADS_REVISION, bumpRevisions } from "../../shared/revisions";
import { noteBudgetCrossing } from "../../wallet/wallet";
import { fundsWalk } from "./funds";
import { sameListingOrFeature } from "./lifecycle";
import type { JobRef } from "./states";

/** A decision: something to do for one ad on one portal, and what it costs whom. A job carries it. */
export interface Decision {
  adId: number;
  userId: number;
  portal: PublishTarget;
  action: JobAction;
  feature?: string | null;
  images: boolean;
  /** Cents; 0 when free. */
  cost: number;
  payerId: number;
  /** The ledger's text for the charge. */
  description: string;
  /**
   * A placement asked for by POST /publish/: when the listing is live (and no unpublish is queued), it
   * becomes a free update instead. Decided in the transaction that queues it, not from an earlier read.
   */
  updateIfLive?: boolean;
  /** A retried placement keeps the reference of the one it retries. */
  externalRef?: string;
  retryOf?: number;
}

/**
 * Per decision: the job that carries it (`created` when this call made it; a retry answers the job made
 * to retry its failed job), with the kind and cost it was queued as; or why nothing was queued: its payer
 * cannot pay, or the listing is not (or no longer) in a state the job applies to (`not_applicable`:
 * an update or unpublish of a listing that is not live, a placement of one that is, a retry of a job a
 * newer one superseded).
 */
export type QueuedJob =
  | { jobId: number; created: boolean; action: JobAction; cost: number; refused?: undefined }
  | { jobId?: undefined; created?: undefined; refused: "insufficient_means"; price: number; balance: number }
  | { jobId?: undefined; created?: undefined; refused: "not_applicable" };

/** Jobs written per D1 batch; each batch is a handful of statements whatever its size (the rows travel as JSON). */
const CHUNK = 100;

/**
 * Queues the decisions of a call as jobs, with exactly-once effects. Per chunk, one D1 batch (one
 * transaction) inserts a job for every decision that has no open job yet and that its payer's balance
 * still covers, by the funds rule (jobs/funds.ts: in the order given, passing over what it cannot cover),
 * charges it, sets its publication or feature flags, and reads back the open job of every decision; a
 * concurrent or repeated call finds the open job (the unique index `queue_items_open_intent` makes a
 * second one impossible) and is answered with it, without a second charge. Messages go out per chunk
 * as soon as its rows are written; a lost message is re-sent by the cron.
 */
export async function queueJobs(ctx: JobContext, decisions: Decision[]): Promise<QueuedJob[]> {
  const { db, env, requestId } = ctx;
  const results: QueuedJob[] = [];
  for (let i = 0; i < decisions.length; i += CHUNK) {
    const chunk = decisions.slice(i, i + CHUNK);
    const queued = await writeChunk(db, env.shard.d1, chunk, requestId);
    results.push(...queued);
    await sendJobs(
      env,
      chunk.flatMap((decision, at) => {
        const q = queued[at];
        return q?.created
          ? [{ job: { ...decision, action: q.action, id: q.jobId, feature: decision.feature ?? null }, requestId }]
          : [];
      }),
    );
    await noteCharges(db, metricsOf(env), chunk, queued);
  }
  return results;
}

interface OutcomeRow {
  idx: number;
  applicable: number;
  /** What the decision costs, and (only when its payer could not pay) the payer's balance. */
  price: number;
  balance: number | null;
  id: number | null;
  action: JobAction | null;
  cost: number | null;
  created: number | null;
}

/**
 * The decisions of a chunk as a table, each decided again against the state of its listing in this transaction:
 * `action` and `cost` (a placement of a live listing asked for with `updateIfLive` is a free update) and
 * `applicable`: a placement needs a listing that is not live, an update or a feature a live one, an
 * unpublish an active one, and a retry must still be the newest attempt of its listing (or feature).
 * Live is `isLive` (active, its close date not passed) with no unpublish queued: the queued work will take it down.
 */
function decisionsTable(rows: string, now: string) {
  const active = sql.raw(
    "EXISTS (SELECT 1 FROM ad_publications p WHERE p.ad_id = i.ad_id AND p.portal = i.portal AND p.active = 1)",
  );
  const live = sql`(EXISTS (SELECT 1 FROM ad_publications p WHERE p.ad_id = i.ad_id AND p.portal = i.portal AND p.active = 1
 AND (p.close_date IS NULL OR p.close_date > ${now})) AND NOT EXISTS (SELECT 1 FROM queue_items u WHERE u.ad_id = i.ad_id
 AND u.portal = i.portal AND u.action = 'unpublish' AND u.status IN ('pending', 'processing')))`;
  const job = {
    adId: sql.raw("i.ad_id"),
    portal: sql.raw("i.portal"),
    action: sql.raw("i.action"),
    feature: sql.raw("i.feature"),
  };
  const superseded = sql`(i.retry_of IS NOT NULL AND EXISTS (SELECT 1 FROM queue_items n WHERE ${sameListingOrFeature("n", job)}
 AND n.id > i.retry_of))`;
  return sql`(SELECT i.idx, i.ad_id, i.user_id, i.portal, i.feature, i.images, i.payer_id, i.description, i.external_ref, i.retry_of,
 CASE WHEN i.update_if_live = 1 AND ${live} THEN 'update' ELSE i.action END AS action,
 CASE WHEN i.update_if_live = 1 AND ${live} THEN 0 ELSE i.cost END AS cost,
 CASE i.action
 WHEN 'publish' THEN i.update_if_live = 1 OR NOT ${live}
 WHEN 'unpublish' THEN ${active}
 ELSE ${live}
 END AND NOT ${superseded} AS applicable
 FROM (SELECT CAST(j.key AS INTEGER) AS idx,
 j.value ->> '$.adId' AS ad_id, j.value ->> '$.userId' AS user_id,
 j.value ->> '$.portal' AS portal, j.value ->> '$.action' AS action,
 j.value ->> '$.feature' AS feature, j.value ->> '$.images' AS images,
 j.value ->> '$.cost' AS cost, j.value ->> '$.payerId' AS payer_id,
 j.value ->> '$.description' AS description, j.value ->> '$.externalRef' AS external_ref,
 j.value ->> '$.retryOf' AS retry_of, j.value ->> '$.updateIfLive' AS update_if_live
 FROM json_each(${rows}) j) i)`;
}

/** The balance of the payer of the row `alias` (its ledger's sum), as the transaction sees it. */
const payerBalance = (alias: string) =>
  sql.raw(`(SELECT coalesce(sum(w.amount), 0) FROM wallet_entries w WHERE w.user_id = ${alias}.payer_id)`);

/** The open job carrying the same decision as the decision `alias` (at most one, by `queue_items_open_intent`). */
const sameOpenJob = (alias: string) =>
  sql.raw(`o.ad_id = ${alias}.ad_id AND o.portal = ${alias}.portal AND o.action = ${alias}.action
 AND coalesce(o.feature, '') = coalesce(${alias}.feature, '') AND o.status IN ('pending', 'processing')`);

async function writeChunk(db: Db, d1: D1Database, chunk: Decision[], requestId?: string): Promise<QueuedJob[]> {
  const rows = JSON.stringify(
    chunk.map((decision) => ({
      adId: decision.adId,
      userId: decision.userId,
      portal: decision.portal,
      action: decision.action,
      feature: decision.feature ?? null,
      images: decision.images ? 1 : 0,
      cost: decision.cost,
      payerId: decision.payerId,
      description: decision.description,
      externalRef: decision.externalRef ?? null,
      retryOf: decision.retryOf ?? null,
      updateIfLive: decision.updateIfLive ? 1 : 0,
    })),
  );
  const nonce = randomToken(12);
  const now = nowIso();
  const decided = decisionsTable(rows, now);
  // The jobs this batch inserted, reached through their listings (queue_items_ad): a scan for the nonce
  // would read every job of the shard.
  const inserted = sql`(SELECT q.id FROM ${decided} d JOIN queue_items q ON q.ad_id = d.ad_id AND q.portal = d.portal
 WHERE q.nonce = ${nonce})`;
  const statement = (query: SQL) => d1Statement(d1, query);
  const { outcome } = await namedD1Batch(d1, {
    // Jobs for the applicable decisions with no open job, taken by the funds rule (jobs/funds.ts) from
    // their payer's balance in this transaction.
    insert: statement(sql`INSERT OR IGNORE INTO queue_items
 (id, ad_id, user_id, portal, action, feature, images, nonce, external_ref, cost, payer_id, retry_at, retry_of, request_id)
 WITH RECURSIVE ${fundsWalk(sql`(SELECT d.*, ${payerBalance("d")} AS funds FROM ${decided} d
 WHERE d.applicable AND NOT EXISTS (SELECT 1 FROM queue_items o WHERE ${sameOpenJob("d")}))`)}
 SELECT ${nextId(publishJobs, groupOfUser(sql`c.user_id`), sql`c.idx`)}, c.ad_id, c.user_id, c.portal, c.action, c.feature, c.images, ${nonce},
 coalesce(c.external_ref, 'ad-' || c.ad_id || '-' || c.portal || '-' || ${nonce}), c.cost, c.payer_id, ${now}, c.retry_of, ${requestId ?? null}
 FROM candidates c JOIN walk w ON w.idx = c.idx
 WHERE w.taken
 ORDER BY c.idx`),
    // Their charges, in the same transaction: never a charge without a job, nor a job unpaid.
    charges:
      statement(sql`INSERT INTO wallet_entries (id, user_id, amount, kind, description, ad_id, portal, queue_item_id)
 SELECT ${nextId(walletEntries, groupOfUser(sql`q.payer_id`), sql`row_number() OVER (ORDER BY q.id)`)}, q.payer_id, -q.cost, 'charge', d.description, q.ad_id, q.portal, q.id
 FROM queue_items q JOIN ${decided} d
 ON d.ad_id = q.ad_id AND d.portal = q.portal AND d.action = q.action AND coalesce(d.feature, '') = coalesce(q.feature, '')
 WHERE q.nonce = ${nonce} AND q.cost > 0`),
    // Event `queued` of the state machine: the publication (or feature) follows its new job.
    publications:
      statement(sql`INSERT INTO ad_publications (ad_id, portal, pending, pending_date, processing, error, error_reason, queue_result, queue_item_id)
 SELECT ad_id, portal, 1, ${now}, 0, 0, NULL, 1, id FROM queue_items WHERE id IN ${inserted} AND action != 'feature'
 ON CONFLICT (ad_id, portal) DO UPDATE SET pending = 1, pending_date = excluded.pending_date, processing = 0,
 error = 0, error_reason = NULL, queue_result = 1, queue_item_id = excluded.queue_item_id`),
    features: statement(sql`INSERT INTO ad_features (ad_id, portal, feature, pending, pending_date, error)
 SELECT ad_id, portal, feature, 1, ${now}, 0 FROM queue_items WHERE id IN ${inserted} AND action = 'feature'
 ON CONFLICT (ad_id, portal, feature) DO UPDATE SET pending = 1, pending_date = excluded.pending_date, error = 0`),
    // Its event, in the same transaction: `publish.pending` for a placement, update or unpublish.
    event: d1Statement(
      d1,
      eventOf(
        db,
        {
          type: "publish.pending",
          userId: publishJobs.userId,
          adId: publishJobs.adId,
          portal: publishJobs.portal,
          data: sql`json_object('queueItemId', ${publishJobs.id}, 'kind', ${jobKindSql(publishJobs.action)})`,
        },
        sql`${publishJobs.id} IN ${inserted} AND ${publishJobs.action} != 'feature'`,
        publishJobs,
      ),
    ),
    // An update asked for while the same update is being sent: that one goes out once more, with what is new.
    reruns: statement(sql`UPDATE queue_items SET rerun = 1
 WHERE id IN (SELECT o.id FROM ${decided} d JOIN queue_items o ON o.ad_id = d.ad_id AND o.portal = d.portal
 WHERE d.action = 'update' AND d.applicable AND o.status = 'processing' AND o.action = 'update')`),
    // Per decision, the job that carries it: a retry's own job, else the open job of the same decision.
    outcome: rowsOf<OutcomeRow>(
      statement(sql`SELECT r.idx, r.applicable, r.price, q.id, q.action, q.cost, q.nonce = ${nonce} AS created,
 CASE WHEN q.id IS NULL AND r.applicable THEN ${payerBalance("r")} END AS balance
 FROM (SELECT d.idx, d.applicable, d.cost AS price, d.payer_id, CASE WHEN d.retry_of IS NOT NULL
 THEN (SELECT max(o.id) FROM queue_items o WHERE o.ad_id = d.ad_id AND o.retry_of = d.retry_of)
 ELSE (SELECT o.id FROM queue_items o WHERE ${sameOpenJob("d")}) END AS job_id
 FROM ${decided} d) r
 LEFT JOIN queue_items q ON q.id = r.job_id
 ORDER BY r.idx`),
    ),
    // Jobs, charges and listings show in the ads' answers only (no user's cached answer holds them).
    revisions: d1Statement(d1, bumpRevisions(db, [ADS_REVISION])),
  });
  return outcome.results.map((row) =>
    row.id !== null && row.action !== null
      ? { jobId: row.id, created: row.created === 1, action: row.action, cost: row.cost ?? 0 }
      : row.applicable
        ? { refused: "insufficient_means", price: Number(row.price), balance: row.balance ?? 0 }
        : { refused: "not_applicable" },
  );
}

/** Sends the messages of jobs to run; a failure is logged and left to the cron, which re-sends open jobs. */
export async function sendJobs(env: Env, messages: { job: JobRef; requestId?: string }[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 100) {
    const chunk = messages.slice(i, i + 100);
    try {
      await env.JOBS.sendBatch(chunk.map(({ job, requestId }) => ({ body: publishMessage(job, requestId) })));
    } catch (error) {
      log("error", "queue send failed; the cron re-sends these jobs", {
        itemIds: chunk.map((message) => message.job.id),
        requestId: chunk[0]?.requestId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
}

/** The queue message of a job: its id and fixed columns. */
export const publishMessage = (
  { id, userId, adId, portal, action, feature }: JobRef,
  requestId?: string,
): PublishMessage => ({
  kind: "publish",
  itemId: id,
  item: { userId, adId, portal, action, feature },
  requestId,
});

/** After charges: a wallet metric per charge, and the budget notice of each payer whose balance dropped (one query per payer charged). */
async function noteCharges(db: Db, metrics: Metrics, chunk: Decision[], queued: QueuedJob[]): Promise<void> {
  const charged = new Map<number, number>();
  chunk.forEach((job, i) => {
    const q = queued[i];
    if (!q?.created || q.cost <= 0) return;
    charged.set(job.payerId, (charged.get(job.payerId) ?? 0) + q.cost);
    metrics.record({ event: "wallet", entry: "charge", portal: job.portal, cents: q.cost });
  });
  for (const [payerId, amount] of charged) await noteBudgetCrossing(db, payerId, amount);
}
