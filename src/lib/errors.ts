import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * A failure the client should see: HTTP status plus the envelope's `errors`.
 * Thrown anywhere (services, middleware) and rendered by the central error handler.
 */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly messages: string[],
    readonly data: unknown = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(messages.join("; "));
  }
}

export const badRequest = (...messages: string[]) => new ApiError(400, messages);
export const forbidden = (message: string) => new ApiError(403, [message]);
