import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import { ConfirmedMove, confirmGroupMove, GroupMove, MoveGroup, moveClientGroup } from "../../services/accounts";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";

const tags = ["Client groups"];
const groupParams = z.object({ groupId: pathId("groupId") });

export const clientGroupsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/clientgroups/{groupId}/move",
      tags,
      summary: "Move a client group to another shard, online (internal clients)",
      description:
        "Copies the group's rows, catches up what its clients change meanwhile, and switches: their writes answer 503 `group_moving` for the switch only (milliseconds to seconds). Answers when the group is on its new shard; the old one keeps its rows, refusing writes, until `/confirm`.",
      request: { params: groupParams, body: jsonBody(MoveGroup) },
      response: envelope(GroupMove),
    }),
    async (c) =>
      c.json(
        ok(await moveClientGroup(serviceContext(c), { groupId: c.req.valid("param").groupId, ...c.req.valid("json") })),
        200,
      ),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/clientgroups/{groupId}/move/confirm",
      tags,
      summary: "Drop what the group's old shards still hold of it (internal clients)",
      description:
        "Call it 10 seconds or more after the move answered: no Worker routes the group by an older read then.",
      request: { params: groupParams },
      response: envelope(ConfirmedMove),
    }),
    async (c) => {
      const { groupId } = c.req.valid("param");
      return c.json(ok({ groupId, deleted: await confirmGroupMove(serviceContext(c), groupId) }), 200);
    },
  );
