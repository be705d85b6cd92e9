// drizzle-orm/sqlite-core/query-builders/query.js in the Worker bundle (see relations.js): the
// builders behind `db.query`, which exist only for a schema given to drizzle(); getDb gives none.
export class RelationalQueryBuilder {
  constructor() {
    throw new Error("drizzle: relational queries are not in this build (build/drizzle)");
  }
}
export class SQLiteRelationalQuery extends RelationalQueryBuilder {}
export class SQLiteSyncRelationalQuery extends RelationalQueryBuilder {}
