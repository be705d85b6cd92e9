import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { list, ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { taggedRead } from "../../middleware/responseCache";
import {
  CreateFolder,
  createFolder,
  DeleteFolder,
  deleteFolder,
  Folder,
  FoldersQuery,
  listFolders,
  UpdateFolder,
  updateFolder,
} from "../../services/accounts";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Folders"];

const userIdParam = pathId("userId");
const folderIdParam = pathId("folderId");

const listRoute = apiRoute({
  method: "get",
  path: "/folders/{userId}",
  entityTag: true,
  tags,
  summary: "The user's folders",
  request: { params: z.object({ userId: userIdParam }), query: FoldersQuery },
  response: listEnvelope(Folder),
});
const getRoute = apiRoute({
  method: "get",
  path: "/folders/{userId}/{folderId}",
  entityTag: true,
  tags,
  summary: "One folder, as a list of one",
  request: { params: z.object({ userId: userIdParam, folderId: folderIdParam }), query: FoldersQuery },
  response: listEnvelope(Folder),
});
/** The writes answer the user's whole list. */
const FoldersResponse = envelope(z.array(Folder));

const respondWithFolders = (
  c: Context<AppEnv>,
  params: { userId: number; folderId?: number },
  query: z.infer<typeof FoldersQuery>,
) => {
  const startedAt = Date.now();
  return taggedRead(c, query.useCache, userRevision(params.userId), async () =>
    list(await listFolders(serviceContext(c), { ...params, ...query }), startedAt),
  );
};

export const foldersRouter = createRouter()
  .openapi(listRoute, async (c) => c.json(await respondWithFolders(c, c.req.valid("param"), c.req.valid("query")), 200))
  .openapi(getRoute, async (c) => c.json(await respondWithFolders(c, c.req.valid("param"), c.req.valid("query")), 200))
  .openapi(
    apiRoute({
      method: "post",
      path: "/folders",
      tags,
      summary: "Create a folder; answers an array with the created folder",
      request: { body: jsonBody(CreateFolder) },
      response: FoldersResponse,
    }),
    async (c) => {
      return c.json(ok(await createFolder(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/folders",
      entityTag: true,
      tags,
      summary: "Rename a folder; answers the user's folders",
      request: { body: jsonBody(UpdateFolder) },
      response: FoldersResponse,
    }),
    async (c) => {
      return c.json(ok(await updateFolder(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/folders",
      entityTag: true,
      tags,
      summary: "Remove a folder (its ads stay); answers the remaining folders",
      request: { body: jsonBody(DeleteFolder) },
      response: FoldersResponse,
    }),
    async (c) => {
      return c.json(ok(await deleteFolder(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
