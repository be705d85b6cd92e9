import { and, asc, eq } from "drizzle-orm";
import { userAdSettings } from "../../db/schema";
import { sanitizeHtml, USER_AD_SETTINGS_TAGS } from "../../lib/html";
import type { PublishTarget } from "../../lib/vocabulary";
import { requireUser } from "../shared/access";
import type { ServiceContext } from "../shared/context";
import { bumpRevisions, userWriteRevisions } from "../shared/revisions";

export interface UserAdSettingView {
  portal: PublishTarget;
  header: string;
  footer: string;
  allowContactByEmail: boolean;
}

export async function getUserAdSettings(
  ctx: ServiceContext,
  input: { userId: number; portal?: PublishTarget | undefined },
): Promise<{ userId: number; settings: UserAdSettingView[] }> {
  const { userId, portal } = input;
  const { db, caller } = ctx;
  await requireUser(db, caller, userId);
  const rows = await db
    .select()
    .from(userAdSettings)
    .where(
      portal
        ? and(eq(userAdSettings.userId, userId), eq(userAdSettings.portal, portal))
        : eq(userAdSettings.userId, userId),
    )
    .orderBy(asc(userAdSettings.portal));
  return { userId, settings: rows.map(({ userId: _u, ...setting }) => setting) };
}

/** Creates or replaces the settings of each given portal; header and footer are sanitised HTML. */
export async function replaceUserAdSettings(
  ctx: ServiceContext,
  input: {
    userId: number;
    settings: { portal: PublishTarget; header: string; footer: string; allowContactByEmail?: boolean | undefined }[];
  },
) {
  const { db, caller } = ctx;
  await requireUser(db, caller, input.userId);
  const rows = await Promise.all(
    input.settings.map(async (s) => ({
      userId: input.userId,
      portal: s.portal,
      header: await sanitizeHtml(s.header, USER_AD_SETTINGS_TAGS),
      footer: await sanitizeHtml(s.footer, USER_AD_SETTINGS_TAGS),
      allowContactByEmail: s.allowContactByEmail ?? true,
    })),
  );
  if (rows.length > 0) {
    await db.batch([
      bumpRevisions(db, userWriteRevisions(input.userId), ctx.precondition),
      ...rows.map((row) =>
        db
          .insert(userAdSettings)
          .values(row)
          .onConflictDoUpdate({
            target: [userAdSettings.userId, userAdSettings.portal],
            set: { header: row.header, footer: row.footer, allowContactByEmail: row.allowContactByEmail },
          }),
      ),
    ]);
  }
  return getUserAdSettings(ctx, { userId: input.userId });
}
