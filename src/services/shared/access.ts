import { and, eq, isNull, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { users } from "../../db/schema";
import type { ApiClient } from "../../env";
import { ApiError } from "../../lib/errors";

/** Who is acting: tenancy and privileges of the calling client, passed to every service. */
export interface Scope {
  clientId: number;
  internal: boolean;
  partner: boolean;
}

export const scopeOf = (client: ApiClient): Scope => ({
  clientId: client.id,
  internal: client.internal,
  partner: client.partner,
});

/** The users a client may see: its own, or every user for internal clients; never deleted ones. */
export function visibleUsers(scope: Scope): SQL {
  const alive = isNull(users.deletedAt);
  return scope.internal ? alive : (and(alive, eq(users.clientId, scope.clientId)) as SQL);
}

export const userNotFound = (userId: number) => new ApiError(404, [`userId: user ${userId} not found`]);

export type UserRow = typeof users.$inferSelect;

/** The user if the client may act on it; another client's user answers 404, as if it did not exist. */
export async function requireUser(db: Db, scope: Scope, userId: number): Promise<UserRow> {
  const user = await db
    .select()
    .from(users)
    .where(and(eq(users.id, userId), visibleUsers(scope)))
    .get();
  if (!user) throw userNotFound(userId);
  return user;
}

/** 403 unless the client is internal; `field` names what was reserved. */
export function requireInternal(scope: Scope, field: string): void {
  if (!scope.internal) throw new ApiError(403, [`${field}: may only be set by internal clients`]);
}
