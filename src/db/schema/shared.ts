/** Column helpers shared by the tables. */
import { sql } from "drizzle-orm";
import { text } from "drizzle-orm/sqlite-core";

/** Instants are stored as UTC ISO-8601 text; rendering to Amsterdam time happens at the edge of the API. */
export const createdAt = () => text("created_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`);

export const updatedAt = () => text("updated_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`);
