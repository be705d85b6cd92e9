import { z } from "@hono/zod-openapi";
import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../../env";
import { ok } from "../../lib/envelope";
import { DomainError } from "../../lib/errors";
import { pathId, queryBool } from "../../lib/fields";
import { PAGE_HEADERS } from "../../lib/htmlPage";
import { type Marketplace, MarketplaceEnum } from "../../lib/vocabulary";
import { taggedRead } from "../../middleware/responseCache";
import { SIMULATOR_ORIGIN_HEADER } from "../../portals/config";
import { marketplaceSimulator, PortalGateway, SIMULATOR_ORIGIN } from "../../portals/gateway";
import {
  CompleteConnection,
  ConnectionStart,
  completeConnection,
  disconnect,
  finishConsentAtCallback,
  getConnection,
  PortalConnection,
  StartConnection,
  startConnection,
} from "../../services/publishing";
import { userRevision } from "../../services/shared";
import { serviceContext } from "../context";
import { apiRoute, createRouter, envelope, jsonBody } from "../openapi";
import { landingPage } from "./landing";

const tags = ["Portal connection"];
const params = z.object({
  userId: pathId("userId"),
  portal: MarketplaceEnum.openapi({ param: { name: "portal", in: "path" } }),
});

const publicOrigin = (url: string) => new URL(url).origin;

/**
 * Starting consent takes an optional body: the contract's call sends none, and a client that sends
 * `Content-Type: application/json` with an empty body is making that same call. The body then reaches
 * validation as absent. It is read through Hono's body cache, never from the raw request: an earlier
 * middleware (the Idempotency-Key's fingerprint) may already have read the stream.
 */
const emptyBodyIsNone: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "POST" && !(await c.req.text()).trim()) {
    const headers = new Headers(c.req.raw.headers);
    headers.delete("Content-Type");
    c.req.raw = new Request(c.req.raw.url, { method: "POST", headers });
  }
  await next();
};

const connections = createRouter();
connections.use("/oauth/:userId/:portal", emptyBodyIsNone);

export const oauthRouter = connections
  .openapi(
    apiRoute({
      method: "get",
      path: "/oauth/{userId}/{portal}",
      entityTag: true,
      tags,
      summary: "Whether the user is connected to the portal",
      request: { params, query: z.object({ useCache: queryBool().optional() }) },
      response: envelope(PortalConnection),
    }),
    async (c) => {
      const { userId, portal } = c.req.valid("param");
      return c.json(
        await taggedRead(c, c.req.valid("query").useCache, userRevision(userId), async () =>
          ok(await getConnection(serviceContext(c), { userId, portal })),
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "post",
      path: "/oauth/{userId}/{portal}",
      tags,
      summary: "Start connecting: answers the URL to send the user to; earlier tokens are revoked",
      description:
        "With `returnUrl` (on an origin the client registered) the user comes back there after consent, connected or with the error; without a body the user lands on the API's page, which shows the code for PUT.",
      // Optional: the contract's call sends no body.
      request: { params, body: { ...jsonBody(StartConnection), required: false } },
      response: envelope(ConnectionStart),
    }),
    async (c) => {
      const body = (c.req.valid("json") ?? {}) as z.infer<typeof StartConnection>;
      return c.json(
        ok(
          await startConnection(serviceContext(c), {
            ...c.req.valid("param"),
            returnUrl: body.returnUrl,
            publicOrigin: publicOrigin(c.req.url),
          }),
        ),
        200,
      );
    },
  )
  .openapi(
    apiRoute({
      method: "put",
      path: "/oauth/{userId}/{portal}",
      tags,
      summary: "Finish connecting with the code (and state) the portal returned",
      request: {
        params,
        body: jsonBody(CompleteConnection),
      },
      response: envelope(PortalConnection),
    }),
    async (c) => {
      const input = { ...c.req.valid("param"), ...c.req.valid("json"), publicOrigin: publicOrigin(c.req.url) };
      return c.json(ok(await completeConnection(serviceContext(c), input)), 200);
    },
  )
  .openapi(
    apiRoute({
      method: "delete",
      path: "/oauth/{userId}/{portal}",
      entityTag: true,
      tags,
      summary: "Disconnect: the tokens are revoked",
      request: { params },
      response: envelope(PortalConnection),
    }),
    async (c) => {
      const { userId, portal } = c.req.valid("param");
      return c.json(ok(await disconnect(serviceContext(c), { userId, portal })), 200);
    },
  );

const isPortal = (value: string): value is Marketplace => MarketplaceEnum.safeParse(value).success;

/**
 * Public (keyless) routes of the OAuth flow: the page the portal sends the user back to, which shows
 * the code and state to hand to PUT /oauth/<userId>/<portal>/, and the marketplace simulator's pages
 * (forwarded to its Worker, so a browser sees them on this origin).
 */
export const oauthPublicRouter = new Hono<AppEnv>()
  .get("/oauth/callback/:portal", async (c) => {
    const landing = {
      portal: c.req.param("portal"),
      code: c.req.query("code") ?? "",
      state: c.req.query("state") ?? "",
      error: c.req.query("error_description") ?? c.req.query("error") ?? "",
    };
    // A consent started with a returnUrl is finished here and the user sent back to the client.
    if (isPortal(landing.portal)) {
      const back = await finishConsentAtCallback(c.env, {
        ...landing,
        portal: landing.portal,
        publicOrigin: publicOrigin(c.req.url),
        requestId: c.get("requestId"),
      });
      if (back) return c.redirect(back.toString(), 302);
    }
    // A browser gets a page; scripts keep the JSON envelope.
    if (c.req.header("Accept")?.includes("text/html")) return c.html(landingPage(landing), 200, PAGE_HEADERS);
    return c.json(ok(landing));
  })
  .all("/simulator/:portal/*", async (c) => {
    const portal = c.req.param("portal");
    if (!isPortal(portal) || !new PortalGateway(c.env, portal).usesSimulator || !c.env.MARKETPLACE)
      throw DomainError.of("portal_not_found", "no simulator for this portal");
    const url = new URL(c.req.url);
    const forwarded = new Request(
      `${SIMULATOR_ORIGIN}${url.pathname.replace(/^\/simulator/, "")}${url.search}`,
      c.req.raw,
    );
    // The origin the simulator is served from: its registered redirect URI is our callback there.
    forwarded.headers.set(SIMULATOR_ORIGIN_HEADER, url.origin);
    return marketplaceSimulator(c.env).fetch(forwarded);
  });
