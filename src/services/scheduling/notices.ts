import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import { settledClient } from "../../db/directory";
import { notifications, users } from "../../db/schema";
import type { JobContext } from "../shared/context";

/** The seam where notices leave the service; an e-mail provider implements the same interface. */
export interface NotificationSender {
  send(notice: { userId: number; email: string; kind: string; message: string }): Promise<void>;
}

/** The built-in sender writes the notice to the log. */
export const logSender: NotificationSender = {
  async send(notice) {
    console.log(JSON.stringify({ level: "info", msg: "notification", ...notice }));
  },
};

/** Hands unsent notices from the outbox to the sender, at most `limit` per call. */
export async function sendNotifications(
  ctx: Pick<JobContext, "db">,
  input: { sender: NotificationSender; limit: number },
): Promise<number> {
  const { db } = ctx;
  const { sender, limit } = input;
  const pending = await db
    .select({
      id: notifications.id,
      userId: notifications.userId,
      kind: notifications.kind,
      message: notifications.message,
      email: users.email,
    })
    .from(notifications)
    .innerJoin(users, eq(users.id, notifications.userId))
    .where(and(isNull(notifications.sentAt), settledClient(users.clientId)))
    .orderBy(asc(notifications.id))
    .limit(limit);
  for (const notice of pending) await sender.send(notice);
  if (pending.length > 0) {
    await db
      .update(notifications)
      .set({ sentAt: new Date().toISOString() })
      .where(
        inArray(
          notifications.id,
          pending.map((n) => n.id),
        ),
      );
  }
  return pending.length;
}
