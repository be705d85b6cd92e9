/**
 * Every table of a shard's schema with its owner (src/db/schema/ownership.ts), from the declarations beside
 * the tables; test/shards/ownership.test.ts holds it to the schema the migrations build.
 */
import {
  accountsOwners,
  adsOwners,
  catalogueOwners,
  directoryOwners,
  eventsOwners,
  feedsOwners,
  imagesOwners,
  marketOwners,
  operationsOwners,
  publishingOwners,
  schedulingOwners,
  syncsOwners,
  walletOwners,
} from "./schema";
import type { Ownership } from "./schema/ownership";

/** By table name; in the order a move copies what a group owns (parents before children). */
export const TABLE_OWNERS: Readonly<Record<string, Ownership>> = {
  ...directoryOwners,
  ...catalogueOwners,
  ...accountsOwners,
  ...adsOwners,
  ...imagesOwners,
  ...marketOwners,
  ...publishingOwners,
  ...walletOwners,
  ...schedulingOwners,
  ...syncsOwners,
  ...feedsOwners,
  ...eventsOwners,
  ...operationsOwners,
};

/** A table a group's move carries. */
export interface GroupTable {
  name: string;
  owner: Extract<Ownership, { owner: "group" }>;
}

/**
 * The group-owned tables, each after every table its rows name as parents (the declarations' order
 * otherwise): the order a move copies them in, and the reverse of the order it deletes them in.
 */
export function groupTables(owners: Readonly<Record<string, Ownership>> = TABLE_OWNERS): GroupTable[] {
  const declared = Object.entries(owners).flatMap(([name, owner]) =>
    owner.owner === "group" ? [{ name, owner }] : [],
  );
  const placed: GroupTable[] = [];
  const visit = (table: GroupTable, path: string[]) => {
    if (placed.includes(table)) return;
    if (path.includes(table.name)) throw new Error(`the group tables' parents form a cycle: ${path.join(" → ")}`);
    for (const parent of Object.values(table.owner.parents ?? {})) {
      const of = declared.find((candidate) => candidate.name === parent);
      if (!of) throw new Error(`${table.name} names ${parent} as a parent, which no group owns`);
      if (of !== table) visit(of, [...path, table.name]);
    }
    placed.push(table);
  };
  for (const table of declared) visit(table, []);
  return placed;
}
