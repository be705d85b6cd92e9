/** Publications on the portals, jobs, features, marketplace connections. */
import { type AnyColumn, sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { JOB_ACTIONS, MARKETPLACES, PUBLISH_TARGETS } from "../../lib/vocabulary";
import { users } from "./accounts";
import { ads } from "./ads";
import { AD_PARENT, BY_AD, BY_USER, byId, group, owners, USER_PARENT } from "./ownership";
import { createdAt, updatedAt } from "./shared";

/**
 * Publication state of an ad per portal (the spec's publish status object); written by publishing. It
 * outlives its ad (no foreign key): deleting an ad does not unpublish it, so the listing's reference
 * stays for the jobs still open on it (an unpublish asked for before the delete still runs).
 */
export const adPublications = sqliteTable(
  "ad_publications",
  {
    adId: integer("ad_id").notNull(),
    portal: text("portal", { enum: PUBLISH_TARGETS }).notNull(),
    pending: integer("pending", { mode: "boolean" }).notNull().default(false),
    pendingDate: text("pending_date"),
    processing: integer("processing", { mode: "boolean" }).notNull().default(false),
    processingDate: text("processing_date"),
    error: integer("error", { mode: "boolean" }).notNull().default(false),
    errorReason: text("error_reason"),
    active: integer("active", { mode: "boolean" }).notNull().default(false),
    online: integer("online", { mode: "boolean" }).notNull().default(false),
    startDate: text("start_date"),
    closeDate: text("close_date"),
    remoteAdId: integer("remote_ad_id").notNull().default(0),
    /** The marketplace account that holds the listing (its connection's `externalUserId` when placed). */
    remoteAccountId: integer("remote_account_id"),
    clientResult: integer("client_result", { mode: "boolean" }).notNull().default(false),
    queueResult: integer("queue_result", { mode: "boolean" }).notNull().default(false),
    /** The latest job of this publication (the job a client can follow). */
    queueItemId: integer("queue_item_id"),
  },
  (t) => [primaryKey({ columns: [t.adId, t.portal] }), index("ad_publications_active").on(t.portal, t.active)],
);

/** Updates asked for (manufacturer batch with publish, image autoupdate) that publishing turns into queued jobs. */
export const adUpdateRequests = sqliteTable(
  "ad_update_requests",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: PUBLISH_TARGETS }).notNull(),
    reason: text("reason").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("ad_update_requests_ad").on(t.adId)],
);

/** A user's OAuth connection to a marketplace. Tokens are AES-GCM encrypted (TOKEN_ENCRYPTION_KEY). */
export const portalConnections = sqliteTable(
  "portal_connections",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    status: integer("status", { mode: "boolean" }).notNull().default(false),
    externalUserId: integer("external_user_id"),
    accessToken: text("access_token"),
    accessTokenExpire: text("access_token_expire"),
    refreshToken: text("refresh_token"),
    email: text("email").notNull().default(""),
    scope: text("scope", { mode: "json" }).$type<string[]>().notNull().default([]),
    /** The `state` of the authorization in progress, and when it stops being accepted. */
    oauthState: text("oauth_state"),
    oauthStateExpire: text("oauth_state_expire"),
    /** The PKCE code verifier of that authorization (sealed), sent with the code. */
    oauthCodeVerifier: text("oauth_code_verifier"),
    /** Where the user goes after consent (one of the client's return origins); none: the API's own page. */
    oauthReturnUrl: text("oauth_return_url"),
    /** When bids and statistics were last pulled; the cron takes the longest-waiting first. */
    marketDataPulledAt: text("market_data_pulled_at"),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.portal] }),
    index("portal_connections_pull").on(t.status, t.marketDataPulledAt),
  ],
);

/** The states of a job in which it still has work to do: at most one such job per ad, portal and kind. */
export const OPEN_ITEM_STATES = ["pending", "processing"] as const;

/**
 * A job with work left, in the words of the partial indexes on it: SQLite reads a partial index only for a
 * query whose WHERE says the index's condition, so the cron's queries say it with this.
 */
export const jobIsOpen = (status: AnyColumn) => sql`${status} IN ('pending', 'processing')`;

/**
 * A queued publish, update, unpublish or feature job for one ad on one portal. Jobs outlive their ad
 * and user (no foreign key): what was charged, refunded and listed stays on the books.
 */
export const publishJobs = sqliteTable(
  "queue_items",
  {
    // The rowid, not AUTOINCREMENT: no id counter written per job; jobs are never deleted, so no id returns.
    id: integer("id").primaryKey(),
    adId: integer("ad_id").notNull(),
    userId: integer("user_id").notNull(),
    portal: text("portal", { enum: PUBLISH_TARGETS }).notNull(),
    action: text("action", { enum: JOB_ACTIONS }).notNull(),
    feature: text("feature"),
    images: integer("images", { mode: "boolean" }).notNull().default(true),
    status: text("status", { enum: ["pending", "processing", "done", "error", "cancelled"] })
      .notNull()
      .default("pending"),
    /** The last error: the portal's or our reason for a failure, or the transient error before a retry. */
    reason: text("reason"),
    /** Which write made the job: lets one D1 batch tell its own insert from an open job already there. */
    nonce: text("nonce"),
    /** The placement's stable reference at the marketplace (a retried or redelivered job reuses it). */
    externalRef: text("external_ref"),
    /** What the job was charged, in cents (0 when free). */
    cost: integer("cost").notNull().default(0),
    payerId: integer("payer_id"),
    attempts: integer("attempts").notNull().default(0),
    /** When the job is next expected to be worked on; the cron re-sends a pending job well past it. */
    retryAt: text("retry_at"),
    /** An update asked for while this update was being sent: it is sent once more with the newest content. */
    rerun: integer("rerun", { mode: "boolean" }).notNull().default(false),
    /** The marketplace listing the job made or acted on, once it succeeded (the ad's id on the website). */
    remoteAdId: integer("remote_ad_id"),
    /** The failed job this one retries (POST /jobs/<id>/retry). */
    retryOf: integer("retry_of"),
    /** The request that queued the job, for log correlation. */
    requestId: text("request_id"),
    /**
     * Since when the job waits for a connection to ask its marketplace through (it may be there already);
     * set once when the wait starts, so re-runs do not move it; null when not waiting.
     */
    waitingSince: text("waiting_since"),
    /** The marketplace account the job may be at, known when its wait started (null: none known). */
    waitingAccount: integer("waiting_account"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    // Without the status: a job's state changes (claimed, done) then move no index entry here.
    index("queue_items_ad").on(t.adId, t.portal),
    index("queue_items_user").on(t.userId, t.id),
    // One open job per ad, portal and kind (and feature), whatever the timing of the calls that ask for it.
    // It also lists the open jobs for the cron (few: a job is open for seconds): an entry is written once,
    // never moves (the status is not in it) and leaves for free when the job ends.
    uniqueIndex("queue_items_open_intent")
      .on(t.adId, t.portal, t.action, sql`coalesce(${t.feature}, '')`)
      .where(jobIsOpen(t.status)),
  ],
);

/** Paid features of a published ad per portal. */
export const adFeatures = sqliteTable(
  "ad_features",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    feature: text("feature").notNull(),
    pending: integer("pending", { mode: "boolean" }).notNull().default(false),
    pendingDate: text("pending_date"),
    error: integer("error", { mode: "boolean" }).notNull().default(false),
    active: integer("active", { mode: "boolean" }).notNull().default(false),
    startDate: text("start_date"),
  },
  (t) => [primaryKey({ columns: [t.adId, t.portal, t.feature] })],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const publishingOwners = owners([
  [adPublications, group(BY_AD)],
  [adUpdateRequests, group(byId("ad_update_requests"), { parents: AD_PARENT })],
  [adFeatures, group(BY_AD, { parents: AD_PARENT })],
  [portalConnections, group(BY_USER, { parents: USER_PARENT })],
  [publishJobs, group(byId("queue_items"))],
]);
