import { list, ok } from "../../lib/envelope";
import { priceByWork } from "../../middleware/rateLimit";
import {
  CreateFeed,
  createFeed,
  deleteFeed,
  Feed,
  FeedIdParam,
  FeedPreview,
  FeedsQuery,
  getFeed,
  listFeeds,
  previewFeed,
  runFeedNow,
  UpdateFeed,
  updateFeed,
} from "../../services/feeds";
import { CHUNK_ITEMS, SyncPlan } from "../../services/syncs";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody, listEnvelope, operationError } from "../openapi";
import { requireBodyMatchesPath } from "../validation";

const tags = ["Feeds"];

export const feedsRouter = createRouter()
  .openapi(
    apiRoute({
      method: "post",
      path: "/feeds/preview",
      tags,
      summary:
        "Fetch a feed's URL once and answer the dry run of its stock (what a sync would create, update, end and charge); changes nothing",
      request: { body: jsonBody(FeedPreview) },
      response: envelope(SyncPlan),
      errors: {
        422: operationError(
          "The feed could not be read: its HTTP status, no answer in time, too large, or not parseable at a line",
          "feed_unreadable",
          "url: HTTP 503: the feed answered 503",
        ),
      },
    }),
    async (c) => {
      const plan = await previewFeed(serviceContext(c), c.req.valid("json"));
      // Priced by its work, as every dry run: a token per step's worth of items.
      priceByWork(c, Math.ceil(plan.items / CHUNK_ITEMS));
      return c.json(ok(plan), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/feeds",
      tags,
      summary:
        "Register a user's feed: a URL serving the user's stock (NDJSON, JSON or CSV), fetched on its schedule and applied as a sync when it changed",
      request: { body: jsonBody(CreateFeed) },
      response: envelope(Feed),
    }),
    async (c) => c.json(ok(await createFeed(serviceContext(c), c.req.valid("json"))), 200),
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/feeds",
      tags,
      summary: "A user's feeds, newest first",
      request: { query: FeedsQuery },
      response: listEnvelope(Feed),
    }),
    async (c) => {
      const startedAt = Date.now();
      return c.json(list(await listFeeds(serviceContext(c), c.req.valid("query")), startedAt), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "get",
      path: "/feeds/{feedId}",
      tags,
      summary:
        "A feed: its settings, its next fetch and the last one (status, bytes, items, the sync it made, the failure)",
      request: { params: FeedIdParam },
      response: envelope(Feed),
    }),
    async (c) => c.json(ok(await getFeed(serviceContext(c), c.req.valid("param").feedId)), 200),
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/feeds/{feedId}",
      tags,
      summary: "Change a feed (the fields given); `paused: false` resumes a paused one",
      request: { params: FeedIdParam, body: jsonBody(UpdateFeed) },
      response: envelope(Feed),
    }),
    async (c) => {
      const { feedId } = c.req.valid("param");
      const body = c.req.valid("json");
      requireBodyMatchesPath(body, { feedId });
      return c.json(ok(await updateFeed(serviceContext(c), { ...body, feedId })), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/feeds/{feedId}",
      tags,
      summary: "Remove a feed; answers it as it was",
      request: { params: FeedIdParam },
      response: envelope(Feed),
    }),
    async (c) => c.json(ok(await deleteFeed(serviceContext(c), c.req.valid("param").feedId)), 200),
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/feeds/{feedId}/run",
      tags,
      summary:
        "Fetch a feed now (in the client's lanes, as the schedule would); `queued` says a fetch waits or runs. Follow it at GET /feeds/<feedId>",
      request: { params: FeedIdParam },
      response: envelope(Feed),
    }),
    async (c) => c.json(ok(await runFeedNow(serviceContext(c), c.req.valid("param").feedId)), 200),
  );
