/** Scheduled tasks, their runs, notices. */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { MARKETPLACES } from "../../lib/vocabulary";
import { users } from "./accounts";
import { byId, group, owners, USER_PARENT } from "./ownership";
import { createdAt, updatedAt } from "./shared";

export const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const;

/** A scheduled bump-up (or other feature) of a user's ads on a portal, at an Amsterdam wall-clock time. */
export const tasks = sqliteTable(
  "tasks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    portal: text("portal", { enum: MARKETPLACES }).notNull(),
    feature: text("feature").notNull().default("upcall"),
    /** hh:mm, Europe/Amsterdam. */
    time: text("time").notNull(),
    /** Weekdays it runs on; null: every day. */
    dayOfWeek: text("day_of_week", { mode: "json" }).$type<(typeof WEEKDAYS)[number][] | null>(),
    /** The ads it bumps; empty: every active ad of the user published on the portal. */
    adIds: text("ad_ids", { mode: "json" }).$type<number[]>().notNull().default([]),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("tasks_due").on(t.enabled, t.time), index("tasks_user").on(t.userId, t.portal)],
);

/** One run of a task for one due minute; the run key makes a due minute run at most once. */
export const taskRuns = sqliteTable(
  "task_runs",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    taskId: integer("task_id")
      .notNull()
      .references(() => tasks.id, { onDelete: "cascade" }),
    /** `<taskId>@<Amsterdam date>T<hh:mm>`. */
    runKey: text("run_key").notNull().unique(),
    dueAt: text("due_at").notNull(),
    ads: integer("ads").notNull().default(0),
    queued: integer("queued").notNull().default(0),
    skipped: text("skipped", { mode: "json" }).$type<{ adId: number; reason: string }[]>().notNull().default([]),
    cost: integer("cost").notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index("task_runs_task").on(t.taskId, t.dueAt)],
);

/** Outbox of notices to users (budget below the limit); sending is a seam, the cron hands them over. */
export const notifications = sqliteTable(
  "notifications",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["budget"] }).notNull(),
    message: text("message").notNull(),
    createdAt: createdAt(),
    sentAt: text("sent_at"),
  },
  (t) => [index("notifications_unsent").on(t.sentAt)],
);

/** Whose rows each table here holds (./ownership.ts): what a group's move carries. */
export const schedulingOwners = owners([
  [tasks, group(byId("tasks"), { parents: USER_PARENT })],
  [taskRuns, group(byId("task_runs"), { parents: { task_id: "tasks" } })],
  [notifications, group(byId("notifications"), { parents: USER_PARENT })],
]);
