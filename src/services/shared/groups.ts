import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { inList } from "../../db/inList";
import { apiClients, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";

/**
 * A client group's rows stay together (src/db/ids.ts): they are moved together and, once the data spreads
 * over many databases, live in one. What ties two users or a user and a client together must then stay
 * inside one group.
 */

/** The client group of each of the users (a user without a client is in group 1). */
export async function groupsOfUsers(db: Db, userIds: number[]): Promise<Map<number, number>> {
  const rows = await db
    .select({ userId: users.id, groupId: apiClients.groupId })
    .from(users)
    .leftJoin(apiClients, eq(apiClients.id, users.clientId))
    .where(inList(users.id, userIds));
  return new Map(rows.map((row) => [row.userId, row.groupId ?? 1]));
}

/** The client's group, or undefined when there is no such client. */
export async function groupOfClientRow(db: Db, clientId: number): Promise<number | undefined> {
  const row = await db
    .select({ groupId: apiClients.groupId })
    .from(apiClients)
    .where(eq(apiClients.id, clientId))
    .get();
  return row?.groupId;
}

export const otherGroup = (field: string, what: string) =>
  DomainError.of("client_group_mismatch", `${field}: ${what} is in another client group; it must be in the same one`);
