import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../env";
import { list, ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { taggedRead } from "../../middleware/responseCache";
import {
  Contact,
  ContactsQuery,
  CreateContact,
  createContact,
  DeleteContact,
  deleteContact,
  listContacts,
  UpdateContact,
  updateContact,
} from "../../services/accounts";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope } from "../openapi";

const tags = ["Contacts"];
const userIdParam = pathId("userId");
const contactIdParam = pathId("contactId");

const listRoute = apiRoute({
  method: "get",
  path: "/contacts/{userId}",
  entityTag: true,
  tags,
  summary: "The user's contacts",
  request: { params: z.object({ userId: userIdParam }), query: ContactsQuery },
  response: listEnvelope(Contact),
});

const getRoute = apiRoute({
  method: "get",
  path: "/contacts/{userId}/{contactId}",
  entityTag: true,
  tags,
  summary: "One contact, as a list of one",
  request: { params: z.object({ userId: userIdParam, contactId: contactIdParam }), query: ContactsQuery },
  response: listEnvelope(Contact),
});

/** The writes answer the user's whole list. */
const ContactsResponse = envelope(z.array(Contact));

type ContactsParams = { userId: number; contactId?: number };

const respondWithContacts = (c: Context<AppEnv>, params: ContactsParams, query: z.infer<typeof ContactsQuery>) => {
  const startedAt = Date.now();
  return taggedRead(c, query.useCache, userRevision(params.userId), async () =>
    list(await listContacts(serviceContext(c), { ...params, ...query }), startedAt),
  );
};

export const contactsRouter = createRouter()
  .openapi(listRoute, async (c) =>
    c.json(await respondWithContacts(c, c.req.valid("param"), c.req.valid("query")), 200),
  )
  .openapi(getRoute, async (c) => c.json(await respondWithContacts(c, c.req.valid("param"), c.req.valid("query")), 200))
  .openapi(
    apiRoute({
      method: "post",
      path: "/contacts",
      tags,
      summary: "Add a contact; answers all the user's contacts",
      request: { body: jsonBody(CreateContact) },
      response: ContactsResponse,
    }),
    async (c) => {
      return c.json(ok(await createContact(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/contacts",
      entityTag: true,
      tags,
      summary: "Change a contact; answers all the user's contacts",
      request: { body: jsonBody(UpdateContact) },
      response: ContactsResponse,
    }),
    async (c) => {
      return c.json(ok(await updateContact(serviceContext(c), c.req.valid("json"))), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/contacts",
      entityTag: true,
      tags,
      summary: "Remove a contact no active ad uses; answers the remaining contacts",
      request: { body: jsonBody(DeleteContact) },
      response: ContactsResponse,
    }),
    async (c) => {
      return c.json(ok(await deleteContact(serviceContext(c), c.req.valid("json"))), 200);
    },
  );
