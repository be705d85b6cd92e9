/** Bids and statistics pulled from the marketplaces. */
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { MARKETPLACES } from "../../lib/vocabulary";
import { ads } from "./ads";
import { AD_PARENT, BY_AD, byId, group, owners } from "./ownership";

/** Bids on listings, pulled from the marketplaces. */
export const bids = sqliteTable(
  "bids",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    adId: integer("ad_id")
      .notNull()
      .references(() => ads.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
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
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    date: text("date").notNull(),
    views: integer("views").notNull().default(0),
    asqs: integer("asqs").notNull().default(0),
    bids: integer("bids").notNull().default(0),
    url: integer("url").notNull().default(0),
    phone: integer("phone").notNull().default(0),
    favorites: integer("favorites").notNull().default(0),
  },
  // By date too: the days past their window leave D1 in date order (services/market/statistics retention).
  (t) => [primaryKey({ columns: [t.adId, t.portal, t.date] }), index("ad_statistics_date_idx").on(t.date)],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const marketOwners = owners([
  [bids, group(byId("bids"), { parents: AD_PARENT })],
  [adStatistics, group(BY_AD, { parents: AD_PARENT })],
]);
