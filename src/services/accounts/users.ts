import { and, asc, count, eq, inArray } from "drizzle-orm";
import { type Db, namedBatch } from "../../db/client";
import { groupOfClient, nextId } from "../../db/ids";
import { inList } from "../../db/inList";
import {
  adImages,
  ads,
  contacts,
  folders,
  notifications,
  portalConnections,
  tasks,
  userAdSettings,
  userSettings,
  users,
  walletEntries,
} from "../../db/schema";
import { refusedByTrigger, violatesUnique } from "../../db/triggers";
import { userTokens } from "../../durable/UserTokens";
import { INVALID_POSTAL_CODE, normalizeDutchPostalCode } from "../../lib/dutch";
import type { Page } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { deleteObjects } from "../../lib/media";
import { formatDateTime, nowIso } from "../../lib/time";
import { closeDeletedUsersConnections, revokeAllConnections } from "../publishing/connections";
import { withdrawUnstartedJobs } from "../publishing/publishRequests";
import {
  type Caller,
  clientIdOf,
  isInternal,
  requireInternal,
  requireUser,
  type UserRow,
  visibleUsers,
} from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { groupOfClientRow, otherGroup } from "../shared/groups";
import { bumpRevisions, requirePrecondition, userWriteRevisions } from "../shared/revisions";
import { type ContactsSummary, contactsSummaries } from "./contacts";
import type { UserInput, UserPatch } from "./schemas/users";

export interface UserView {
  userId: number;
  clientId: number | null;
  externalUserId: number | null;
  companyName: string | null;
  gender: UserRow["gender"];
  firstName: string | null;
  lastName: string | null;
  dateOfBirth: string | null;
  address: string | null;
  houseNumber: string | null;
  postalCode: string | null;
  city: string | null;
  county: UserRow["county"];
  country: string;
  email: string;
  website: string | null;
  phone: string | null;
  fax: string | null;
  cellular: string | null;
  subscriptions: { stock: boolean; shop: boolean };
  contacts: ContactsSummary;
  created: string;
  updated: string;
}

export function toUserView(row: UserRow, summary: ContactsSummary | undefined): UserView {
  return {
    userId: row.id,
    clientId: row.clientId,
    externalUserId: row.externalUserId,
    companyName: row.companyName,
    gender: row.gender,
    firstName: row.firstName,
    lastName: row.lastName,
    dateOfBirth: row.dateOfBirth,
    address: row.address,
    houseNumber: row.houseNumber,
    postalCode: row.postalCode,
    city: row.city,
    county: row.county,
    country: row.country,
    email: row.email,
    website: row.website,
    phone: row.phone,
    fax: row.fax,
    cellular: row.cellular,
    subscriptions: { stock: row.subscriptionStock, shop: row.subscriptionShop },
    contacts: summary ?? { numberOfContacts: 0, numberOfActiveContacts: 0, contacts: [] },
    created: formatDateTime(row.createdAt),
    updated: formatDateTime(row.updatedAt),
  };
}

type UserColumns = Omit<typeof users.$inferInsert, "id" | "createdAt">;

/** The rules that span two fields (the database holds them too: migrations/0029_user_rules.sql). */
const NAME_RULE = "lastName: either companyName or lastName is required";
const PHONE_RULE = "phone: either phone or cellular is required";

/** The rules that span fields, checked on the user as it will be stored; returns the normalised row. */
function checkUserRules(user: UserColumns): UserColumns {
  const problems: string[] = [];
  if (!user.companyName && !user.lastName) problems.push(NAME_RULE);
  if (!user.phone && !user.cellular) problems.push(PHONE_RULE);
  let postalCode = user.postalCode ?? null;
  const inNetherlands = (user.country ?? "NL") === "NL";
  if (inNetherlands && postalCode) {
    postalCode = normalizeDutchPostalCode(postalCode);
    if (!postalCode) problems.push(`postalCode: ${INVALID_POSTAL_CODE}`);
  }
  if (!inNetherlands && user.county) problems.push("county: must be empty outside the Netherlands");
  if (problems.length > 0) throw DomainError.of("validation_failed", ...problems);
  return { ...user, postalCode };
}

/** The columns only an internal client changes. */
const INTERNAL_ONLY_COLUMNS = ["clientId", "externalUserId", "subscriptionStock", "subscriptionShop"] as const;

/** Input fields → columns; `subscriptions` is split in two columns. */
function toColumns(input: Partial<UserInput> | Omit<UserPatch, "userId">): Partial<UserColumns> {
  const { subscriptions, ...fields } = input;
  const columns: Partial<UserColumns> = { ...fields };
  if (subscriptions?.stock !== undefined) columns.subscriptionStock = subscriptions.stock;
  if (subscriptions?.shop !== undefined) columns.subscriptionShop = subscriptions.shop;
  return columns;
}

async function views(db: Db, rows: UserRow[]): Promise<UserView[]> {
  const summaries = await contactsSummaries(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((row) => toUserView(row, summaries.get(row.id)));
}

export async function getUser(ctx: ServiceContext, userId: number): Promise<UserView> {
  const { db, caller } = ctx;
  const [view] = await views(db, [await requireUser(db, caller, userId)]);
  return view as UserView;
}

export async function listUsers(
  ctx: ServiceContext,
  query: { page: number; itemsPerPage: number },
): Promise<Page<UserView>> {
  const { db, caller } = ctx;
  const where = visibleUsers(caller);
  const {
    total: [total],
    rows,
  } = await namedBatch(db, {
    total: db.select({ n: count() }).from(users).where(where),
    rows: db
      .select()
      .from(users)
      .where(where)
      .orderBy(asc(users.id))
      .limit(query.itemsPerPage)
      .offset((query.page - 1) * query.itemsPerPage),
  });
  return { items: await views(db, rows), totalItems: total?.n ?? 0, ...query };
}

/**
 * The database refused the write: the unique index on (client, externalUserId), a 409 naming the field;
 * or a rule spanning two columns that a concurrent partial update broke (the triggers of
 * migrations/0029_user_rules.sql), the 400 the rule gives when checked here.
 */
const refuseUserWrite = (externalUserId: number | null | undefined) => (error: unknown) => {
  if (violatesUnique(error, "users.client_id, users.external_user_id")) {
    throw DomainError.of(
      "external_user_id_taken",
      `externalUserId: ${externalUserId} is already used by another user of this client`,
    );
  }
  if (refusedByTrigger(error, "userName")) throw DomainError.of("validation_failed", NAME_RULE);
  if (refusedByTrigger(error, "userPhone")) throw DomainError.of("validation_failed", PHONE_RULE);
  throw error;
};

/** The group of a user's client: a user without one is in group 1, as every user before groups. */
const groupOfUsersClient = async (db: Db, clientId: number | null) =>
  clientId === null ? 1 : groupOfClientRow(db, clientId);

/**
 * A user given to another client (internal clients only) goes to one that exists; a user that moves
 * (`from`: its client now) stays in its group, since its rows' ids name that group. No client is group 1's.
 */
async function requireClient(db: Db, clientId: number | null | undefined, from?: number | null): Promise<void> {
  if (clientId === undefined) return;
  const [group, fromGroup] = await Promise.all([
    groupOfUsersClient(db, clientId),
    from === undefined ? undefined : groupOfUsersClient(db, from),
  ]);
  if (group === undefined) throw DomainError.of("reference_not_found", `clientId: client ${clientId} not found`);
  if (fromGroup !== undefined && fromGroup !== group)
    throw otherGroup("clientId", clientId === null ? "no client (group 1)" : `client ${clientId}`);
}

export async function createUser(ctx: ServiceContext, input: UserInput): Promise<UserView> {
  const { db, caller } = ctx;
  // A user read back and sent again carries these as every client's user has them: that is no request.
  if (input.clientId !== undefined && input.clientId !== clientIdOf(caller)) {
    requireInternal(caller, "clientId");
    await requireClient(db, input.clientId);
  }
  if (input.subscriptions?.stock || input.subscriptions?.shop) requireInternal(caller, "subscriptions");
  const columns = checkUserRules({
    country: "NL",
    county: "",
    ...toColumns(input),
    clientId: input.clientId === undefined ? clientIdOf(caller) : input.clientId,
    email: input.email,
  });
  const row = await db
    .insert(users)
    .values({ ...columns, id: nextId(users, groupOfClient(columns.clientId ?? clientIdOf(caller))) })
    .returning()
    .get()
    .catch(refuseUserWrite(columns.externalUserId));
  await db.batch([
    db.insert(userSettings).values({ userId: row.id }),
    bumpRevisions(db, userWriteRevisions(row.id), ctx.precondition),
  ]);
  return toUserView(row, undefined);
}

export async function updateUser(ctx: ServiceContext, patch: UserPatch): Promise<UserView> {
  const { db, caller } = ctx;
  const current = await requireUser(db, caller, patch.userId);
  const { userId, ...changes } = patch;
  if (changes.clientId !== undefined && changes.clientId !== current.clientId) {
    requireInternal(caller, "clientId");
    await requireClient(db, changes.clientId, current.clientId);
  }
  if (changes.externalUserId !== undefined && changes.externalUserId !== current.externalUserId) {
    requireInternal(caller, "externalUserId");
  }
  const subscriptions = changes.subscriptions;
  if (
    (subscriptions?.stock !== undefined && subscriptions.stock !== current.subscriptionStock) ||
    (subscriptions?.shop !== undefined && subscriptions.shop !== current.subscriptionShop)
  )
    requireInternal(caller, "subscriptions");
  const { id: _id, createdAt: _created, ...stored } = current;
  const columns = toColumns(changes);
  // A partner may send the internal-only fields back only unchanged (checked above): it writes none of them.
  if (!isInternal(caller)) for (const column of INTERNAL_ONLY_COLUMNS) delete columns[column];
  const merged = checkUserRules({ ...stored, ...columns, updatedAt: nowIso() });
  // The rules hold for the whole user; the write names only the columns the call sets, so a change made
  // meanwhile by another caller (an internal client's subscriptions) is never written over.
  const written = Object.fromEntries(
    [...Object.keys(columns), "updatedAt"].map((column) => [column, merged[column as keyof UserColumns]]),
  );
  await db
    .batch([
      db.update(users).set(written).where(eq(users.id, userId)),
      bumpRevisions(db, userWriteRevisions(userId), ctx.precondition),
    ])
    .catch(refuseUserWrite(merged.externalUserId));
  return getUser(ctx, userId);
}

const ANONYMISED = "anonymised";

const logDeletion = (userId: number, outcome: string, ip: string | undefined) =>
  console.log(JSON.stringify({ level: "info", msg: "user deleted", userId, outcome, ip: ip ?? null }));

/**
 * Deletes a user. Without ads or wallet transactions the user goes with everything below it; with
 * them, every personal field of the user, its contacts and its ads' provider data is
 * overwritten and the user disappears from the API. Irreversible either way; login links, activation
 * tokens and marketplace connections (revoked at the portal) are dropped too. Its jobs outlive it: what
 * never started is cancelled and refunded, the rest run or settle (a connection stays, without its
 * e-mail, until the last job on its portal ended), and internal clients still see them in /jobs/.
 */
export async function deleteUser(
  ctx: ServiceContext,
  input: { userId: number; ip?: string | undefined },
): Promise<"deleted" | "anonymised"> {
  const { userId, ip } = input;
  const { db, env, caller } = ctx;
  await requireUser(db, caller, userId);
  // Tokens first: a user whose rows are gone must not keep a working login link.
  await userTokens(env.USER_TOKENS, userId).clear();
  // What never started is cancelled and refunded; the rest of the user's jobs run or settle.
  await withdrawUnstartedJobs(ctx, { userId });
  const { adRows, entryRows } = await namedBatch(db, {
    adRows: db.select({ id: ads.id }).from(ads).where(eq(ads.userId, userId)).limit(1),
    entryRows: db.select({ id: walletEntries.id }).from(walletEntries).where(eq(walletEntries.userId, userId)).limit(1),
  });
  const bump = bumpRevisions(db, userWriteRevisions(userId), ctx.precondition);
  // Either way no user goes on naming it as its main user or its payer: its sellers pay for themselves.
  const unreferenced = [
    db.update(userSettings).set({ mainUserId: null }).where(eq(userSettings.mainUserId, userId)),
    db.update(userSettings).set({ walletUserId: null }).where(eq(userSettings.walletUserId, userId)),
  ] as const;
  await requirePrecondition(db, userWriteRevisions(userId), ctx.precondition);
  if (adRows.length === 0 && entryRows.length === 0) {
    await revokeAllConnections(ctx, { userId });
    await db.batch([...unreferenced, db.delete(users).where(eq(users.id, userId)), bump]);
    logDeletion(userId, "deleted", ip);
    return "deleted";
  }
  const now = nowIso();
  const userAds = db.select({ id: ads.id }).from(ads).where(eq(ads.userId, userId));
  const objects = await db
    .select({ originalKey: adImages.originalKey, thumbnailKey: adImages.thumbnailKey })
    .from(adImages)
    .where(inArray(adImages.adId, userAds));
  await db.batch([
    db
      .update(users)
      .set({
        externalUserId: null,
        companyName: ANONYMISED,
        gender: null,
        firstName: null,
        lastName: ANONYMISED,
        dateOfBirth: null,
        address: null,
        houseNumber: null,
        postalCode: null,
        city: null,
        county: "",
        country: "",
        email: `${ANONYMISED}-${userId}@invalid`,
        website: null,
        phone: null,
        fax: null,
        cellular: null,
        deletedAt: now,
        updatedAt: now,
      })
      .where(eq(users.id, userId)),
    db
      .update(contacts)
      .set({
        name: ANONYMISED,
        address: ANONYMISED,
        houseNumber: "",
        postalCode: null,
        city: ANONYMISED,
        county: "",
        phone: "",
        website: null,
        chathandle: null,
      })
      .where(eq(contacts.userId, userId)),
    db.update(ads).set({ provider: null }).where(eq(ads.userId, userId)),
    // Pictures can show people and places: they go too.
    db.delete(adImages).where(inArray(adImages.adId, userAds)),
    db.delete(userAdSettings).where(eq(userAdSettings.userId, userId)),
    db.delete(folders).where(eq(folders.userId, userId)),
    // A connection's e-mail goes now; its tokens stay while a job of the user is open on its portal
    // (closeDeletedUsersConnections below, then the cron). Tasks and notices go too.
    db.update(portalConnections).set({ email: "" }).where(eq(portalConnections.userId, userId)),
    db.delete(tasks).where(eq(tasks.userId, userId)),
    db.delete(notifications).where(eq(notifications.userId, userId)),
    ...unreferenced,
    bump,
  ]);
  await closeDeletedUsersConnections(ctx, { userId, limit: 10 });
  await deleteObjects(env.MEDIA, objects);
  logDeletion(userId, "anonymised", ip);
  return "anonymised";
}

/** Users by id that the caller may see (for references such as walletUserId). */
export async function visibleUserIds(db: Db, caller: Caller, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(and(inList(users.id, ids), visibleUsers(caller)));
  return new Set(rows.map((r) => r.id));
}
