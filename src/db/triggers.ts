/**
 * Limits the database enforces with triggers (so that concurrent writes cannot pass them). D1 reports a
 * trigger's RAISE only as the error's text, so these must match the migrations word for word.
 */
export const TRIGGER_REFUSALS = {
  /** migrations/0007_images_limit.sql */
  maxImages: "maxImages reached",
  /** migrations/0002_contacts_limit.sql */
  maxContacts: "maxContacts reached",
  /** migrations/0029_user_rules.sql */
  userName: "user without companyName and lastName",
  userPhone: "user without phone and cellular",
} as const;

/** A failure's text with its causes' (an ORM wraps D1's error, whose message says what the database refused). */
export function failureText(error: unknown): string {
  const texts: string[] = [];
  for (let current = error; current !== undefined && current !== null; current = (current as Error).cause) {
    texts.push(String((current as Error).message ?? current));
    if (texts.length > 5) break;
  }
  return texts.join("\n");
}

/** Whether a failed write was refused by the trigger behind `limit`. */
export const refusedByTrigger = (error: unknown, limit: keyof typeof TRIGGER_REFUSALS) =>
  failureText(error).includes(TRIGGER_REFUSALS[limit]);

/** Whether a failed write broke the unique index on `columns` (D1 names them as `table.column, …`). */
export const violatesUnique = (error: unknown, columns: string) =>
  failureText(error).includes(`UNIQUE constraint failed: ${columns}`);

/** Whether a failed write was refused by the table's check constraint `name`. */
export const violatesCheck = (error: unknown, name: string) =>
  failureText(error).includes(`CHECK constraint failed: ${name}`);
