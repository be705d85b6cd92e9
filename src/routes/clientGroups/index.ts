import { z } from "@hono/zod-openapi";
import { ok } from "../../lib/envelope";
import { pathId } from "../../lib/fields";
import {
  AbandonedMove,
  abandonGroupMove,
  ConfirmedMove,
  confirmGroupMove,
  GroupMove,
  groupMoveState,
  MoveGroup,
  moveClientGroup,
} from "../../services/accounts";
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
        "Copies the group's rows, catches up what its clients change meanwhile, and switches: their writes answer 503 `group_moving` for the switch only (milliseconds to seconds). Runs the move for up to 20 seconds and answers where it stands: `moved` once the group is on its new shard, or `moving`, and the cron runs it on each minute (as does this call again, to the same shard). Whatever stops a move, it resumes where it was, and `blocker` says what stopped the last runner. The old shard keeps the group's rows, refusing writes, until `/confirm`. A group whose last move switched is moved again (back, or on) once that move can be confirmed: this call confirms it first. A group moving to another shard is refused with 409 `move_under_way`.",
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
      method: "get",
      path: "/clientgroups/{groupId}/move",
      tags,
      summary: "Where a client group's move stands (internal clients)",
      description: "Under way, or on the new shard until the move is confirmed.",
      request: { params: groupParams },
      response: envelope(GroupMove),
    }),
    async (c) => c.json(ok(await groupMoveState(serviceContext(c), c.req.valid("param").groupId)), 200),
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/clientgroups/{groupId}/move",
      tags,
      summary: "Abandon a client group's move before its switch (internal clients)",
      description:
        "At any step before the switch (a runner that died in it included): the group stays on its shard, which takes its writes again at once, and the shard it was going to drops what the move copied. A move that switched is confirmed, or reversed by moving the group back (409 `move_under_way` says so).",
      request: { params: groupParams },
      response: envelope(AbandonedMove),
    }),
    async (c) => c.json(ok(await abandonGroupMove(serviceContext(c), c.req.valid("param").groupId)), 200),
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
