/**
 * Who owns a table's rows, declared beside each table (each schema file's `…Owners`), the way Citus
 * declares every table distributed, reference or local: a group's move (src/db/moves/) carries exactly
 * the tables owned by a group, derived from these declarations, and test/shards/ownership.test.ts fails on
 * a table of a shard's schema that none declares.
 */
import { getTableName } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

/** How a group's row names its group. */
export type RowOwner =
  /** The column holds an id of a block of `kind` (src/db/ids.ts). */
  | { column: string; kind: string }
  /** The column holds a client's id. */
  | { client: string }
  /** The revision keys of the response cache: `user:<id>`, `client:<id>`, `webhook:<id>`. */
  | "revision";

export type Ownership =
  /** A client group's rows: on its shard only, and a move carries them. */
  | {
      owner: "group";
      by: RowOwner;
      /** Columns naming a row of another group-owned table (always by its `id`), which must be there first. */
      parents?: Record<string, string>;
      /** A log with the shard's own ids (a feed's cursor): a move numbers its rows anew on the new shard. */
      renumbered?: true;
    }
  /** The directory's rows (its authority); a shard keeps a copy of its own groups' (src/db/directory.ts). */
  | { owner: "directory" }
  /** The catalogue: the same rows on every shard, nobody's own. */
  | { owner: "catalogue" }
  /** Rebuilt by triggers from the tables it names: a move copies those, and the new shard builds these. */
  | { owner: "derived"; from: string[] }
  /** Rows of a few seconds that end with their parent's (a lease): not moved, gone with the parent. */
  | { owner: "transient"; of: string }
  /** The shard's own machinery (a move's change log): no client's data. */
  | { owner: "shard" };

export const group = (by: RowOwner, options: { parents?: Record<string, string>; renumbered?: true } = {}) =>
  ({ owner: "group", by, ...options }) as const satisfies Ownership;
export const DIRECTORY = { owner: "directory" } as const satisfies Ownership;
export const CATALOGUE = { owner: "catalogue" } as const satisfies Ownership;
export const SHARD = { owner: "shard" } as const satisfies Ownership;
export const derived = (...from: string[]) => ({ owner: "derived", from }) as const satisfies Ownership;
export const transient = (of: string) => ({ owner: "transient", of }) as const satisfies Ownership;

/** A row owned by the group of the block its column's id is in. */
export const byId = (kind: string, column = "id") => ({ column, kind });
export const BY_USER = byId("users", "user_id");
export const BY_AD = byId("ads", "ad_id");
/** Parents of a row of a user's, or of an ad's. */
export const USER_PARENT = { user_id: "users" };
export const AD_PARENT = { ad_id: "ads" };

/** A schema file's declarations, by table name (a table that is no Drizzle table, such as an FTS index, by its name). */
export const owners = (entries: [SQLiteTable | string, Ownership][]): Record<string, Ownership> =>
  Object.fromEntries(
    entries.map(([table, ownership]) => [typeof table === "string" ? table : getTableName(table), ownership]),
  );
