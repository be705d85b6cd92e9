import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Instants are stored as UTC ISO-8601 text; rendering to Amsterdam time happens at the edge of the API. */
const createdAt = () => text("created_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`);

export const apiClients = sqliteTable("api_clients", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  name: text("name").notNull().unique(),
  /** SHA-256 of the key, hex; the key itself is shown once and never stored. */
  keyHash: text("key_hash").notNull().unique(),
  internal: integer("internal", { mode: "boolean" }).notNull().default(false),
  partner: integer("partner", { mode: "boolean" }).notNull().default(false),
  /** Per-client override of RATE_LIMIT_RPS / RATE_LIMIT_BURST; null means the default. */
  rate: integer("rate"),
  burst: integer("burst"),
  revoked: integer("revoked", { mode: "boolean" }).notNull().default(false),
  createdAt: createdAt(),
});

const updatedAt = () => text("updated_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`);

export const users = sqliteTable(
  "users",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The API client that created the user; null when created manually. */
    clientId: integer("client_id").references(() => apiClients.id),
    externalUserId: integer("external_user_id"),
    companyName: text("company_name"),
    gender: text("gender"),
    firstName: text("first_name"),
    lastName: text("last_name"),
    dateOfBirth: text("date_of_birth"),
    address: text("address"),
    houseNumber: text("house_number"),
    postalCode: text("postal_code"),
    city: text("city"),
    county: text("county").notNull().default(""),
    country: text("country").notNull().default("NL"),
    email: text("email").notNull(),
    website: text("website"),
    phone: text("phone"),
    fax: text("fax"),
    cellular: text("cellular"),
    subscriptionStock: integer("subscription_stock", { mode: "boolean" }).notNull().default(false),
    subscriptionShop: integer("subscription_shop", { mode: "boolean" }).notNull().default(false),
    /** Set when the user was deleted: anonymised rows stay for the ads and transactions that refer to them. */
    deletedAt: text("deleted_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("users_client_idx").on(t.clientId, t.id)],
);

export const contacts = sqliteTable(
  "contacts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    address: text("address").notNull(),
    houseNumber: text("house_number").notNull(),
    postalCode: text("postal_code"),
    city: text("city").notNull(),
    county: text("county").notNull().default(""),
    phone: text("phone").notNull(),
    website: text("website"),
    chathandle: text("chathandle"),
    createdAt: createdAt(),
  },
  (t) => [index("contacts_user_idx").on(t.userId, t.id)],
);

export const folders = sqliteTable(
  "folders",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    description: text("description").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("folders_user_idx").on(t.userId, t.id)],
);

export const userSettings = sqliteTable("user_settings", {
  userId: integer("user_id")
    .primaryKey()
    .references(() => users.id, { onDelete: "cascade" }),
  mainUserId: integer("main_user_id").references(() => users.id, { onDelete: "set null" }),
  walletUserId: integer("wallet_user_id").references(() => users.id, { onDelete: "set null" }),
  maxContacts: integer("max_contacts").notNull().default(25),
  status: text("status", { enum: ["active", "locked"] })
    .notNull()
    .default("locked"),
  type: text("type", { enum: ["supply", "demand"] })
    .notNull()
    .default("supply"),
  allowbids: integer("allowbids", { mode: "boolean" }).notNull().default(true),
  showcontact: integer("showcontact", { mode: "boolean" }).notNull().default(true),
  itemsPerPage: integer("items_per_page").notNull().default(25),
  maxImages: integer("max_images").notNull().default(24),
  groupId: integer("group_id"),
  categoryId: integer("category_id"),
  /** JSON list of {key, value} defaults. */
  attributes: text("attributes", { mode: "json" }).$type<{ key: string; value: string }[]>().notNull().default([]),
  budgetNotifyLimit: integer("budget_notify_limit").notNull().default(0),
  updatedAt: updatedAt(),
});

export const userAdSettings = sqliteTable(
  "user_ad_settings",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: ["portal_a", "portal_b", "website"] }).notNull(),
    header: text("header").notNull(),
    footer: text("footer").notNull(),
    allowContactByEmail: integer("allow_contact_by_email", { mode: "boolean" }).notNull().default(true),
  },
  (t) => [primaryKey({ columns: [t.userId, t.portal] })],
);

export const PRICE_MODELS = ["fixed", "bidding", "see description", "reserved"] as const;
export const REMOVED_PRICE_MODELS = ["to be discussed", "by request", "trade", "buy it now"] as const;
export const AD_PORTALS = ["portal_a", "portal_b"] as const;
export const PUBLISH_PORTALS = ["portal_a", "portal_b", "website"] as const;
export const CATALOGUE_PORTALS = ["portal_a", "portal_b", "portal_own"] as const;

export const groups = sqliteTable("groups", {
  id: integer("id").primaryKey(),
  descriptionNl: text("description_nl").notNull(),
  descriptionEn: text("description_en").notNull(),
  /** Automotive groups allow misc.licensePlate. */
  automotive: integer("automotive", { mode: "boolean" }).notNull().default(false),
});

export const categories = sqliteTable("categories", {
  id: integer("id").primaryKey(),
  groupId: integer("group_id")
    .notNull()
    .references(() => groups.id),
  descriptionNl: text("description_nl").notNull(),
  descriptionEn: text("description_en").notNull(),
});

export const attributeDefinitions = sqliteTable(
  "attribute_definitions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    categoryId: integer("category_id")
      .notNull()
      .references(() => categories.id),
    portal: text("portal", { enum: CATALOGUE_PORTALS }).notNull(),
    key: text("key").notNull(),
    labelNl: text("label_nl").notNull(),
    labelEn: text("label_en").notNull(),
    /** Allowed options; empty for free text. */
    values: text("values", { mode: "json" }).$type<string[]>().notNull().default([]),
    type: text("type", { enum: ["DOUBLE", "LIST", "NUMBER", "STRING", "TEXT"] }).notNull(),
    sort: integer("sort").notNull().default(0),
    minimum: integer("minimum"),
    maximum: integer("maximum"),
    unit: text("unit").notNull().default(""),
    mandatory: integer("mandatory", { mode: "boolean" }).notNull().default(false),
    writable: integer("writable", { mode: "boolean" }).notNull().default(true),
    updatable: integer("updatable", { mode: "boolean" }).notNull().default(true),
    searchable: integer("searchable", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [uniqueIndex("attribute_definitions_key").on(t.categoryId, t.portal, t.key)],
);

export const categoryPrices = sqliteTable(
  "category_prices",
  {
    categoryId: integer("category_id")
      .notNull()
      .references(() => categories.id),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    action: text("action", {
      enum: ["plaatsen", "omhoogplaatsen", "blikvanger", "dagtopper", "topadvertentie"],
    }).notNull(),
    priceInternal: integer("price_internal").notNull(),
    priceExternal: integer("price_external").notNull(),
    priceTotal: integer("price_total").notNull(),
    priceNative: integer("price_native").notNull(),
  },
  (t) => [primaryKey({ columns: [t.categoryId, t.portal, t.action] })],
);

export const manufacturers = sqliteTable(
  "manufacturers",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    groupId: integer("group_id").references(() => groups.id),
    categoryId: integer("category_id").references(() => categories.id),
    brands: text("brands", { mode: "json" }).$type<string[]>().notNull().default([]),
    tradename: text("tradename").notNull(),
    address: text("address").notNull(),
    email: text("email").notNull(),
    description: text("description").notNull().default(""),
    createdAt: createdAt(),
  },
  (t) => [index("manufacturers_user_idx").on(t.userId)],
);

export const ads = sqliteTable(
  "ads",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    contactId: integer("contact_id").references(() => contacts.id, { onDelete: "set null" }),
    folderId: integer("folder_id").references(() => folders.id, { onDelete: "set null" }),
    status: text("status", { enum: ["concept", "active", "archive"] })
      .notNull()
      .default("active"),
    externalAdId: integer("external_ad_id"),
    type: text("type", { enum: ["supply", "demand"] })
      .notNull()
      .default("supply"),
    title: text("title").notNull(),
    imagetext: text("imagetext"),
    description: text("description").notNull().default(""),
    categoryId: integer("category_id").references(() => categories.id),
    url: text("url"),
    priceModel: text("price_model").notNull().default("see description"),
    price: integer("price"),
    minimumBid: integer("minimum_bid"),
    shippingCosts: integer("shipping_costs"),
    retail: integer("retail"),
    licensePlate: text("license_plate"),
    /** Alternative seller data (JSON): personal data, cleared when the user is anonymised. */
    provider: text("provider", { mode: "json" }).$type<Record<string, string>>(),
    manufacturerId: integer("manufacturer_id").references(() => manufacturers.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("ads_user_idx").on(t.userId, t.status),
    index("ads_contact_idx").on(t.contactId),
    index("ads_folder_idx").on(t.folderId),
    index("ads_category_idx").on(t.categoryId),
    index("ads_created_idx").on(t.createdAt),
  ],
);

/** Attribute values of an ad per portal; a multi-value key has one row per value. */
export const adAttributes = sqliteTable(
  "ad_attributes",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    locale: text("locale").notNull().default("nl_NL"),
    key: text("key").notNull(),
    value: text("value").notNull(),
    /** The value as a number when it is one, for range search. */
    valueNumber: real("value_number"),
    seq: integer("seq").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.adId, t.portal, t.seq] }),
    index("ad_attributes_search").on(t.portal, t.key, t.value),
    index("ad_attributes_range").on(t.portal, t.key, t.valueNumber),
  ],
);

export const adSettings = sqliteTable(
  "ad_settings",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    showcontact: integer("showcontact", { mode: "boolean" }).notNull().default(true),
    autoreplace: integer("autoreplace", { mode: "boolean" }).notNull().default(false),
    video: text("video"),
  },
  (t) => [primaryKey({ columns: [t.adId, t.portal] })],
);

/** Publication state of an ad per portal (the spec's publish status object); written by publishing. */
export const adPublications = sqliteTable(
  "ad_publications",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: PUBLISH_PORTALS }).notNull(),
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
    clientResult: integer("client_result", { mode: "boolean" }).notNull().default(false),
    queueResult: integer("queue_result", { mode: "boolean" }).notNull().default(false),
    /** The latest queue item of this publication (the job a client can follow). */
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
    portal: text("portal", { enum: PUBLISH_PORTALS }).notNull(),
    reason: text("reason").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("ad_update_requests_ad").on(t.adId)],
);

/** Revision counters behind the response cache: a write bumps its keys, so cached answers go stale at once. */
export const cacheRevisions = sqliteTable("cache_revisions", {
  key: text("scope").primaryKey(),
  revision: integer("revision").notNull().default(0),
});

/**
 * Images of an ad. Order is `sort_key` (new images take their job id, so they land in request order);
 * the spec's `counter` is the row number in that order, so counters are 1..n without gaps by design.
 */
export const adImages = sqliteTable(
  "ad_images",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    /** The ingestion job that made it; unique, so a redelivered job cannot add it twice. */
    jobId: integer("job_id").notNull().unique(),
    sortKey: real("sort_key").notNull(),
    originalKey: text("original_key").notNull(),
    thumbnailKey: text("thumbnail_key").notNull(),
    contentType: text("content_type").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("ad_images_order").on(t.adId, t.sortKey)],
);

/** One ingestion job per requested image: the spec's image status record. */
export const imageJobs = sqliteTable(
  "image_jobs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    userId: integer("user_id").notNull(),
    sourceUrl: text("source_url").notNull().default(""),
    sourcePath: text("source_path").notNull().default(""),
    autoupdate: integer("autoupdate", { mode: "boolean" }).notNull().default(true),
    processing: integer("processing", { mode: "boolean" }).notNull().default(false),
    done: integer("done", { mode: "boolean" }).notNull().default(false),
    result: integer("result", { mode: "boolean" }).notNull().default(false),
    reason: text("reason"),
    createdAt: createdAt(),
  },
  (t) => [index("image_jobs_ad").on(t.adId, t.done), index("image_jobs_user").on(t.userId, t.adId)],
);

/** A user's OAuth connection to a marketplace. Tokens are AES-GCM encrypted (TOKEN_ENCRYPTION_KEY). */
export const portalConnections = sqliteTable(
  "portal_connections",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
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
    /** When bids and statistics were last pulled; the cron takes the longest-waiting first. */
    marketDataPulledAt: text("market_data_pulled_at"),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.portal] }),
    index("portal_connections_pull").on(t.status, t.marketDataPulledAt),
  ],
);

/** Append-only wallet ledger in cents; a balance is the sum of a payer's entries. */
export const walletEntries = sqliteTable(
  "wallet_entries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    amount: integer("amount").notNull(),
    kind: text("kind", { enum: ["credit", "debit", "charge", "refund"] }).notNull(),
    description: text("description").notNull(),
    adId: integer("ad_id"),
    portal: text("portal"),
    queueItemId: integer("queue_item_id"),
    createdAt: createdAt(),
  },
  (t) => [
    index("wallet_entries_user").on(t.userId),
    uniqueIndex("wallet_entries_refund_once").on(t.queueItemId, t.kind),
  ],
);

/** The states of a queue item in which it still has work to do: at most one such item per intent. */
export const OPEN_ITEM_STATES = ["pending", "processing"] as const;

/** A queued publish, update, unpublish or feature job for one ad on one portal. */
export const queueItems = sqliteTable(
  "queue_items",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    userId: integer("user_id").notNull(),
    portal: text("portal", { enum: PUBLISH_PORTALS }).notNull(),
    action: text("action", { enum: ["publish", "update", "unpublish", "feature"] }).notNull(),
    feature: text("feature"),
    images: integer("images", { mode: "boolean" }).notNull().default(true),
    status: text("status", { enum: ["pending", "processing", "done", "error", "cancelled"] })
      .notNull()
      .default("pending"),
    /** The last error: the portal's or our reason for a failure, or the transient error before a retry. */
    reason: text("reason"),
    /** Which write made the item: lets one D1 batch tell its own insert from an open item already there. */
    nonce: text("nonce"),
    /** The placement's stable reference at the marketplace (a retried or redelivered job reuses it). */
    externalRef: text("external_ref"),
    /** What the item was charged, in cents (0 when free). */
    cost: integer("cost").notNull().default(0),
    payerId: integer("payer_id"),
    attempts: integer("attempts").notNull().default(0),
    /** When the item is next expected to be worked on; the cron re-sends a pending item well past it. */
    retryAt: text("retry_at"),
    /** An update asked for while this update was being sent: it is sent once more with the newest content. */
    rerun: integer("rerun", { mode: "boolean" }).notNull().default(false),
    /** The failed item this one retries (POST /jobs/<id>/retry). */
    retryOf: integer("retry_of"),
    /** The request that queued the item, for log correlation. */
    requestId: text("request_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("queue_items_ad").on(t.adId, t.portal, t.status),
    index("queue_items_user").on(t.userId, t.id),
    index("queue_items_waiting").on(t.status, t.retryAt),
    // One open intent per ad, portal and kind, whatever the timing of the calls that ask for it.
    uniqueIndex("queue_items_open_intent")
      .on(t.adId, t.portal, t.action, sql`coalesce(${t.feature}, '')`)
      .where(sql`${t.status} IN ('pending', 'processing')`),
  ],
);

/** Paid features of a published ad per portal. */
export const adFeatures = sqliteTable(
  "ad_features",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    feature: text("feature").notNull(),
    pending: integer("pending", { mode: "boolean" }).notNull().default(false),
    pendingDate: text("pending_date"),
    error: integer("error", { mode: "boolean" }).notNull().default(false),
    active: integer("active", { mode: "boolean" }).notNull().default(false),
    startDate: text("start_date"),
  },
  (t) => [primaryKey({ columns: [t.adId, t.portal, t.feature] })],
);

/** Bids on listings, pulled from the marketplaces. */
export const bids = sqliteTable(
  "bids",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    remoteBidId: integer("remote_bid_id").notNull(),
    amount: integer("amount").notNull(),
    name: text("name").notNull(),
    message: text("message").notNull().default(""),
    isRead: integer("is_read", { mode: "boolean" }).notNull().default(false),
    placedAt: text("placed_at").notNull(),
  },
  (t) => [uniqueIndex("bids_remote").on(t.portal, t.remoteBidId), index("bids_ad").on(t.adId)],
);

/** Daily statistics of a listing, pulled from the marketplaces. */
export const adStatistics = sqliteTable(
  "ad_statistics",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    date: text("date").notNull(),
    views: integer("views").notNull().default(0),
    asqs: integer("asqs").notNull().default(0),
    bids: integer("bids").notNull().default(0),
    url: integer("url").notNull().default(0),
    phone: integer("phone").notNull().default(0),
    favorites: integer("favorites").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.adId, t.portal, t.date] })],
);

export const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const;

/** A scheduled bump-up (or other feature) of a user's ads on a portal, at an Amsterdam wall-clock time. */
export const tasks = sqliteTable(
  "tasks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: AD_PORTALS }).notNull(),
    feature: text("feature").notNull().default("upcall"),
    /** hh:mm, Europe/Amsterdam. */
    time: text("time").notNull(),
    /** Weekdays it runs on; null: every day. */
    dayOfWeek: text("day_of_week", { mode: "json" }).$type<(typeof WEEKDAYS)[number][] | null>(),
    /** The ads it bumps; empty: every active ad of the user published on the portal. */
    adIds: text("ad_ids", { mode: "json" }).$type<number[]>().notNull().default([]),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("tasks_due").on(t.enabled, t.time), index("tasks_user").on(t.userId, t.portal)],
);

/** One run of a task for one due minute; the run key makes a due minute run at most once. */
export const taskRuns = sqliteTable(
  "task_runs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    taskId: integer("task_id")
      .notNull()
      .references(() => tasks.id, { onDelete: "cascade" }),
    /** `<taskId>@<Amsterdam date>T<hh:mm>`. */
    runKey: text("run_key").notNull().unique(),
    dueAt: text("due_at").notNull(),
    ads: integer("ads").notNull().default(0),
    queued: integer("queued").notNull().default(0),
    skipped: text("skipped", { mode: "json" }).$type<{ adId: number; reason: string }[]>().notNull().default([]),
    cost: integer("cost").notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index("task_runs_task").on(t.taskId, t.dueAt)],
);

/** Outbox of notices to users (budget below the limit); sending is a seam, the cron hands them over. */
export const notifications = sqliteTable(
  "notifications",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["budget"] }).notNull(),
    message: text("message").notNull(),
    createdAt: createdAt(),
    sentAt: text("sent_at"),
  },
  (t) => [index("notifications_unsent").on(t.sentAt)],
);

/**
 * Idempotency keys (the IETF httpapi draft): the first answer to a write with a key, replayed for the
 * same key and request within 24 hours.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    clientId: integer("client_id").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of method, path, query and body: the same key with another request is refused. */
    fingerprint: text("fingerprint").notNull(),
    /** Set while the first request runs; a request that died leaves a lock that lapses at this instant. */
    lockedUntil: text("locked_until"),
    status: integer("status"),
    headers: text("headers", { mode: "json" }).$type<Record<string, string>>(),
    body: text("body"),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.key] }), index("idempotency_keys_expiry").on(t.expiresAt)],
);

/**
 * The event log (a transactional outbox): every state change a client may care about is written here in
 * the same D1 batch as the change itself. `id` increases, so a reader resumes after the last id it saw;
 * `client_id` is the client of the user the event is about (tenancy of the feed).
 */
export const events = sqliteTable(
  "events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    clientId: integer("client_id"),
    /** null for events about the client itself (webhook.disabled). */
    userId: integer("user_id"),
    type: text("type").notNull(),
    adId: integer("ad_id"),
    portal: text("portal"),
    data: text("data").notNull().default("{}"),
    occurredAt: text("occurred_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
  },
  (t) => [
    index("events_client").on(t.clientId, t.id),
    index("events_user").on(t.userId, t.id),
    index("events_age").on(t.occurredAt),
  ],
);

/** A client's webhook endpoint; its signing secrets are sealed like portal tokens. */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    clientId: integer("client_id").notNull(),
    url: text("url").notNull(),
    /** Subscribed event types; null means every type. */
    types: text("types", { mode: "json" }).$type<string[] | null>(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    description: text("description").notNull().default(""),
    secret: text("secret").notNull(),
    /** After a rotation the previous secret signs too, until this instant. */
    previousSecret: text("previous_secret"),
    previousSecretUntil: text("previous_secret_until"),
    /** The last event handed to delivery (the dispatcher's cursor; a replay moves it back). */
    lastEventId: integer("last_event_id").notNull().default(0),
    /** Since when every delivery failed; null after a success. */
    failingSince: text("failing_since"),
    disabledReason: text("disabled_reason"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("webhook_endpoints_client").on(t.clientId)],
);

/** One delivery attempt of an event (or a test message) to an endpoint. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    endpointId: integer("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    /** null for a test message. */
    eventId: integer("event_id"),
    messageId: text("message_id").notNull(),
    attempt: integer("attempt").notNull(),
    statusCode: integer("status_code"),
    latencyMs: integer("latency_ms"),
    error: text("error"),
    succeeded: integer("succeeded", { mode: "boolean" }).notNull().default(false),
    nextAttemptAt: text("next_attempt_at"),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_deliveries_endpoint").on(t.endpointId, t.id), index("webhook_deliveries_age").on(t.createdAt)],
);
