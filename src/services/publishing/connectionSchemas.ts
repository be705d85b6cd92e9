import { z } from "@hono/zod-openapi";
import { rowId } from "../../lib/fields";
import { MarketplaceEnum } from "../../lib/vocabulary";

/** A connection's and a consent's response shapes. */
export const PortalConnection = z
  .object({
    userId: rowId(),
    portal: MarketplaceEnum,
    status: z.boolean().openapi({ description: "connected" }),
    externalUserId: z.number().int().openapi({
      description:
        "The user's account at the marketplace (0 when not connected): what the marketplace's own records name; `npm run marketplace -- <userId>` shows its listings under npm run dev",
    }),
    accessToken: z.string().openapi({ description: "Masked: the token itself is never shown" }),
    accessTokenExpire: z.string().openapi({ description: "Empty when none" }),
    refreshToken: z.string().openapi({ description: "Masked" }),
    email: z.string(),
    scope: z.array(z.string()).openapi({ description: "OAuth scopes the marketplace granted" }),
  })
  .openapi("PortalConnection");
/** Where to send the user to grant access (the marketplace's consent page). */
export const ConnectionStart = z.object({ redirect: z.string() });

/** POST /oauth/<userId>/<portal>/'s optional body: where the user goes once the consent is done. */
export const StartConnection = z
  .object({
    returnUrl: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .optional()
      .openapi({
        description:
          "After consent the user's browser is sent here, with `status=connected` or `status=error&error=<code>`, `portal` and `userId` added to its query; the API exchanges the code itself. Its origin must be one the client registered (PATCH /client/ `returnOrigins`; a rule across fields: docs/validation.md). Without it, the user lands on the API's page that shows the code for PUT.",
      }),
  })
  .openapi("StartConnection");

export const CompleteConnection = z
  .object({
    code: z.string().min(1).max(512),
    state: z.string().min(1).max(512).openapi({ description: "The state the portal returned with the code" }),
  })
  .openapi("CompleteConnection");
