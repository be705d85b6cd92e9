import { bodyLimit } from "hono/body-limit";
import type { ExtractSchema } from "hono/types";
import { BASE_PATH, readsStock, streamsLines } from "./lib/calls";
import { dispatchAfterWrites } from "./middleware/afterWrites";
import { authenticate } from "./middleware/auth";
import { bracketQuery } from "./middleware/bracketQuery";
import { d1Bookmark, d1Session } from "./middleware/d1Session";
import { BODY_TOO_LARGE, onError, onNotFound } from "./middleware/errors";
import { idempotency } from "./middleware/idempotency";
import { ipRateLimit, rateLimit } from "./middleware/rateLimit";
import { requestContext } from "./middleware/requestContext";
import { activationRouter } from "./routes/activation";
import { adSettingsRouter } from "./routes/adSettings";
import { adsRouter } from "./routes/ads";
import { archiveRouter } from "./routes/archive";
import { bidsRouter } from "./routes/bids";
import { catalogueRouter } from "./routes/catalogue";
import { clientRouter } from "./routes/client";
import { clientGroupsRouter } from "./routes/clientGroups";
import { contactsRouter } from "./routes/contacts";
import { eventsRouter } from "./routes/events";
import { featuresRouter } from "./routes/features";
import { feedsRouter } from "./routes/feeds";
import { foldersRouter } from "./routes/folders";
import { imagesRouter } from "./routes/images";
import { jobsRouter } from "./routes/jobs";
import { loginLinksRouter } from "./routes/loginLinks";
import { manufacturersRouter } from "./routes/manufacturers";
import { mediaRouter } from "./routes/media";
import { oauthPublicRouter, oauthRouter } from "./routes/oauth";
import { createRouter } from "./routes/openapi";
import { publishRouter } from "./routes/publish";
import { statisticsRouter } from "./routes/statistics";
import { statusRouter } from "./routes/status";
import { syncsRouter } from "./routes/syncs";
import { systemRouter } from "./routes/system";
import { tasksRouter } from "./routes/tasks";
import { userAdSettingsRouter } from "./routes/userAdSettings";
import { userSettingsRouter } from "./routes/userSettings";
import { usersRouter } from "./routes/users";
import { installZodMessages } from "./routes/validation";
import { walletRouter } from "./routes/wallet";
import { webhooksRouter } from "./routes/webhooks";

export const MAX_BODY_BYTES = 1024 * 1024;

installZodMessages();

export function createApp() {
  const app = createRouter();
  app.onError(onError);
  app.notFound(onNotFound(() => app.routes));
  app.use("*", requestContext);

  // Public: no key. Health and the documents are cheap and cacheable; the rest is limited per IP.
  app.use("/media/*", ipRateLimit);
  app.use("/oauth/callback/*", ipRateLimit);
  app.use("/simulator/*", ipRateLimit);
  app.route(BASE_PATH, systemRouter);
  app.route("/", mediaRouter);
  app.route("/", oauthPublicRouter);

  app.use(`${BASE_PATH}/*`, d1Bookmark, authenticate, rateLimit, bracketQuery);
  const limitBody = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: () => {
      throw BODY_TOO_LARGE();
    },
  });
  // A stock sent as NDJSON (to a sync or its dry run) is read line by line as it arrives, within the
  // sync's own limits (20,000 items, 256 KiB a line).
  app.use(`${BASE_PATH}/*`, (c, next) =>
    readsStock(c.req.method, c.req.path) && streamsLines(c.req.header("Content-Type")) ? next() : limitBody(c, next),
  );
  // The D1 session on the request's shard, which an internal client's request names by its ids (body included).
  app.use(`${BASE_PATH}/*`, d1Session, idempotency, dispatchAfterWrites);
  // The resource routers, each mounted by name behind authentication and rate limiting.
  app
    .route(BASE_PATH, clientRouter)
    .route(BASE_PATH, clientGroupsRouter)
    .route(BASE_PATH, usersRouter)
    .route(BASE_PATH, contactsRouter)
    .route(BASE_PATH, foldersRouter)
    .route(BASE_PATH, userSettingsRouter)
    .route(BASE_PATH, userAdSettingsRouter)
    .route(BASE_PATH, activationRouter)
    .route(BASE_PATH, loginLinksRouter)
    .route(BASE_PATH, adsRouter)
    .route(BASE_PATH, adSettingsRouter)
    .route(BASE_PATH, catalogueRouter)
    .route(BASE_PATH, manufacturersRouter)
    .route(BASE_PATH, imagesRouter)
    .route(BASE_PATH, oauthRouter)
    .route(BASE_PATH, publishRouter)
    .route(BASE_PATH, statusRouter)
    .route(BASE_PATH, jobsRouter)
    .route(BASE_PATH, eventsRouter)
    .route(BASE_PATH, webhooksRouter)
    .route(BASE_PATH, featuresRouter)
    .route(BASE_PATH, walletRouter)
    .route(BASE_PATH, bidsRouter)
    .route(BASE_PATH, statisticsRouter)
    .route(BASE_PATH, tasksRouter)
    .route(BASE_PATH, archiveRouter)
    .route(BASE_PATH, syncsRouter)
    .route(BASE_PATH, feedsRouter);

  return app;
}

export type App = ReturnType<typeof createApp>;

/** Every route of the API under BASE_PATH: path pattern → method → input and answer (for typed callers). */
export type ApiSchema = ExtractSchema<
  | typeof clientRouter
  | typeof usersRouter
  | typeof contactsRouter
  | typeof foldersRouter
  | typeof userSettingsRouter
  | typeof userAdSettingsRouter
  | typeof activationRouter
  | typeof loginLinksRouter
  | typeof adsRouter
  | typeof adSettingsRouter
  | typeof catalogueRouter
  | typeof manufacturersRouter
  | typeof imagesRouter
  | typeof oauthRouter
  | typeof publishRouter
  | typeof statusRouter
  | typeof jobsRouter
  | typeof eventsRouter
  | typeof webhooksRouter
  | typeof featuresRouter
  | typeof walletRouter
  | typeof bidsRouter
  | typeof statisticsRouter
  | typeof tasksRouter
  | typeof archiveRouter
  | typeof syncsRouter
  | typeof feedsRouter
  | typeof systemRouter
>;

export const app = createApp();
