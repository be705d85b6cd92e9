/** Ads, their attributes and settings, manufacturers. */
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { AD_STATUSES, AD_TYPES, MARKETPLACES } from "../../lib/vocabulary";
import { contacts, folders, users } from "./accounts";
import { categories, groups } from "./catalogue";
import { AD_PARENT, BY_AD, byId, derived, group, owners, USER_PARENT } from "./ownership";
import { createdAt, updatedAt } from "./shared";

export const PRICE_MODELS = ["fixed", "bidding", "see description", "reserved"] as const;

export type PriceModel = (typeof PRICE_MODELS)[number];
export const REMOVED_PRICE_MODELS = ["to be discussed", "by request", "trade", "buy it now"] as const;

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
    status: text("status", { enum: AD_STATUSES }).notNull().default("active"),
    externalAdId: integer("external_ad_id"),
    type: text("type", { enum: AD_TYPES }).notNull().default("supply"),
    title: text("title").notNull(),
    imagetext: text("imagetext"),
    description: text("description").notNull().default(""),
    categoryId: integer("category_id").references(() => categories.id),
    url: text("url"),
    // Written only from PriceInput, which takes these models alone.
    priceModel: text("price_model").$type<PriceModel>().notNull().default("see description"),
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
    /**
     * What the latest stock sync wrote to the ad: its item's content hash, and the ad's `updatedAt` it
     * left. A sync finds an item unchanged when both still hold (no other call wrote the ad since).
     */
    syncHash: text("sync_hash"),
    syncedAt: text("synced_at"),
  },
  (t) => [
    index("ads_user_idx").on(t.userId, t.status),
    // A stock sync finds a user's ads by the client's own ids.
    index("ads_user_external_idx").on(t.userId, t.externalAdId),
    // One user's ads in id (creation) order: a page seeks to its cursor and reads what it shows.
    index("ads_user_order_idx").on(t.userId, t.id),
    index("ads_contact_idx").on(t.contactId),
    index("ads_folder_idx").on(t.folderId),
    index("ads_category_idx").on(t.categoryId),
    // The status filter across every user seeks (status, id).
    index("ads_status_idx").on(t.status),
  ],
);

/**
 * How many ads each user has per (status, type, folder, category): the list's common filters. `0` stands
 * for no folder and no category (a primary key column cannot be NULL in a table without rowid). Triggers
 * keep it in step with `ads` in the write's own statement (migration 0024): a change moves one row down
 * and one up. A list answers its exact `totalItems` as the sum of the few rows its filters select (see
 * `tallyCount` in services/adViews/searchCounts.ts) instead of counting the ads.
 */
export const adTallies = sqliteTable(
  "ad_tallies",
  {
    userId: integer("user_id").notNull(),
    status: text("status", { enum: AD_STATUSES }).notNull(),
    type: text("type", { enum: AD_TYPES }).notNull(),
    folderId: integer("folder_id").notNull(),
    categoryId: integer("category_id").notNull(),
    n: integer("n").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.status, t.type, t.folderId, t.categoryId] })],
);

/**
 * The same tallies rolled up per client over its users that are not deleted (client 0: users without
 * one), without the folder (a folder belongs to one user): a list across users sums a client's rows.
 * Kept by the same triggers and by one on `users`.
 */
export const clientAdTallies = sqliteTable(
  "client_ad_tallies",
  {
    clientId: integer("client_id").notNull(),
    status: text("status", { enum: AD_STATUSES }).notNull(),
    type: text("type", { enum: AD_TYPES }).notNull(),
    categoryId: integer("category_id").notNull(),
    n: integer("n").notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.status, t.type, t.categoryId] })],
);

/** The tallies' stand-in for no folder and no category. */
export const NO_TALLY_KEY = 0;

/** Attribute values of an ad per portal; a multi-value key has one row per value. */
export const adAttributes = sqliteTable(
  "ad_attributes",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    /** Ads are written in Dutch only (AdAttributesInput takes nl_NL alone). */
    locale: text("locale").$type<"nl_NL">().notNull().default("nl_NL"),
    key: text("key").notNull(),
    value: text("value").notNull(),
    /** The value as a number when it is one, for range search. */
    valueNumber: real("value_number"),
    seq: integer("seq").notNull(),
    /** The ad's category and user, both fixed when the ad is created: an attribute search stays in this table. */
    categoryId: integer("category_id"),
    userId: integer("user_id"),
  },
  (t) => [
    primaryKey({ columns: [t.adId, t.portal, t.seq] }),
    // An attribute search names the category; the user and the ad id close both search indexes, so the search
    // lists its ads, and who owns them, from the index alone.
    index("ad_attributes_search").on(t.portal, t.key, t.categoryId, t.value, t.userId, t.adId),
    index("ad_attributes_range").on(t.portal, t.key, t.categoryId, t.valueNumber, t.userId, t.adId),
  ],
);

export const adSettings = sqliteTable(
  "ad_settings",
  {
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    showcontact: integer("showcontact", { mode: "boolean" }).notNull().default(true),
    autoreplace: integer("autoreplace", { mode: "boolean" }).notNull().default(false),
    video: text("video"),
  },
  (t) => [primaryKey({ columns: [t.adId, t.portal] })],
);

/**
 * A full ad's detail rows beside it: its attribute and setting rows as JSON arrays of their column values
 * (in the column order above, ordered as the view shows them). The ad commands that change those rows
 * rewrite it once, in their own batch (`detailsCopy`), so the full view reads one row for them instead of
 * every row.
 */
export const adDetails = sqliteTable("ad_details", {
  adId: integer("ad_id")
    .primaryKey()
    .references(() => ads.id, { onDelete: "cascade" }),
  attributeRows: text("attribute_rows").notNull().default("[]"),
  settingRows: text("setting_rows").notNull().default("[]"),
});

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const adsOwners = owners([
  [manufacturers, group(byId("manufacturers"), { parents: USER_PARENT })],
  [
    ads,
    group(byId("ads"), {
      parents: { user_id: "users", folder_id: "folders", contact_id: "contacts", manufacturer_id: "manufacturers" },
    }),
  ],
  [adAttributes, group(BY_AD, { parents: AD_PARENT })],
  [adSettings, group(BY_AD, { parents: AD_PARENT })],
  [adTallies, derived("ads")],
  [clientAdTallies, derived("ads")],
  [adDetails, derived("ads", "ad_attributes", "ad_settings")],
  // The search index (migrations 0004, 0015, 0019), kept by triggers on the ads.
  ["ads_fts", derived("ads", "ad_attributes")],
]);
