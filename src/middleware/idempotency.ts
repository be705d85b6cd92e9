import type { MiddlewareHandler } from "hono";
import { getDb } from "../db/client";
import { onShard } from "../db/shards";
import type { AppEnv } from "../env";
import { onlyReads, startsSync } from "../lib/calls";
import { sha256Hex } from "../lib/crypto";
import { DomainError, detail, validationFailed } from "../lib/errors";
import {
  claimKey,
  IDEMPOTENCY_LOCK_MS,
  keepsResponse,
  releaseKey,
  renewKey,
  storeResponse,
} from "../services/operations";
import { requestShard } from "./d1Session";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Headers of the first response that a replay repeats (Job-Ids: a retried publish still names its jobs). */
const REPLAYED_HEADERS = ["content-type", "location", "job-ids"];

/**
 * `Idempotency-Key` (IETF httpapi draft, as Stripe has it) on every write: per client, the first response
 * (status, body, Content-Type and Location) is kept 24 hours and replayed with `Idempotent-Replayed:
 * true`; the same key with another request returns 422, and while the first is still running 409 (its
 * lock is renewed until it answers, however long it takes). A response that depends on changing state,
 * or of 500 or more, is not kept (`keepsResponse`): the key is freed so that the client can try again.
 */
export const idempotency: MiddlewareHandler<AppEnv> = async (c, next) => {
  const key = c.req.header("Idempotency-Key");
  // A call that only reads has nothing to apply once: its key is not kept (nor checked). A sync keeps its
  // key with the sync it starts, and its stock is never read whole (src/services/syncs).
  if (
    key === undefined ||
    !WRITES.has(c.req.method) ||
    onlyReads(c.req.method, c.req.path) ||
    startsSync(c.req.method, c.req.path)
  )
    return next();
  if (key.trim().length === 0 || key.length > 255)
    throw validationFailed("Idempotency-Key: must be 1-255 characters, not only spaces");

  const url = new URL(c.req.url);
  const path = url.pathname.replace(/\/+$/, "");
  const fingerprint = await sha256Hex(`${c.req.method} ${path}${url.search}\n${await c.req.text()}`);
  // A client's keys live on its own group's shard, whichever shard the request writes: one key is one
  // request across shards, and the keys travel with the client's group when it moves (src/db/moves/).
  const client = c.get("client");
  const clientId = client.id;
  const here = requestShard(c);
  const db = getDb(
    client.shard === here.shard.number ? here.shard.d1 : onShard(c.env, client.shard, "the caller's client").shard.d1,
  );
  const claim = await claimKey(db, c.env, clientId, key, fingerprint, new Date());
  switch (claim.kind) {
    case "mismatch":
      throw DomainError.of("idempotency_conflict", "Idempotency-Key: was used with a different request");
    case "running":
      throw new DomainError(
        detail("idempotency_in_progress", "Idempotency-Key: a request with this key is still running"),
        {
          retryAfterSeconds: 1,
        },
      );
    case "replay":
      return new Response(claim.answer.body, {
        status: claim.answer.status,
        headers: { ...claim.answer.headers, "Idempotent-Replayed": "true" },
      });
    case "claimed":
      break;
  }

  // The lock outlives a slow request: renewed while it runs, so a retry never runs beside it.
  // A renewal that fails is tried again at the next tick; the lock has two more ticks before it lapses.
  const renewal = setInterval(() => renewKey(db, clientId, key, new Date()).catch(() => {}), IDEMPOTENCY_LOCK_MS / 3);
  try {
    await next();
  } finally {
    clearInterval(renewal);
  }
  if (!keepsResponse(c.res.status) || c.get("refusalDependsOnState")) {
    await releaseKey(db, clientId, key);
    return;
  }
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = c.res.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  await storeResponse(db, c.env, clientId, key, { status: c.res.status, headers, body: await c.res.clone().text() });
};
