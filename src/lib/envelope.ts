import type { ErrorDetail } from "./errors";

/** The spec's response envelope. Every answer of the API, success or failure, has this shape. */
export interface Envelope<T> {
  result: boolean;
  errors: string[];
  data: T;
}

export interface ListEnvelope<T> extends Envelope<T[]> {
  fromCache: boolean;
  totalItems: number;
  totalInSet: number;
  page: number;
  itemsPerPage: number;
  speed: number;
  nextCursor?: string;
}

export const ok = <T>(data: T): Envelope<T> => ({ result: true, errors: [], data });

/** A failed answer: the spec's `errors` (messages), and beside them the same problems with their codes. */
export const failure = (details: ErrorDetail[], data: unknown = []) => ({
  result: false as const,
  errors: details.map((d) => d.message),
  data,
  errorDetails: details,
});

export interface Page<T> {
  items: T[];
  totalItems: number;
  page: number;
  itemsPerPage: number;
  /** Where the next page starts, when the list hands out cursors and there is one. */
  nextCursor?: string | undefined;
}

/** One place that turns a page of results into the list envelope; `startedAt` is the request start (ms). */
export const list = <T>(page: Page<T>, startedAt: number, fromCache = false): ListEnvelope<T> => ({
  result: true,
  errors: [],
  data: page.items,
  fromCache,
  totalItems: page.totalItems,
  totalInSet: page.items.length,
  page: page.page,
  itemsPerPage: page.itemsPerPage,
  speed: Math.max(0, (Date.now() - startedAt) / 1000),
  ...(page.nextCursor && { nextCursor: page.nextCursor }),
});
