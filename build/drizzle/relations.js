// drizzle-orm/relations.js in the Worker bundle (wrangler.toml's `alias`): Drizzle's relational API
// (`db.query`, `relations()`) is not used here: getDb passes no schema, so nothing builds relations.
// The names its SQLite dialect and D1 driver import are kept, and fail loudly if anything calls them.
const unavailable = () => {
  throw new Error("drizzle: relational queries are not in this build (build/drizzle)");
};
export class Relation {}
export class One extends Relation {}
export class Many extends Relation {}
export class Relations {}
export const createMany = unavailable;
export const createOne = unavailable;
export const createTableRelationsHelpers = unavailable;
export const extractTablesRelationalConfig = unavailable;
export const getOperators = unavailable;
export const getOrderByOperators = unavailable;
export const mapRelationalRow = unavailable;
export const normalizeRelation = unavailable;
export const relations = unavailable;
