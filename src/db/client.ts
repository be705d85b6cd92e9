import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Db = ReturnType<typeof createDb>;

const createDb = (d1: D1Database) => drizzle(d1, { schema });
const cache = new WeakMap<D1Database, Db>();

/** One Drizzle instance per D1 binding object (the binding lives as long as the isolate). */
export function getDb(d1: D1Database): Db {
  let db = cache.get(d1);
  if (!db) {
    db = createDb(d1);
    cache.set(d1, db);
  }
  return db;
}
