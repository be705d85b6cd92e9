import { z } from "@hono/zod-openapi";
import { list, ok } from "../../lib/envelope";
import { taggedRead, withCache } from "../../middleware/responseCache";
import {
  CreatedUser,
  CreateUser,
  createUser,
  DeleteUser,
  deleteUser,
  getUser,
  issueActivation,
  listUsers,
  UpdateUser,
  User,
  UserIdParam,
  UsersQuery,
  updateUser,
} from "../../services/accounts";
import { USER_LIST_REVISIONS, userRevision } from "../../services/shared";
import { pageOfEveryShard } from "../acrossShards";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Users"];

const listRoute = apiRoute({
  method: "get",
  path: "/users",
  tags,
  summary: "List the users of the client (all users for internal clients)",
  request: { query: UsersQuery },
  response: listEnvelope(User),
});

const getRoute = apiRoute({
  method: "get",
  path: "/users/{userId}",
  entityTag: true,
  tags,
  summary: "One user, as a list of one",
  request: { params: UserIdParam, query: UsersQuery },
  response: listEnvelope(User),
});

const createRoute = apiRoute({
  method: "post",
  path: "/users",
  tags,
  summary: "Create a user; it is locked until activated with the returned token",
  request: { body: jsonBody(CreateUser) },
  response: envelope(CreatedUser),
});

const updateRoute = apiRoute({
  method: "put",
  path: "/users",
  entityTag: true,
  tags,
  summary: "Update a user; answers the updated user",
  request: { body: jsonBody(UpdateUser) },
  response: envelope(User),
});

const deleteByPathRoute = apiRoute({
  method: "delete",
  path: "/users/{userId}",
  entityTag: true,
  tags,
  summary: "Delete a user: removed completely without ads, anonymised irreversibly with ads",
  request: { params: UserIdParam },
  response: envelope(z.literal(false)),
});

const deleteByBodyRoute = apiRoute({
  method: "delete",
  path: "/users",
  entityTag: true,
  tags,
  summary: "Delete a user given in the body",
  request: { body: jsonBody(DeleteUser) },
  response: envelope(z.literal(false)),
});

export const usersRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const startedAt = Date.now();
    const body = await withCache(c, query.useCache, USER_LIST_REVISIONS, async () =>
      list(await pageOfEveryShard(c, query, listUsers, { idOf: (user) => user.userId, descending: false }), startedAt),
    );
    return c.json(body, 200);
  })
  .openapi(getRoute, async (c) => {
    const { userId } = c.req.valid("param");
    const { useCache } = c.req.valid("query");
    const startedAt = Date.now();
    const body = await taggedRead(c, useCache, userRevision(userId), async () =>
      list({ items: [await getUser(serviceContext(c), userId)], totalItems: 1, page: 1, itemsPerPage: 1 }, startedAt),
    );
    return c.json(body, 200);
  })
  .openapi(createRoute, async (c) => {
    const ctx = serviceContext(c);
    const user = await createUser(ctx, c.req.valid("json"));
    const { userId: _id, ...activation } = await issueActivation(ctx, { userId: user.userId, limited: false });
    return c.json(ok({ ...user, activation }), 200);
  })
  .openapi(updateRoute, async (c) => {
    return c.json(ok(await updateUser(serviceContext(c), c.req.valid("json"))), 200);
  })
  .openapi(deleteByPathRoute, async (c) => {
    await deleteUser(serviceContext(c), { userId: c.req.valid("param").userId });
    return c.json(ok(false as const), 200);
  })
  .openapi(deleteByBodyRoute, async (c) => {
    const { userId, ip } = c.req.valid("json");
    await deleteUser(serviceContext(c), { userId, ip });
    return c.json(ok(false as const), 200);
  });
