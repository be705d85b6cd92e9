import { type AnyColumn, and, eq, isNull, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { users } from "../../db/schema";
import type { ApiClient } from "../../env";
import { DomainError } from "../../lib/errors";

// The key of the caller's fields: not exported, so no other module can read them (the compiler says so),
// and every decision on tenancy and privileges is made by the functions below.
const fields = Symbol("caller");

/** Who is acting: tenancy and privileges of the calling client, passed to every service; opaque. */
export interface Caller {
  readonly [fields]: { readonly clientId: number; readonly internal: boolean; readonly partner: boolean };
}

export const callerOf = (client: Pick<ApiClient, "id" | "internal" | "partner">): Caller => ({
  [fields]: { clientId: client.id, internal: client.internal, partner: client.partner },
});

export const isInternal = (caller: Caller) => caller[fields].internal;
export const isPartner = (caller: Caller) => caller[fields].partner;
/** The client a row the caller creates belongs to. */
export const clientIdOf = (caller: Caller) => caller[fields].clientId;

/** Rows of the caller's own client (a client's own records: internal clients too see only their own). */
export const ownRows = (caller: Caller, clientColumn: AnyColumn): SQL => eq(clientColumn, caller[fields].clientId);

/** Rows the caller may see: its own client's, or all for an internal client (undefined: no condition). */
export const visibleRows = (caller: Caller, clientColumn: AnyColumn): SQL | undefined =>
  caller[fields].internal ? undefined : ownRows(caller, clientColumn);

/** The users a client may see: its own, or every user for internal clients; never deleted ones. */
export function visibleUsers(caller: Caller): SQL {
  const alive = isNull(users.deletedAt);
  const own = visibleRows(caller, users.clientId);
  return own ? (and(alive, own) as SQL) : alive;
}

/**
 * Users whose history (jobs, charges and refunds) the caller may read: its own live users; for internal
 * clients, every user, deleted (anonymised) ones included.
 */
export const usersWithHistory = (caller: Caller): SQL | undefined =>
  caller[fields].internal ? undefined : visibleUsers(caller);

export const userNotFound = (userId: number) => DomainError.of("user_not_found", `userId: user ${userId} not found`);

export type UserRow = typeof users.$inferSelect;

/** The user where `visible` lets the caller see it; otherwise 404, as if it did not exist. */
async function userWhere(db: Db, userId: number, visible: SQL | undefined): Promise<UserRow> {
  const user = await db
    .select()
    .from(users)
    .where(and(eq(users.id, userId), visible))
    .get();
  if (!user) throw userNotFound(userId);
  return user;
}

/** The user if the client may act on it; another client's user returns 404, as if it did not exist. */
export const requireUser = (db: Db, caller: Caller, userId: number): Promise<UserRow> =>
  userWhere(db, userId, visibleUsers(caller));

/** Whether the client may act on the user (a row of the user's it asks for is found, or 404 as if none were). */
export const seesUser = (db: Db, caller: Caller, userId: number): Promise<boolean> =>
  requireUser(db, caller, userId).then(
    () => true,
    (error: unknown) => (error instanceof DomainError ? false : Promise.reject(error)),
  );

/** The user if the caller may read its history (`usersWithHistory`); otherwise 404. */
export const requireUserHistory = (db: Db, caller: Caller, userId: number): Promise<UserRow> =>
  userWhere(db, userId, usersWithHistory(caller));

/** 403 unless the client is internal; `field` names what was reserved. */
export function requireInternal(caller: Caller, field: string): void {
  if (!caller[fields].internal) throw DomainError.of("internal_only", `${field}: may only be set by internal clients`);
}
