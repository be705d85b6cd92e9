import type { Context } from "hono";
import { routePath } from "hono/route";
import { CLIENTS, type NamedId, type ShardReason, shardsOfIds } from "../db/shards";
import type { AppEnv } from "../env";
import { DomainError } from "../lib/errors";
import { idOfText } from "../lib/fields";

/** The fields whose ids name a row of one client group, and the table each one's ids are issued for. */
const ROUTING_FIELDS = new Map<string, string>(
  Object.entries({
    userId: "users",
    mainUserId: "users",
    walletUserId: "users",
    payerId: "users",
    adId: "ads",
    contactId: "contacts",
    folderId: "folders",
    manufacturerId: "manufacturers",
    taskId: "tasks",
    queueItemId: "queue_items",
    jobId: "queue_items",
    bidId: "bids",
    entryId: "wallet_entries",
    webhookId: "webhook_endpoints",
    syncId: "syncs",
    feedId: "feeds",
    // A user an internal client creates for, or gives to, another client lives with that client's group.
    clientId: CLIENTS,
  }),
);

/** The positive integers a value holds: a number, a numeric string, or a list of them. */
const idsIn = (value: unknown): number[] =>
  (Array.isArray(value) ? value : [value]).flatMap((item) => {
    const id = typeof item === "string" ? idOfText(item) : item;
    return typeof id === "number" && Number.isSafeInteger(id) && id > 0 ? [id] : [];
  });

const named = (field: string, value: unknown): NamedId[] => {
  const kind = ROUTING_FIELDS.get(field);
  return kind ? idsIn(value).map((id) => ({ field, kind, id })) : [];
};

/** The routing ids of a JSON body: its fields, and those of the objects in its lists (a batch's items). */
function idsOfBody(body: unknown, depth = 0): NamedId[] {
  if (Array.isArray(body)) return depth < 2 ? body.flatMap((item) => idsOfBody(item, depth + 1)) : [];
  if (!body || typeof body !== "object") return [];
  return Object.entries(body).flatMap(([field, value]) =>
    ROUTING_FIELDS.has(field)
      ? named(field, value)
      : depth < 2 && typeof value === "object"
        ? idsOfBody(value, depth + 1)
        : [],
  );
}

/** The ids a request names: in its path (by its route's pattern), its query and its JSON body. */
async function idsOfRequest(c: Context<AppEnv>): Promise<NamedId[]> {
  const pattern = routePath(c, -1).split("/");
  const path = new URL(c.req.url).pathname.split("/");
  const fromPath = pattern.flatMap((segment, at) =>
    segment.startsWith(":") ? named(segment.slice(1).replace(/\{.*$/, ""), decodeURIComponent(path[at] ?? "")) : [],
  );
  // Values as the bracket parser left them (`bracketQuery`): text ("1,2"), a list (`adId[]`) or an object.
  const fromQuery = Object.entries(c.req.queries() as Record<string, unknown[]>).flatMap(([field, values]) =>
    named(
      field,
      (Array.isArray(values) ? values : [values]).flatMap((value) =>
        typeof value === "string" ? value.split(",") : value,
      ),
    ),
  );
  const json = c.req.method !== "GET" && /^application\/([a-z.-]+\+)?json/i.test(c.req.header("Content-Type") ?? "");
  // A body that is not JSON is the validator's to refuse.
  const body = json ? await c.req.json().catch(() => undefined) : undefined;
  return [...fromPath, ...fromQuery, ...idsOfBody(body)];
}

/**
 * The shard a request runs on: its client's; for an internal client (which acts on every client's
 * users), the shard of the rows its ids name, found by their blocks without asking any shard. Ids of
 * rows on two shards are of two client groups, which no call ties together: 409 `client_group_mismatch`.
 * A request that names no id of a known block runs on the client's own shard; an internal client's lists
 * then span every shard (`spansShards`, src/routes/acrossShards.ts).
 */
export async function shardOfRequest(
  c: Context<AppEnv>,
): Promise<{ shard: number; why: ShardReason; spansShards: boolean }> {
  const client = c.var.client;
  const own = { shard: client.shard, why: "the caller's client" as const, spansShards: client.internal };
  if (!client.internal) return own;
  const ids = await idsOfRequest(c);
  if (ids.length === 0) return own;
  const shards = await shardsOfIds(c.env, ids);
  const placed = ids.flatMap((id, at) => {
    const shard = shards[at]?.shard;
    return shard === undefined ? [] : [{ ...id, shard }];
  });
  const [first] = placed;
  // Ids of no block name no row: the request finds nothing on the client's own shard.
  if (!first) return { ...own, spansShards: false };
  const elsewhere = placed.find((id) => id.shard !== first.shard);
  if (elsewhere)
    throw DomainError.of(
      "client_group_mismatch",
      `${elsewhere.field}: ${elsewhere.id} is in another client group than ${first.field} ${first.id}; they must be in the same one`,
    );
  return { shard: first.shard, why: "the ids the request names", spansShards: false };
}
