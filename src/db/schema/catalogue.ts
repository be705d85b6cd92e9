/** The catalogue: groups, categories, attribute definitions, prices. */
import { integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { CATALOGUE_PORTALS, MARKETPLACES } from "../../lib/vocabulary";
import { CATALOGUE, owners } from "./ownership";

export const groups = sqliteTable("groups", {
  id: integer("id").primaryKey(),
  descriptionNl: text("description_nl").notNull(),
  descriptionEn: text("description_en").notNull(),
  /** Automotive groups allow misc.licensePlate. */
  automotive: integer("automotive", { mode: "boolean" }).notNull().default(false),
});

export const categories = sqliteTable("categories", {
  id: integer("id").primaryKey(),
  groupId: integer("group_id")
    .notNull()
    .references(() => groups.id),
  descriptionNl: text("description_nl").notNull(),
  descriptionEn: text("description_en").notNull(),
});

export const attributeDefinitions = sqliteTable(
  "attribute_definitions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    categoryId: integer("category_id")
      .notNull()
      .references(() => categories.id),
    portal: text("portal", { enum: CATALOGUE_PORTALS }).notNull(),
    key: text("key").notNull(),
    labelNl: text("label_nl").notNull(),
    labelEn: text("label_en").notNull(),
    /** Allowed options; empty for free text. */
    values: text("values", { mode: "json" }).$type<string[]>().notNull().default([]),
    type: text("type", { enum: ["DOUBLE", "LIST", "NUMBER", "STRING", "TEXT"] }).notNull(),
    sort: integer("sort").notNull().default(0),
    minimum: integer("minimum"),
    maximum: integer("maximum"),
    unit: text("unit").notNull().default(""),
    mandatory: integer("mandatory", { mode: "boolean" }).notNull().default(false),
    writable: integer("writable", { mode: "boolean" }).notNull().default(true),
    updatable: integer("updatable", { mode: "boolean" }).notNull().default(true),
    searchable: integer("searchable", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [uniqueIndex("attribute_definitions_key").on(t.categoryId, t.portal, t.key)],
);

export const categoryPrices = sqliteTable(
  "category_prices",
  {
    categoryId: integer("category_id")
      .notNull()
      .references(() => categories.id),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    action: text("action", {
      enum: ["plaatsen", "omhoogplaatsen", "blikvanger", "dagtopper", "topadvertentie"],
    }).notNull(),
    priceInternal: integer("price_internal").notNull(),
    priceExternal: integer("price_external").notNull(),
    priceTotal: integer("price_total").notNull(),
    priceNative: integer("price_native").notNull(),
  },
  (t) => [primaryKey({ columns: [t.categoryId, t.portal, t.action] })],
);

/** Whose rows each table here holds (./ownership.ts): the catalogue is every shard's, nobody's own. */
export const catalogueOwners = owners([
  [groups, CATALOGUE],
  [categories, CATALOGUE],
  [attributeDefinitions, CATALOGUE],
  [categoryPrices, CATALOGUE],
]);
