import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { WEEKDAYS } from "../../db/schema";
import type { AppEnv } from "../../env";
import { list, ok } from "../../lib/envelope";
import { id, pagingQuery, pathId, queryInt } from "../../lib/fields";
import { withCache } from "../../middleware/responseCache";
import { FEATURE_NAMES } from "../../services/catalogue";
import { createTask, deleteTask, listTasks, updateTask } from "../../services/scheduling";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Tasks"];
const portal = z.enum(["portal_a", "portal_b"]);
const time = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: "must be a time hh:mm (00:00-23:59)" });
const dayOfWeek = z
  .array(z.enum(WEEKDAYS))
  .max(7)
  .refine((days) => new Set(days).size === days.length, { error: "each day may appear once" })
  .nullable()
  .openapi({ description: "monday..sunday; omitted or empty: every day" });
const feature = z.enum(["upcall", ...FEATURE_NAMES]).openapi({ description: "Default upcall (= omhoogplaatsen)" });
const adIds = z
  .array(id())
  .max(1000)
  .openapi({ description: "Empty or omitted: every active ad of the user published on the portal" });

const Task = z
  .object({
    taskId: z.number().int(),
    userId: z.number().int(),
    portal,
    adId: z.array(z.number().int()),
    time: z.string(),
    dayOfWeek: z.array(z.string()),
    feature: z.string(),
    enabled: z.boolean(),
    runs: z
      .array(
        z.object({
          due: z.string(),
          ads: z.number().int(),
          queued: z.number().int(),
          skipped: z.array(z.object({ adId: z.number().int(), reason: z.string() })),
          cost: z.number().int(),
        }),
      )
      .optional()
      .openapi({ description: "With a taskId: the 20 latest runs" }),
  })
  .openapi("Task");

const CreateTask = z
  .object({
    userId: id(),
    portal,
    time,
    dayOfWeek: dayOfWeek.optional(),
    adId: adIds.optional(),
    feature: feature.optional(),
    enabled: z.boolean(),
  })
  .openapi("CreateTask");
const UpdateTask = z
  .object({
    taskId: id(),
    userId: id(),
    time: time.optional(),
    dayOfWeek: dayOfWeek.optional(),
    adId: adIds.optional(),
    feature: feature.optional(),
    enabled: z.boolean().optional(),
  })
  .openapi("UpdateTask");
const DeleteTask = z.object({ taskId: id(), userId: id(), portal }).openapi("DeleteTask");

const TasksQuery = pagingQuery(100);
type Params = { userId: number; portal?: z.infer<typeof portal>; taskId?: number };

const answer = (c: Context<AppEnv>, params: Params, query: z.infer<typeof TasksQuery>) => {
  const startedAt = Date.now();
  return withCache(c, query.useCache, [userRevision(params.userId)], async () =>
    list(await listTasks(serviceContext(c), { ...params, ...query }), startedAt),
  );
};

const portalParam = portal.openapi({ param: { name: "portal", in: "path" } });
/** The writes answer the user's whole list. */
const TasksAnswer = envelope(z.array(Task));

export const tasksRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/tasks/{userId}",
      tags,
      summary: "The user's tasks",
      request: { params: z.object({ userId: pathId("userId") }), query: TasksQuery },
      response: listEnvelope(Task),
    }),
    async (c) => c.json(await answer(c, c.req.valid("param") as Params, c.req.valid("query")), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/tasks/{userId}/{portal}",
      tags,
      summary: "The user's tasks on a portal",
      request: { params: z.object({ userId: pathId("userId"), portal: portalParam }), query: TasksQuery },
      response: listEnvelope(Task),
    }),
    async (c) => c.json(await answer(c, c.req.valid("param") as Params, c.req.valid("query")), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/tasks/{userId}/{portal}/{taskId}",
      tags,
      summary: "One task with its recent runs",
      request: {
        params: z.object({ userId: pathId("userId"), portal: portalParam, taskId: pathId("taskId") }),
        query: TasksQuery,
      },
      response: listEnvelope(Task),
    }),
    async (c) => c.json(await answer(c, c.req.valid("param") as Params, c.req.valid("query")), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/tasks",
      tags,
      summary: "The tasks of the user given by `?userId=`",
      request: { query: TasksQuery.extend({ userId: queryInt() }) },
      response: listEnvelope(Task),
    }),
    async (c) => {
      const { userId, ...query } = c.req.valid("query");
      return c.json(await answer(c, { userId }, query), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/tasks",
      tags,
      summary: "Create a task; answers the user's tasks",
      request: { body: jsonBody(CreateTask) },
      response: TasksAnswer,
    }),
    async (c) => {
      return c.json(ok(await createTask(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/tasks",
      tags,
      summary: "Change a task; answers the user's tasks",
      request: { body: jsonBody(UpdateTask) },
      response: TasksAnswer,
    }),
    async (c) => {
      return c.json(ok(await updateTask(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/tasks",
      tags,
      summary: "Remove a task; answers the remaining tasks",
      request: { body: jsonBody(DeleteTask) },
      response: TasksAnswer,
    }),
    async (c) => {
      return c.json(ok(await deleteTask(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
