import type { adAttributes } from "../../db/schema";
import type { Marketplace } from "../../lib/vocabulary";
import { type AttributeDefinition, type Catalogue, isRequired } from "../catalogue/catalogue";

export interface AttributeSet {
  portal: Marketplace;
  locale: "nl_NL";
  values: { key: string; value: string | number }[];
}
export type AttributeRowInput = Omit<typeof adAttributes.$inferInsert, "adId" | "categoryId" | "userId">;

interface CheckContext {
  categoryId: number;
  /** create: writable keys; update: updatable keys. */
  mode: "create" | "update";
  /** A business seller without a manufacturer record: asked the product-safety keys where a marketplace wants them. */
  gpsrRequired: boolean;
}

/** What is wrong with one value of an attribute, or null (our check and the simulated marketplace's). */
export function checkAttributeValue(definition: AttributeDefinition, value: string | number): string | null {
  const text = String(value);
  if (definition.values.length > 0 && !definition.values.includes(text)) {
    return `must be one of: ${definition.values.join(", ")}`;
  }
  if (definition.type === "NUMBER" || definition.type === "DOUBLE") {
    const number = typeof value === "number" ? value : Number(text.trim());
    if (text.trim() === "" || !Number.isFinite(number)) return "must be a number";
    if (definition.type === "NUMBER" && !Number.isInteger(number)) return "must be a whole number";
    if (definition.minimum !== null && number < definition.minimum) return `must be at least ${definition.minimum}`;
    if (definition.maximum !== null && number > definition.maximum) return `must be at most ${definition.maximum}`;
    return null;
  }
  const max = definition.type === "TEXT" ? 4096 : 255;
  if (text.length === 0) return "must not be empty";
  if (text.length > max) return `must be at most ${max} characters`;
  return null;
}

/**
 * Checks an ad's attribute sets against the category's definitions per portal and returns the rows to
 * store, or the problems (each naming `attributes.<portal>.<key>`).
 */
export function checkAttributes(
  catalogue: Catalogue,
  sets: AttributeSet[],
  context: CheckContext,
): { rows: AttributeRowInput[]; problems: string[] } {
  const problems: string[] = [];
  const rows: AttributeRowInput[] = [];
  const byPortal = catalogue.definitions.get(context.categoryId);
  for (const set of sets) {
    const definitions = byPortal?.get(set.portal) ?? [];
    const field = (key: string) => `attributes.${set.portal}.${key}`;
    const seen = new Map<string, number>();
    set.values.forEach(({ key, value }, index) => {
      const definition = definitions.find((d) => d.key === key);
      if (!definition) {
        problems.push(`${field(key)}: not an attribute of category ${context.categoryId} on ${set.portal}`);
        return;
      }
      if (context.mode === "create" ? !definition.writable : !definition.updatable) {
        problems.push(`${field(key)}: cannot be ${context.mode === "create" ? "written" : "updated"}`);
        return;
      }
      const times = (seen.get(key) ?? 0) + 1;
      seen.set(key, times);
      if (times > 1 && definition.type !== "LIST") {
        problems.push(`${field(key)}: takes one value (only LIST attributes repeat their key)`);
        return;
      }
      const problem = checkAttributeValue(definition, value);
      if (problem) {
        problems.push(`${field(key)}: ${problem}`);
        return;
      }
      const numeric = definition.type === "NUMBER" || definition.type === "DOUBLE";
      rows.push({
        portal: set.portal,
        locale: set.locale,
        key,
        value: String(value).trim(),
        valueNumber: numeric ? Number(value) : null,
        seq: index,
      });
    });
    for (const definition of definitions) {
      if (isRequired(definition, set.portal, context.gpsrRequired) && !seen.has(definition.key)) {
        problems.push(
          definition.mandatory
            ? `${field(definition.key)}: is required`
            : `${field(definition.key)}: is required on ${set.portal} for business sellers (product safety), unless a manufacturer is attached`,
        );
      }
    }
  }
  return { rows, problems };
}
