/** Column helpers shared by the tables. */
import { sql } from "drizzle-orm";
import { integer, text } from "drizzle-orm/sqlite-core";

/** Instants are stored as UTC ISO-8601 text; rendering to Amsterdam time happens at the edge of the API. */
export const createdAt = () => text("created_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`);

export const updatedAt = () => text("updated_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`);

/**
 * The client later work on a row acts as (a sync's steps, a feed's fetches): its tenancy kept with the row,
 * as the client's id and whether it is internal or a partner.
 */
export const actingClient = () => ({
  clientId: integer("client_id").notNull(),
  internal: integer("internal", { mode: "boolean" }).notNull().default(false),
  partner: integer("partner", { mode: "boolean" }).notNull().default(false),
});
