/** API clients, the platform's users and what hangs below a user. */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { County } from "../../lib/dutch";
import { AD_TYPES, PUBLISH_TARGETS } from "../../lib/vocabulary";
import { BY_USER, byId, DIRECTORY, group, owners, USER_PARENT } from "./ownership";
import { createdAt, updatedAt } from "./shared";

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
  /** Origins a consent may return the user to (`returnUrl` of POST /oauth/…), as the client registered them. */
  returnOrigins: text("return_origins", { mode: "json" }).$type<string[]>().notNull().default([]),
  /** The client group (`client_groups`) whose blocks its rows' ids come from; the clients before groups are in 1. */
  groupId: integer("group_id").notNull().default(1),
  createdAt: createdAt(),
});

export const users = sqliteTable(
  "users",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The API client that created the user; null when created manually. */
    clientId: integer("client_id").references(() => apiClients.id),
    externalUserId: integer("external_user_id"),
    companyName: text("company_name"),
    gender: text("gender", { enum: ["M", "F"] }),
    firstName: text("first_name"),
    lastName: text("last_name"),
    dateOfBirth: text("date_of_birth"),
    address: text("address"),
    houseNumber: text("house_number"),
    postalCode: text("postal_code"),
    city: text("city"),
    county: text("county").$type<County>().notNull().default(""),
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
  (t) => [
    index("users_client_idx").on(t.clientId, t.id),
    // "Unique id in the client's backend": one live user per client and external id.
    uniqueIndex("users_client_external_id")
      .on(t.clientId, t.externalUserId)
      .where(sql`${t.externalUserId} IS NOT NULL AND ${t.deletedAt} IS NULL`),
  ],
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
    county: text("county").$type<County>().notNull().default(""),
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
  type: text("type", { enum: AD_TYPES }).notNull().default("supply"),
  allowbids: integer("allowbids", { mode: "boolean" }).notNull().default(true),
  showcontact: integer("showcontact", { mode: "boolean" }).notNull().default(true),
  itemsPerPage: integer("items_per_page").notNull().default(25),
  maxImages: integer("max_images").notNull().default(24),
  groupId: integer("group_id"),
  categoryId: integer("category_id"),
  /** JSON list of {key, value} defaults. */
  /** Defaults for new ads (UserSettingsInput validates each key's value). */
  attributes: text("attributes", { mode: "json" })
    .$type<{ key: "condition" | "delivery"; value: string }[]>()
    .notNull()
    .default([]),
  budgetNotifyLimit: integer("budget_notify_limit").notNull().default(0),
  updatedAt: updatedAt(),
});

export const userAdSettings = sqliteTable(
  "user_ad_settings",
  {
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: PUBLISH_TARGETS }).notNull(),
    header: text("header").notNull(),
    footer: text("footer").notNull(),
    allowContactByEmail: integer("allow_contact_by_email", { mode: "boolean" }).notNull().default(true),
  },
  (t) => [primaryKey({ columns: [t.userId, t.portal] })],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const accountsOwners = owners([
  [apiClients, DIRECTORY],
  [users, group(byId("users"))],
  [userSettings, group(BY_USER, { parents: { user_id: "users", wallet_user_id: "users", main_user_id: "users" } })],
  [userAdSettings, group(BY_USER, { parents: USER_PARENT })],
  [contacts, group(byId("contacts"), { parents: USER_PARENT })],
  [folders, group(byId("folders"), { parents: USER_PARENT })],
]);
