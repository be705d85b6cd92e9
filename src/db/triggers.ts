/**
 * Limits the database enforces with triggers (so that concurrent writes cannot pass them). D1 reports a
 * trigger's RAISE only as the error's text, so these must match the migrations word for word.
 */
export const TRIGGER_REFUSALS = {
  /** migrations/0007_images_limit.sql */
  maxImages: "maxImages reached",
  /** migrations/0002_contacts_limit.sql */
  maxContacts: "maxContacts reached",
} as const;

/** Whether a failed write was refused by the trigger behind `limit`. */
export const refusedByTrigger = (error: unknown, limit: keyof typeof TRIGGER_REFUSALS) =>
  String((error as Error)?.message ?? error).includes(TRIGGER_REFUSALS[limit]);
