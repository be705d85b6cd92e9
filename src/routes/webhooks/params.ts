import { z } from "@hono/zod-openapi";
import { pathId } from "../../lib/fields";

/** The document's tag of every webhook operation. */
export const tags = ["Webhooks"];

export const webhookParams = z.object({ webhookId: pathId("webhookId") });
