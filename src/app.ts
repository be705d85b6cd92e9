import { bodyLimit } from "hono/body-limit";
import type { ExtractSchema } from "hono/types";
import { withExamples } from "./lib/openapiExamples";
import { dispatchAfterWrites } from "./middleware/afterWrites";
import { authenticate } from "./middleware/auth";
import { bracketQuery } from "./middleware/bracketQuery";
import { d1Session } from "./middleware/d1Session";
import { BODY_TOO_LARGE, onError, onNotFound } from "./middleware/errors";
import { idempotency } from "./middleware/idempotency";
import { ipRateLimit, rateLimit } from "./middleware/rateLimit";
import { requestContext } from "./middleware/requestContext";
import { activationRouter } from "./routes/activation";
import { adSettingsRouter } from "./routes/adSettings";
import { adsRouter } from "./routes/ads";
import { bidsRouter } from "./routes/bids";
import { catalogueRouter } from "./routes/catalogue";
import { clientRouter } from "./routes/client";
import { contactsRouter } from "./routes/contacts";
import { eventsRouter } from "./routes/events";
import { featuresRouter } from "./routes/features";
import { foldersRouter } from "./routes/folders";
import { imagesRouter } from "./routes/images";
import { jobsRouter } from "./routes/jobs";
import { loginLinksRouter } from "./routes/loginLinks";
import { manufacturersRouter } from "./routes/manufacturers";
import { mediaRouter } from "./routes/media";
import { oauthPublicRouter, oauthRouter } from "./routes/oauth";
import { BASE_PATH, createRouter } from "./routes/openapi";
import { publishRouter } from "./routes/publish";
import { statisticsRouter } from "./routes/statistics";
import { statusRouter } from "./routes/status";
import { systemRouter } from "./routes/system";
import { tasksRouter } from "./routes/tasks";
import { userAdSettingsRouter } from "./routes/userAdSettings";
import { userSettingsRouter } from "./routes/userSettings";
import { usersRouter } from "./routes/users";
import { installZodMessages } from "./routes/validation";
import { walletRouter } from "./routes/wallet";
import { registerWebhookPayloads, webhooksRouter } from "./routes/webhooks";

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
  // The document is built once per isolate (it takes ~100 ms); only its server follows the request.
  let document: ReturnType<typeof openApiDocument> | undefined;
  app.get(`${BASE_PATH}/openapi.json`, (c) => {
    document ??= openApiDocument(app);
    return c.json({ ...document, servers: [{ url: new URL(c.req.url).origin }] });
  });
  app.route("/", mediaRouter);
  app.route("/", oauthPublicRouter);

  app.use(`${BASE_PATH}/*`, d1Session, authenticate, rateLimit, bracketQuery);
  app.use(
    `${BASE_PATH}/*`,
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw BODY_TOO_LARGE();
      },
    }),
  );
  app.use(`${BASE_PATH}/*`, idempotency, dispatchAfterWrites);
  // The resource routers, each mounted by name behind authentication and rate limiting.
  app
    .route(BASE_PATH, clientRouter)
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
    .route(BASE_PATH, tasksRouter);

  registerWebhookPayloads(app.openAPIRegistry);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "The API key of the client: `Authorization: Bearer <key>`",
  });
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
  | typeof systemRouter
>;

/** The OpenAPI tags, in the reference's order. */
const TAG_DESCRIPTIONS = {
  System: "Health and readiness",
  Client: "The calling API client",
  Users: "The platform's users (sellers) of a client",
  "User activation": "Activation tokens of new users",
  "Login link": "One-time login links to the website",
  "User settings": "A user's settings: wallet, limits, defaults",
  "User ad settings": "A user's header, footer and contact choice per portal",
  Contacts: "Contact persons of a user",
  Folders: "Folders that group a user's ads",
  Ads: "Ads: create, change, search",
  "Ad settings": "An ad's settings per portal",
  Images: "An ad's images, processed by jobs",
  Catalogue: "Groups, categories, attributes and prices of the marketplaces",
  Manufacturers: "Manufacturer records (GPSR) of a user",
  "Portal connection": "OAuth connection of a user to a marketplace",
  Publish: "Publishing ads to the portals (queued, paid when queued)",
  Status: "Where each ad stands on each portal",
  Jobs: "The queued work behind publish and feature calls",
  Features: "Paid promotions of published ads",
  Wallet: "A user's wallet: balance and entries",
  Bids: "Bids received on the marketplaces",
  Statistics: "Views and other statistics from the marketplaces",
  Tasks: "Scheduled bump-ups and other tasks",
  Events: "The event feed",
  Webhooks: "Signed webhook deliveries of events",
} as const;

export function openApiDocument(app: App) {
  const document = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Classified Advertisement Management API",
      version: "1.0.0",
      description:
        "Manage users of an advertising platform and their ads, and publish them asynchronously to portal_a, portal_b and the website. Every answer is the envelope `{result, errors, data}`; error answers add `errorDetails` with a stable code per message.",
      license: { name: "Proprietary: all rights reserved", url: "https://www.example.com/terms" },
    },
    // The served document names its own origin instead (see the /openapi.json route).
    servers: [{ url: "/", description: "The deployment serving this document" }],
    tags: Object.entries(TAG_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
  });
  return withExamples(document);
}

export const app = createApp();
