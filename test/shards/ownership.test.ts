import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MOVED_TABLES } from "../../src/db/moves/tables";
import { groupTables, TABLE_OWNERS } from "../../src/db/ownership";
import { group } from "../../src/db/schema/ownership";

/**
 * Every table a migration builds has an owner declared beside its schema (src/db/schema/ownership.ts), and
 * a group's move carries exactly the group-owned ones: a new table nobody declared fails here, before a
 * move can leave its rows behind.
 */

/** SQLite's and D1's own tables, and an FTS index's shadow tables (`ads_fts_data`, …, of `ads_fts`). */
const isMachinery = (name: string) =>
  /^(sqlite_|_cf_|d1_migrations$)/.test(name) ||
  Object.keys(TABLE_OWNERS).some((owned) => owned.endsWith("_fts") && name.startsWith(`${owned}_`));

async function tablesOf(d1: D1Database) {
  const { results } = await d1
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .all<{ name: string }>();
  return results.map((row) => row.name).filter((name) => !isMachinery(name));
}

const columnsOf = async (d1: D1Database, table: string) =>
  (await d1.prepare(`PRAGMA table_info("${table}")`).all<{ name: string }>()).results.map((column) => column.name);

/** Columns that hold a client's data (an id of one of its rows): never in a table that is nobody's. */
const CLIENT_DATA = /^(client_id|user_id|ad_id|[a-z]+_user_id)$/;

describe("who owns each table", () => {
  it("declares an owner for every table of a shard and of the directory, and nothing else", async () => {
    const shardTables = await tablesOf(env.DB);
    const unowned = shardTables.filter((name) => !(name in TABLE_OWNERS));
    expect(unowned, "tables of a shard with no owner declared beside their schema").toEqual([]);
    const gone = Object.keys(TABLE_OWNERS).filter((name) => !shardTables.includes(name));
    expect(gone, "declarations of tables no migration builds").toEqual([]);
    expect(await tablesOf(env.DB_2)).toEqual(shardTables);
    for (const name of await tablesOf(env.DIRECTORY))
      expect(TABLE_OWNERS[name]?.owner, `the directory's ${name}`).toBe("directory");
    console.info(`table owners: ${shardTables.map((name) => `${name}=${TABLE_OWNERS[name]?.owner}`).join(", ")}`);
  });

  it("names each group table's owner and parent columns, and no client's data in a table that is nobody's", async () => {
    for (const [name, ownership] of Object.entries(TABLE_OWNERS)) {
      const columns = await columnsOf(env.DB, name);
      if (ownership.owner === "group") {
        const { by, parents } = ownership;
        const ownerColumn = by === "revision" ? "scope" : "client" in by ? by.client : by.column;
        expect(columns, `${name}'s owner column`).toContain(ownerColumn);
        for (const [column, parent] of Object.entries(parents ?? {})) {
          expect(columns, `${name}'s parent column`).toContain(column);
          expect(TABLE_OWNERS[parent]?.owner, `${name}.${column}'s parent`).toBe("group");
        }
      }
      if (ownership.owner === "catalogue" || ownership.owner === "shard")
        expect(
          columns.filter((column) => CLIENT_DATA.test(column)),
          `${name} (${ownership.owner}) holds a client's ids`,
        ).toEqual([]);
      if (ownership.owner === "derived" || ownership.owner === "transient")
        for (const source of ownership.owner === "derived" ? ownership.from : [ownership.of])
          expect(TABLE_OWNERS[source]?.owner, `${name} comes from ${source}`).toBe("group");
    }
  });

  it("moves the group tables parents first, and refuses a parent no group owns", () => {
    const order = MOVED_TABLES.map((table) => table.name);
    expect(order).toEqual(
      Object.entries(TABLE_OWNERS)
        .filter(([, ownership]) => ownership.owner === "group")
        .map(([name]) => name)
        .filter((name) => order.includes(name)),
    );
    MOVED_TABLES.forEach((table, at) => {
      for (const parent of Object.values(table.owner.parents ?? {}))
        if (parent !== table.name) expect(order.indexOf(parent), `${table.name} after ${parent}`).toBeLessThan(at);
    });
    expect(() =>
      groupTables({ orphans: group({ column: "id", kind: "orphans" }, { parents: { x_id: "xs" } }) }),
    ).toThrow("orphans names xs as a parent, which no group owns");
    expect(
      groupTables({
        b: group({ column: "id", kind: "b" }, { parents: { a_id: "a" } }),
        a: group({ column: "id", kind: "a" }),
      }).map((t) => t.name),
    ).toEqual(["a", "b"]);
  });
});
