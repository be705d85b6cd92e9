import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { userSettings } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import type { AdType } from "../../lib/vocabulary";
import { type Caller, isInternal, requireInternal, requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { groupsOfUsers, otherGroup } from "../shared/groups";
import { bumpRevisions, userWriteRevisions } from "../shared/revisions";
import type { SettingsInput, SettingsPatch } from "./schemas/settings";
import { visibleUserIds } from "./users";

type SettingsRow = typeof userSettings.$inferSelect;

export interface SettingsView {
  userId: number;
  mainUserId: number | null;
  walletUserId: number | null;
  maxContacts: number;
  status: "active" | "locked";
  type: AdType;
  allowbids: boolean;
  showcontact: boolean;
  itemsPerPage: number;
  maxImages: number;
  groupId: number | null;
  categoryId: number | null;
  attributes: (typeof userSettings.$inferSelect)["attributes"];
  budgetNotifyLimit: number;
}

export const toSettingsView = ({ updatedAt: _updated, ...row }: SettingsRow): SettingsView => row;

const INTERNAL_ONLY = ["mainUserId", "walletUserId", "maxContacts", "maxImages"] as const;

export async function loadSettings(db: Db, userId: number): Promise<SettingsRow> {
  const row = await db.select().from(userSettings).where(eq(userSettings.userId, userId)).get();
  if (row) return row;
  // Every user gets a settings row at creation; this only covers rows lost to manual edits.
  return db.insert(userSettings).values({ userId }).returning().get();
}

export async function getSettings(ctx: ServiceContext, userId: number): Promise<SettingsView> {
  const { db, caller } = ctx;
  await requireUser(db, caller, userId);
  return toSettingsView(await loadSettings(db, userId));
}

/**
 * mainUserId and walletUserId, where they change, must name users the client may see, in the user's
 * client group (a payer and its seller are written in one transaction).
 */
async function checkReferences(
  db: Db,
  caller: Caller,
  input: Partial<SettingsInput> & { userId: number },
  current: SettingsRow,
): Promise<void> {
  const refs = (["mainUserId", "walletUserId"] as const).filter(
    (f) => input[f] !== undefined && input[f] !== null && input[f] !== current[f],
  );
  if (refs.length === 0) return;
  const ids = refs.map((f) => input[f] as number);
  const [visible, groups] = await Promise.all([
    visibleUserIds(db, caller, ids),
    groupsOfUsers(db, [input.userId, ...ids]),
  ]);
  const problems = refs.filter((f) => !visible.has(input[f] as number)).map((f) => `${f}: user ${input[f]} not found`);
  if (problems.length > 0) throw DomainError.of("reference_not_found", ...problems);
  const apart = refs.find((f) => groups.get(input[f] as number) !== groups.get(input.userId));
  if (apart) throw otherGroup(apart, `user ${input[apart]}`);
}

/**
 * POST: create or replace; fields not given return to their defaults, except what the caller may not
 * set: a partner's write keeps every internal-only field as it is (and may send it back unchanged). The
 * write names only the columns the call sets: what it keeps it does not write back, so a change made
 * meanwhile (an internal client's payer, the activation's status) is never undone.
 */
export async function replaceSettings(ctx: ServiceContext, input: SettingsInput): Promise<SettingsView> {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const current = await loadSettings(db, input.userId);
  for (const field of INTERNAL_ONLY)
    if (input[field] !== undefined && input[field] !== current[field]) requireInternal(caller, field);
  await checkReferences(db, caller, input, current);
  const defaults: Omit<typeof userSettings.$inferInsert, "userId"> = {
    mainUserId: null,
    walletUserId: null,
    type: "supply",
    allowbids: true,
    showcontact: true,
    itemsPerPage: 25,
    groupId: null,
    categoryId: null,
    attributes: [],
    budgetNotifyLimit: 0,
  };
  // What a caller cannot set is kept by not writing it: the limits and the status unless given, the payer
  // and main user for partners (whose copy, checked unchanged above, is left out too).
  const internalOnly = new Set<string>(INTERNAL_ONLY);
  const values = Object.fromEntries(
    Object.entries({ ...defaults, ...input, updatedAt: new Date().toISOString() }).filter(
      ([field]) => isInternal(caller) || !internalOnly.has(field),
    ),
  );
  await db.batch([
    db.update(userSettings).set(values).where(eq(userSettings.userId, input.userId)),
    bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
  ]);
  return getSettings(ctx, input.userId);
}

export async function patchSettings(ctx: ServiceContext, patch: SettingsPatch): Promise<SettingsView> {
  const { db, caller } = ctx;
  await requireUser(db, caller, patch.userId);
  const { userId, ...changes } = patch;
  if (Object.keys(changes).length === 0)
    throw DomainError.of("validation_failed", "body: nothing to patch (showcontact, attributes, budgetNotifyLimit)");
  await loadSettings(db, userId);
  await db.batch([
    db
      .update(userSettings)
      .set({ ...changes, updatedAt: new Date().toISOString() })
      .where(eq(userSettings.userId, userId)),
    bumpRevisions(db, userWriteRevisions(userId), ctx.precondition),
  ]);
  return getSettings(ctx, userId);
}

/** Account status transitions made by activation. */
export async function setAccountStatus(db: Db, userId: number, status: "active" | "locked"): Promise<void> {
  await loadSettings(db, userId);
  await db.batch([
    db.update(userSettings).set({ status, updatedAt: new Date().toISOString() }).where(eq(userSettings.userId, userId)),
    bumpRevisions(db, userWriteRevisions(userId)),
  ]);
}
