import { and, eq, isNull, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { users } from "../../db/schema";
import type { ApiClient } from "../../env";
import { DomainError } from "../../lib/errors";

/** Who is acting: tenancy and privileges of the calling client, passed to every service. */
export interface Caller {
  clientId: number;
  internal: boolean;
  partner: boolean;
}

export const callerOf = (client: ApiClient): Caller => ({
  clientId: client.id,
  internal: client.internal,
  partner: client.partner,
});

/** The users a client may see: its own, or every user for internal clients; never deleted ones. */
export function visibleUsers(caller: Caller): SQL {
  const alive = isNull(users.deletedAt);
  return caller.internal ? alive : (and(alive, eq(users.clientId, caller.clientId)) as SQL);
}

export const userNotFound = (userId: number) => DomainError.of("user_not_found", `userId: user ${userId} not found`);

export type UserRow = typeof users.$inferSelect;

/** The user if the client may act on it; another client's user answers 404, as if it did not exist. */
export async function requireUser(db: Db, caller: Caller, userId: number): Promise<UserRow> {
  const user = await db
    .select()
    .from(users)
    .where(and(eq(users.id, userId), visibleUsers(caller)))
    .get();
  if (!user) throw userNotFound(userId);
  return user;
}

/** 403 unless the client is internal; `field` names what was reserved. */
export function requireInternal(caller: Caller, field: string): void {
  if (!caller.internal) throw DomainError.of("internal_only", `${field}: may only be set by internal clients`);
}
