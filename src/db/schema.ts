import { sql } from "drizzle-orm";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
