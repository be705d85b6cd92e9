import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { BASE_PATH } from "../lib/calls";
import { withExamples } from "../lib/openapiExamples";
import { MARKETPLACES } from "../lib/vocabulary";
import { SyncItem, SyncStock } from "../services/syncs";
import { registerWebhookPayloads } from "./webhooks";

/**
 * The OpenAPI document. A production Worker does not build it: `npm run deploy` ships the committed
 * openapi/openapi.json as a static asset at the same path, so its generator, examples and descriptions
 * stay out of the bundle and no isolate spends ~100 ms building it. The development, test and sandbox
 * Worker (src/index.ts) builds it from the routes, which is how `npm run openapi` refreshes the file.
 */

/** The OpenAPI tags, in the reference's order. */
const TAG_DESCRIPTIONS = {
  System: "Health and readiness",
  Client: "The calling API client",
  "Client groups": "Client groups, and moving one to another shard (internal clients)",
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
  Syncs:
    "A user's whole stock in one call: previewed and priced, applied in steps in the client's own lanes, free for what did not change, reported per item (docs/syncing.md)",
  Feeds:
    "A user's stock at the dealer's own URL (NDJSON, JSON or CSV), fetched on a schedule and applied as a sync when it changed (docs/feeds.md)",
  Archive: "Jobs, ledger entries, events and webhook deliveries past their window in the database, by month",
  Bids: "Bids received on the marketplaces",
  Statistics: "Views and other statistics from the marketplaces",
  Tasks: "Scheduled bump-ups and other tasks",
  Events: "The event feed",
  Webhooks: "Signed webhook deliveries of events",
} as const;

/** The document of the app's routes, with the webhook payloads, the bearer scheme and an example everywhere. */
export function openApiDocument(app: OpenAPIHono<AppEnv>) {
  registerWebhookPayloads(app.openAPIRegistry);
  // A stock's items are checked one by one (a refused item is reported, the rest applied), so no route's
  // validator names the item's schema: the document does.
  app.openAPIRegistry.register("SyncItem", SyncItem);
  app.openAPIRegistry.register("SyncStock", SyncStock);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "The API key of the client: `Authorization: Bearer <key>`",
  });
  const document = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Classified Advertisement Management API",
      // Semver of the document: additive changes raise the minor (CHANGELOG.md, docs/versioning.md).
      version: "1.13.0",
      description: `Manage users of an advertising platform and their ads, and publish them asynchronously to ${MARKETPLACES.join(", ")} and the website. Every answer is the envelope \`{result, errors, data}\`; error answers add \`errorDetails\` with a stable code per message.`,
      license: { name: "Proprietary: all rights reserved", url: "https://www.example.com/terms" },
    },
    // The document served by a development Worker names its own origin instead (see `documentResponder`).
    servers: [{ url: "/", description: "The deployment serving this document" }],
    tags: Object.entries(TAG_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
  });
  return withExamples(document);
}

export const DOCUMENT_PATH = `${BASE_PATH}/openapi.json`;

/** GET /rest/v1/openapi.json, built once per isolate; only its server follows the request's origin. */
export function documentResponder(app: OpenAPIHono<AppEnv>): (request: Request) => Response {
  let document: ReturnType<typeof openApiDocument> | undefined;
  return (request) => {
    document ??= openApiDocument(app);
    return Response.json({ ...document, servers: [{ url: new URL(request.url).origin }] });
  };
}
