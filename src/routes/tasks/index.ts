import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { list, ok } from "../../lib/envelope";
import { pagingQuery, pathId, queryId } from "../../lib/fields";
import { MarketplaceEnum } from "../../lib/vocabulary";
import { taggedRead } from "../../middleware/responseCache";
import {
  CreateTask,
  createTask,
  DeleteTask,
  deleteTask,
  listTasks,
  Task,
  UpdateTask,
  updateTask,
} from "../../services/scheduling";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Tasks"];
const TasksQuery = pagingQuery(100);
type Params = { userId: number; portal?: z.infer<typeof MarketplaceEnum>; taskId?: number };

const answer = (c: Context<AppEnv>, params: Params, query: z.infer<typeof TasksQuery>) => {
  const startedAt = Date.now();
  return taggedRead(c, query.useCache, userRevision(params.userId), async () =>
    list(await listTasks(serviceContext(c), { ...params, ...query }), startedAt),
  );
};

const portalParam = MarketplaceEnum.openapi({ param: { name: "portal", in: "path" } });
/** The writes answer the user's whole list. */
const TasksResponse = envelope(z.array(Task));

export const tasksRouter = createRouter()
  .openapi(
    apiRoute({
      method: "get",
      path: "/tasks/{userId}",
      entityTag: true,
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
      entityTag: true,
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
      entityTag: true,
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
      entityTag: true,
      tags,
      summary: "The tasks of the user given by `?userId=`",
      request: { query: TasksQuery.extend({ userId: queryId() }) },
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
      response: TasksResponse,
    }),
    async (c) => {
      return c.json(ok(await createTask(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/tasks",
      entityTag: true,
      tags,
      summary: "Change a task; answers the user's tasks",
      request: { body: jsonBody(UpdateTask) },
      response: TasksResponse,
    }),
    async (c) => {
      return c.json(ok(await updateTask(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/tasks",
      entityTag: true,
      tags,
      summary: "Remove a task; answers the remaining tasks",
      request: { body: jsonBody(DeleteTask) },
      response: TasksResponse,
    }),
    async (c) => {
      return c.json(ok(await deleteTask(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
