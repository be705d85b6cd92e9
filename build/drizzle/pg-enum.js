// drizzle-orm/pg-core/columns/enum.js in the Worker bundle (wrangler.toml's `alias`): drizzle's SQL
// builder asks every chunk whether it is a Postgres enum, which pulls Postgres column classes into a
// SQLite-only Worker. This schema defines no Postgres enum, so the answer is always no.
export const isPgEnum = () => false;
