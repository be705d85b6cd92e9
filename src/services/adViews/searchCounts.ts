// The count of an ads list where tallies answer it: a sum of the few tally rows its filters select.
import { type AnyColumn, and, eq, inArray, type SQL, sql } from "drizzle-orm";
import { adTallies, clientAdTallies, folders, NO_TALLY_KEY, users } from "../../db/schema";
import { clientIdOf, isInternal } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import type { AdsQueryInput } from "./schemas";
import { filtersWithin } from "./searchPlans";

/**
 * Whether the list's count is a sum of tallies (`ad_tallies`, `client_ad_tallies`): it filters by nothing
 * but the tallied columns, and not by the tallies' stand-in for "none".
 */
export const isTallied = (q: AdsQueryInput) =>
  filtersWithin(q, ["userId", "status", "type", "folderId", "categoryId"]) &&
  q.folderId !== NO_TALLY_KEY &&
  q.categoryId !== NO_TALLY_KEY;

/**
 * The number of ads a tallied list matches, summed from the few tally rows its filters select. Across
 * users: the client's rows (an internal client's: every client's). With `userId`, or a folder (which
 * belongs to one user): that user's rows, if the caller may see the user (the check reads that user only).
 */
export function tallyCount({ db, caller }: ServiceContext, input: { query: AdsQueryInput; visible?: SQL }) {
  const { query: q, visible } = input;
  const sum = (column: AnyColumn) => sql<number>`coalesce(sum(${column}), 0)`;
  const optional = <T>(value: T | undefined, condition: (v: T) => SQL) =>
    value === undefined ? undefined : condition(value);
  if (q.userId === undefined && q.folderId === undefined) {
    return db
      .select({ n: sum(clientAdTallies.n) })
      .from(clientAdTallies)
      .where(
        and(
          isInternal(caller) ? undefined : eq(clientAdTallies.clientId, clientIdOf(caller)),
          optional(q.status, (v) => eq(clientAdTallies.status, v)),
          optional(q.type, (v) => eq(clientAdTallies.type, v)),
          optional(q.categoryId, (v) => eq(clientAdTallies.categoryId, v)),
        ),
      );
  }
  const owner =
    q.userId !== undefined
      ? eq(users.id, q.userId)
      : inArray(
          users.id,
          db
            .select({ id: folders.userId })
            .from(folders)
            .where(eq(folders.id, q.folderId ?? 0)),
        );
  const visibleOwner = db.select({ id: users.id }).from(users).where(and(owner, visible));
  return db
    .select({ n: sum(adTallies.n) })
    .from(adTallies)
    .where(
      and(
        inArray(adTallies.userId, visibleOwner),
        optional(q.userId, (v) => eq(adTallies.userId, v)),
        optional(q.status, (v) => eq(adTallies.status, v)),
        optional(q.type, (v) => eq(adTallies.type, v)),
        optional(q.folderId, (v) => eq(adTallies.folderId, v)),
        optional(q.categoryId, (v) => eq(adTallies.categoryId, v)),
      ),
    );
}
