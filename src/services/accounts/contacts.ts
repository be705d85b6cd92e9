import { and, asc, count, eq, isNotNull } from "drizzle-orm";
import type { Db } from "../../db/client";
import { groupOfUser, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import { ads, contacts, userSettings } from "../../db/schema";
import { refusedByTrigger } from "../../db/triggers";
import type { County } from "../../lib/dutch";
import { INVALID_POSTAL_CODE, normalizeDutchPostalCode } from "../../lib/dutch";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions, userWriteRevisions } from "../shared/revisions";
import type { ContactInput, ContactPatch } from "./schemas/contacts";

export type ContactRow = typeof contacts.$inferSelect;

export interface ContactView {
  userId: number;
  contactId: number;
  active: boolean;
  name: string;
  address: string;
  houseNumber: string;
  postalCode: string | null;
  city: string;
  county: County;
  country: string;
  phone: string;
  website: string | null;
  chathandle: string | null;
}

export interface ContactsSummary {
  numberOfContacts: number;
  numberOfActiveContacts: number;
  contacts: ContactView[];
}

/** The contact's own fields, as shown on its own and inside an ad. */
export const contactFields = (row: ContactRow) => ({
  contactId: row.id,
  name: row.name,
  address: row.address,
  houseNumber: row.houseNumber,
  postalCode: row.postalCode,
  city: row.city,
  county: row.county,
  // Contacts are Dutch addresses; an empty county marks one abroad.
  country: row.county ? "NL" : "",
  phone: row.phone,
  website: row.website,
  chathandle: row.chathandle,
});

export const toContactView = (row: ContactRow, activeIds: Set<number>): ContactView => ({
  userId: row.userId,
  active: activeIds.has(row.id),
  ...contactFields(row),
});

/** Ids of the given users' contacts that an active ad uses. */
async function activeContactIds(db: Db, userIds: number[]): Promise<Set<number>> {
  if (userIds.length === 0) return new Set();
  const rows = await db
    .selectDistinct({ contactId: ads.contactId })
    .from(ads)
    .where(and(inList(ads.userId, userIds), eq(ads.status, "active"), isNotNull(ads.contactId)));
  return new Set(rows.map((r) => r.contactId as number));
}

/** Contacts summaries of several users in two queries, whatever the number of users. */
export async function contactsSummaries(db: Db, userIds: number[]): Promise<Map<number, ContactsSummary>> {
  const summaries = new Map<number, ContactsSummary>(
    userIds.map((id) => [id, { numberOfContacts: 0, numberOfActiveContacts: 0, contacts: [] }]),
  );
  if (userIds.length === 0) return summaries;
  const [rows, active] = await Promise.all([
    db.select().from(contacts).where(inList(contacts.userId, userIds)).orderBy(asc(contacts.id)),
    activeContactIds(db, userIds),
  ]);
  for (const row of rows) {
    const summary = summaries.get(row.userId);
    if (!summary) continue;
    const view = toContactView(row, active);
    summary.contacts.push(view);
    summary.numberOfContacts += 1;
    if (view.active) summary.numberOfActiveContacts += 1;
  }
  return summaries;
}

async function allContacts(db: Db, userId: number): Promise<ContactView[]> {
  return (await contactsSummaries(db, [userId])).get(userId)?.contacts ?? [];
}

export async function listContacts(
  ctx: ServiceContext,
  query: { userId: number; contactId?: number; page: number; itemsPerPage: number },
): Promise<Page<ContactView>> {
  const { db, caller } = ctx;
  await requireUser(db, caller, query.userId);
  const where = query.contactId
    ? and(eq(contacts.userId, query.userId), eq(contacts.id, query.contactId))
    : eq(contacts.userId, query.userId);
  const [[total], rows, active] = await Promise.all([
    db.select({ n: count() }).from(contacts).where(where),
    db
      .select()
      .from(contacts)
      .where(where)
      .orderBy(asc(contacts.id))
      .limit(query.itemsPerPage)
      .offset((query.page - 1) * query.itemsPerPage),
    activeContactIds(db, [query.userId]),
  ]);
  if (query.contactId && rows.length === 0)
    throw DomainError.of("contact_not_found", `contactId: contact ${query.contactId} not found`);
  return {
    items: rows.map((row) => toContactView(row, active)),
    totalItems: total?.n ?? 0,
    page: query.page,
    itemsPerPage: query.itemsPerPage,
  };
}

/** Postal code rule of a contact: required and Dutch unless abroad (empty county). */
function checkedPostalCode(county: string, postalCode: string | null | undefined): string | null {
  if (!county) return postalCode || null;
  if (!postalCode)
    throw DomainError.of("validation_failed", "postalCode: is required for an address in the Netherlands");
  const normalized = normalizeDutchPostalCode(postalCode);
  if (!normalized) throw DomainError.of("validation_failed", `postalCode: ${INVALID_POSTAL_CODE}`);
  return normalized;
}

export async function createContact(ctx: ServiceContext, input: ContactInput): Promise<ContactView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const postalCode = checkedPostalCode(input.county, input.postalCode);
  const settings = await db
    .select({ maxContacts: userSettings.maxContacts })
    .from(userSettings)
    .where(eq(userSettings.userId, input.userId))
    .get();
  const maxContacts = settings?.maxContacts ?? 25;
  const { userId, ...fields } = input;
  try {
    // The trigger contacts_max_per_user refuses the insert past maxContacts, even under concurrent creates.
    await db.batch([
      db.insert(contacts).values({ ...fields, userId, postalCode, id: nextId(contacts, groupOfUser(userId)) }),
      bumpRevisions(db, userWriteRevisions(userId), ctx.precondition),
    ]);
  } catch (error) {
    if (refusedByTrigger(error, "maxContacts")) {
      throw DomainError.of(
        "max_contacts_reached",
        `contacts: the user may have at most ${maxContacts} contacts (maxContacts)`,
      );
    }
    throw error;
  }
  return allContacts(db, userId);
}

async function requireContact(db: Db, userId: number, contactId: number): Promise<ContactRow> {
  const row = await db
    .select()
    .from(contacts)
    .where(and(eq(contacts.userId, userId), eq(contacts.id, contactId)))
    .get();
  if (!row) throw DomainError.of("contact_not_found", `contactId: contact ${contactId} not found`);
  return row;
}

export async function updateContact(ctx: ServiceContext, patch: ContactPatch): Promise<ContactView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, patch.userId);
  const current = await requireContact(db, patch.userId, patch.contactId);
  const { userId, contactId, ...changes } = patch;
  const county = changes.county ?? current.county;
  const postalCode = checkedPostalCode(
    county,
    changes.postalCode === undefined ? current.postalCode : changes.postalCode,
  );
  await db.batch([
    db
      .update(contacts)
      .set({ ...changes, postalCode })
      .where(eq(contacts.id, contactId)),
    bumpRevisions(db, userWriteRevisions(userId), ctx.precondition),
  ]);
  return allContacts(db, userId);
}

export async function deleteContact(
  ctx: ServiceContext,
  input: { userId: number; contactId: number },
): Promise<ContactView[]> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  await requireContact(db, input.userId, input.contactId);
  const usedBy = await db
    .select({ adId: ads.id })
    .from(ads)
    .where(and(eq(ads.contactId, input.contactId), eq(ads.status, "active")))
    .limit(5);
  if (usedBy.length > 0) {
    throw DomainError.of(
      "contact_in_use",
      `contactId: contact ${input.contactId} is used by active ads (adId ${usedBy.map((r) => r.adId).join(", ")}); change or archive those ads first`,
    );
  }
  await db.batch([
    db.delete(contacts).where(eq(contacts.id, input.contactId)),
    bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  ]);
  return allContacts(db, input.userId);
}
