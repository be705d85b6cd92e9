// What an ad's write checks, and a new ad's content with the user's defaults (createAd.ts, updateAd.ts).
import { and, eq } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { contacts, folders, userSettings } from "../../db/schema";
import { detail, type ErrorDetail } from "../../lib/errors";
import { AD_DESCRIPTION_TAGS, sanitizeHtml } from "../../lib/html";
import { MARKETPLACES } from "../../lib/vocabulary";
import type { Catalogue } from "../catalogue/catalogue";
import { type AttributeSet, checkAttributes } from "./attributes";
import type { CreateAdInput } from "./schemas";

/** contactId and folderId must belong to the ad's user. */
export async function checkOwnership(
  db: Db,
  userId: number,
  input: { contactId?: number | null; folderId?: number | null },
) {
  const problems: ErrorDetail[] = [];
  const { contactRows, folderRows } = await namedBatch(db, {
    contactRows: db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.userId, userId), eq(contacts.id, input.contactId ?? 0))),
    folderRows: db
      .select({ id: folders.id })
      .from(folders)
      .where(and(eq(folders.userId, userId), eq(folders.id, input.folderId ?? 0))),
  });
  if (input.contactId && contactRows.length === 0)
    problems.push(detail("reference_not_found", `contactId: contact ${input.contactId} not found for user ${userId}`));
  if (input.folderId && folderRows.length === 0)
    problems.push(detail("reference_not_found", `folderId: folder ${input.folderId} not found for user ${userId}`));
  return problems;
}

export function checkCategory(
  catalogue: Catalogue,
  categoryId: number,
  licensePlate: string | null | undefined,
): ErrorDetail[] {
  const category = catalogue.categories.get(categoryId);
  if (!category) return [detail("reference_not_found", `categoryId: category ${categoryId} not found`)];
  if (licensePlate && !catalogue.groups.get(category.groupId)?.automotive) {
    return [detail("validation_failed", "misc.licensePlate: only allowed in automotive categories")];
  }
  return [];
}

const DESCRIPTION_MIN = 5;

/** The spec's 5-character minimum holds for what is stored: the text left after sanitising. */
export function descriptionProblems(sanitized: string): ErrorDetail[] {
  const text = sanitized.replace(/<[^>]*>/g, "").trim();
  return text.length < DESCRIPTION_MIN
    ? [detail("validation_failed", `description: must be ${DESCRIPTION_MIN}-65536 characters after sanitising`)]
    : [];
}

/**
 * The user's attribute defaults (condition, delivery) for a new ad, on each portal whose definitions for
 * the category have the key, where the ad does not give it. A set the ad leaves out is added only when it
 * is complete with the defaults alone (it would otherwise refuse an ad that asked nothing of that portal).
 */
function withAttributeDefaults(
  catalogue: Catalogue,
  sets: AttributeSet[],
  defaults: { key: string; value: string }[],
  context: Parameters<typeof checkAttributes>[2],
): AttributeSet[] {
  if (defaults.length === 0) return sets;
  const definitions = catalogue.definitions.get(context.categoryId);
  const result = [...sets];
  for (const portal of MARKETPLACES) {
    const keys = new Set((definitions?.get(portal) ?? []).filter((d) => d.writable).map((d) => d.key));
    const given = sets.find((set) => set.portal === portal);
    const missing = defaults.filter(({ key }) => keys.has(key) && !given?.values.some((value) => value.key === key));
    if (missing.length === 0) continue;
    if (given) {
      result[result.indexOf(given)] = { ...given, values: [...given.values, ...missing] };
      continue;
    }
    const added: AttributeSet = { portal, locale: "nl_NL", values: missing };
    if (checkAttributes(catalogue, [added], context).problems.length === 0) result.push(added);
  }
  return result;
}

/** The user's `showcontact` is the default of a new ad's setting on each portal the ad does not set. */
function withShowcontactDefault(settings: NonNullable<CreateAdInput["settings"]>, showcontact: boolean) {
  if (showcontact) return settings;
  const unset = MARKETPLACES.filter((portal) => !settings.some((s) => s.portal === portal));
  return [...settings, ...unset.map((portal) => ({ portal, showcontact }))];
}

/** A user's defaults for a new ad (its settings' type, showcontact and attribute defaults). */
export type NewAdDefaults = Pick<typeof userSettings.$inferSelect, "type" | "showcontact" | "attributes"> | undefined;

/** The user's defaults for a new ad, read once for any number of ads. */
export const newAdDefaultsQuery = (db: Db, userId: number) =>
  db
    .select({ type: userSettings.type, showcontact: userSettings.showcontact, attributes: userSettings.attributes })
    .from(userSettings)
    .where(eq(userSettings.userId, userId));

/**
 * The checks of a new ad that need only the catalogue, its user and the user's defaults (a stock sync's
 * dry run makes them for every item without writing): its category, its attributes with the user's
 * defaults, its description after sanitising. Answers the problems, and what the ad would store.
 */
export async function newAdContent(
  catalogue: Catalogue,
  owner: { user: { companyName: string | null }; defaults: NewAdDefaults },
  input: CreateAdInput,
) {
  const { user, defaults } = owner;
  const problems = checkCategory(catalogue, input.categoryId, input.misc?.licensePlate);
  const checkContext = {
    categoryId: input.categoryId,
    mode: "create",
    gpsrRequired: Boolean(user.companyName),
  } as const;
  const attributes = checkAttributes(
    catalogue,
    withAttributeDefaults(catalogue, input.attributes, defaults?.attributes ?? [], checkContext),
    checkContext,
  );
  const settings = withShowcontactDefault(input.settings ?? [], defaults?.showcontact ?? true);
  problems.push(...attributes.problems.map((problem) => detail("validation_failed", problem)));
  const description = await sanitizeHtml(input.description, AD_DESCRIPTION_TAGS);
  problems.push(...descriptionProblems(description));
  return { problems, attributeRows: attributes.rows, settings, description };
}
